import { characterCount, fitsCharacters, freeTextProblem, MAX_WEBSITE_CHARS, MIN_PASSWORD_CHARS, USERNAME_PATTERN, USERNAME_RULE } from '@cards/card-rules';
import { InvalidArgumentError, refuseIfProblem } from '@cards/platform';
import { MAX_PASSWORD_LENGTH, type ProfilePatch, type StoredProfileCondition } from './model';

const EMAIL = /^[^\s@"<>()\[\],;:\\]+@[^\s@"<>()\[\],;:\\]+\.[^\s@"<>()\[\],;:\\]+$/;

/**
 * Trimmed, lower-cased and in Unicode NFC, so every spelling of one address (an "ä" typed as one character or as "a"
 * and a combining mark) names one account; InvalidArgumentError when it is not an address. NFC after lower-casing:
 * lower-casing can leave a letter and a combining mark that compose.
 */
export function normalizeEmail(raw: string): string {
  const email = raw.trim().toLowerCase().normalize('NFC');
  // The address pattern refuses whitespace, which leaves NUL, DEL and the C1 controls to this rule.
  refuseIfProblem('email', freeTextProblem(email, 'single-line'));
  if (email.length > 254 || !EMAIL.test(email)) throw new InvalidArgumentError('email: not a valid e-mail address');
  return email;
}

/** A new password: any printable characters (spaces and emoji too), no control characters; logging in compares only. */
export function checkNewPassword(password: string, confirmation: string): void {
  // Characters as people count them: a code point, not a UTF-16 unit (four emoji are four characters, not eight).
  if (characterCount(password) < MIN_PASSWORD_CHARS) throw new InvalidArgumentError(`password: must be at least ${MIN_PASSWORD_CHARS} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new InvalidArgumentError(`password: must be at most ${MAX_PASSWORD_LENGTH} characters`);
  refuseIfProblem('password', freeTextProblem(password, 'single-line'));
  if (password !== confirmation) throw new InvalidArgumentError('password_confirmation: does not match password');
}

const USERNAME = new RegExp(USERNAME_PATTERN);

export function checkUsername(username: string): void {
  if (!USERNAME.test(username)) throw new InvalidArgumentError(`username: ${USERNAME_RULE}`);
}

/** The website as stored: trimmed, an http(s) URL of at most MAX_WEBSITE_CHARS characters; InvalidArgumentError otherwise. */
export function normalizeWebsite(raw: string): string {
  const website = raw.trim();
  // URL parsing drops tabs and line breaks and encodes spaces and controls, so it would pass them through into the profile.
  refuseIfProblem('website', freeTextProblem(website, 'single-line'));
  if (/\s/.test(website)) throw new InvalidArgumentError('website: must not contain spaces');
  let url: URL;
  try {
    url = new URL(website);
  } catch {
    throw new InvalidArgumentError('website: not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('website: must be an http or https URL');
  if (!fitsCharacters(website, MAX_WEBSITE_CHARS)) throw new InvalidArgumentError(`website: must be at most ${MAX_WEBSITE_CHARS} characters`);
  return website;
}

export const EMAIL_HIDDEN_WITHOUT_USERNAME = 'visible_email: can be false only when a username is set';

/**
 * The rule of the interface, the e-mail may be hidden only behind a username, for a patch: InvalidArgumentError when
 * the patch breaks it by itself, else what the stored profile must hold when the patch is written.
 */
export function emailVisibilityCondition(patch: ProfilePatch): StoredProfileCondition {
  if (patch.visibleEmail === true || (patch.username !== undefined && patch.username !== null)) return 'none';
  if (patch.visibleEmail === false) {
    if (patch.username === null) throw new InvalidArgumentError(EMAIL_HIDDEN_WITHOUT_USERNAME);
    return 'has-username';
  }
  return patch.username === null ? 'email-visible' : 'none';
}
