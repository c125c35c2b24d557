import { domainToASCII, domainToUnicode } from 'node:url';
import { characterCount, DOMAIN_DOT, emailCharacterProblem, emailKey, fitsCharacters, freeTextProblem, idnHostProblem, linkProblem, linkProblemText, MAX_WEBSITE_CHARS, MIN_PASSWORD_CHARS, usernameProblem } from '@cards/card-rules';
import { InvalidArgumentError, refuseIfProblem } from '@cards/platform';
import { MAX_PASSWORD_LENGTH, type ProfilePatch, type StoredProfileCondition } from './model';

const EMAIL = /^[^\s@"<>()\[\],;:\\]+@[^\s@"<>()\[\],;:\\]+\.[^\s@"<>()\[\],;:\\]+$/;

/**
 * The address's emailKey (card-rules, shared with the gateway's per-address rate limit): trimmed, lower-cased and in
 * Unicode NFC, its domain in the ASCII form of IDNA (UTS #46, as node's url.domainToASCII and every browser write it:
 * "x@exämple.com" is "x@xn--exmple-cua.com", the address its mail goes to), one final dot dropped, so every spelling
 * of one address (an "ä" typed as one character, as "a" and a combining mark, or in punycode) names one account;
 * InvalidArgumentError when it is not an address. A domain IDNA refuses is kept as written (as before this rule).
 */
export function normalizeEmail(raw: string): string {
  const email = lowerCasedNfc(raw);
  // The address pattern refuses whitespace, which leaves NUL, DEL and the C1 controls to this rule.
  refuseIfProblem('email', freeTextProblem(email, 'single-line'));
  if (email.length > 254 || !EMAIL.test(email)) throw new InvalidArgumentError('email: not a valid e-mail address');
  return withoutEmptyDomainLabel(emailKey(email, domainToASCII));
}

export const EMAIL_EMPTY_DOMAIN_LABEL = 'email: the domain has an empty part (two dots in a row, or a dot at its start), such as "example..com"; write it as name@example.com';

/**
 * The key as it is; InvalidArgumentError when its domain, one final dot dropped (emailKey: "bob@example.com." is the
 * fully qualified spelling of "bob@example.com"), has an empty label ("example.com..", "a..com", ".example.com"),
 * which no mail server takes. DOMAIN_DOT: a domain IDNA refuses keeps its ideographic or fullwidth dots.
 */
function withoutEmptyDomainLabel(key: string): string {
  if (key.slice(key.lastIndexOf('@') + 1).split(DOMAIN_DOT).some((label) => label === '')) throw new InvalidArgumentError(EMAIL_EMPTY_DOMAIN_LABEL);
  return key;
}

/** What normalizeEmail gave before domains were put in their ASCII form: the key of addresses stored before. */
function lowerCasedNfc(raw: string): string {
  return raw.trim().toLowerCase().normalize('NFC');
}

/** The address with its domain in IDNA's ASCII form; as it is when IDNA refuses the domain. */
export function withAsciiDomain(email: string): string {
  const at = email.lastIndexOf('@');
  const ascii = domainToASCII(email.slice(at + 1));
  return ascii === '' ? email : `${email.slice(0, at + 1)}${ascii}`;
}

/**
 * An address as people see it (GET /api/auth, a public user page, the registration link's address): its domain in
 * Unicode (url.domainToUnicode), "x@xn--exmple-cua.com" shown as "x@exämple.com", the spelling its owner knows, when
 * the browsers' IDN display policy passes that Unicode form (idnHostProblem, the rule of links and websites); else in
 * IDNA's ASCII form, as a browser's address bar would show it: "ceo@xn--80ak6aa92e.com" is not shown as
 * "ceo@аррӏе.com", nor a mixed-script "ceo@pаypal.com" as typed. Stored addresses keep their domain in ASCII
 * (normalizeEmail: one key for every spelling, the address mailed); this is for showing only, and shows the same for
 * every stored form of one address (ASCII since the rule, as typed before it). A domain IDNA refuses is shown as stored.
 */
export function shownEmail(stored: string): string {
  const at = stored.lastIndexOf('@');
  const unicode = at === -1 ? '' : domainToUnicode(stored.slice(at + 1));
  if (unicode === '') return stored;
  if (idnHostProblem(unicode) === null) return `${stored.slice(0, at + 1)}${unicode}`;
  const ascii = domainToASCII(stored.slice(at + 1));
  return ascii === '' ? stored : `${stored.slice(0, at + 1)}${ascii}`;
}

/** The address with its domain in Unicode (url.domainToUnicode); as it is when IDNA refuses the domain. */
function withUnicodeDomain(email: string): string {
  const at = email.lastIndexOf('@');
  const unicode = at === -1 ? '' : domainToUnicode(email.slice(at + 1));
  return unicode === '' ? email : `${email.slice(0, at + 1)}${unicode}`;
}

/**
 * The spellings an account of the address `raw` may be stored under, the one to prefer first: the address as the
 * rule before this one stored it (lower-cased NFC, as typed), so of two accounts stored before under two spellings
 * that are now one address (x@exämple.com and x@xn--exmple-cua.com) each keeps logging in as it did; then the
 * address as stored from now on (normalizeEmail); then with its domain in Unicode (an account stored before from the
 * other spelling); then those two with a final dot (stored before the final dot was dropped). An address with an
 * empty domain label, refused from now on, is looked up only as typed. The store also looks each up in NFD. InvalidArgumentError when it is not an address.
 */
export function emailSpellings(raw: string): string[] {
  let email: string;
  try {
    email = normalizeEmail(raw);
  } catch (err) {
    // Refused from now on, but an account stored before under such an address still logs in as it is typed.
    if (err instanceof InvalidArgumentError && err.message === EMAIL_EMPTY_DOMAIN_LABEL) return [lowerCasedNfc(raw)];
    throw err;
  }
  const at = email.lastIndexOf('@');
  const unicode = `${email.slice(0, at + 1)}${domainToUnicode(email.slice(at + 1)).normalize('NFC')}`;
  // Last, with the final dot stored before this rule dropped it ("bob@example.com."), for an account stored so.
  return [...new Set([lowerCasedNfc(raw), email, unicode, `${email}.`, `${unicode}.`])];
}

/**
 * An address a mail can be sent to (RFC 5321 4.5.3.1: a local part of at most 64 octets, a domain of at most 255 and
 * labels of at most 63): mail servers refuse longer ones, so an invitation to one could never arrive; and no invisible
 * characters (emailCharacterProblem). Checked when inviting only; normalizeEmail alone decides who can log in, so
 * nobody registered before is locked out.
 */
export function checkDeliverableEmail(email: string): void {
  // An address is shown to other users as its cards' author: one hiding a zero-width space or an override is someone else's look-alike.
  // The Unicode form, not the shown one: a domain shown in ASCII (a look-alike) may still hide one.
  refuseIfProblem('email', emailCharacterProblem(email) ?? emailCharacterProblem(withUnicodeDomain(email)));
  const at = email.lastIndexOf('@');
  const local = email.slice(0, at);
  const domain = email.slice(at + 1);
  if (Buffer.byteLength(local, 'utf8') > 64) throw new InvalidArgumentError('email: the part before @ must be at most 64 characters (mail servers refuse longer ones)');
  if (Buffer.byteLength(domain, 'utf8') > 255 || domain.split('.').some((label) => Buffer.byteLength(label, 'utf8') > 63)) {
    throw new InvalidArgumentError('email: the domain has a part longer than mail servers accept (63 characters per label)');
  }
}

/**
 * A password as hashed and checked: in Unicode NFC, so "passwörd1" typed with a composed "ö" or with "o" and a combining
 * mark (macOS input, another keyboard) is one password. Not NFKC: it would join characters people tell apart.
 */
export function normalizePassword(password: string): string {
  return password.normalize('NFC');
}

/**
 * A new password as normalizePassword gives it (and its confirmation): any printable characters (spaces and emoji
 * too), no control characters; logging in compares only.
 */
export function checkNewPassword(password: string, confirmation: string): void {
  // Characters as people count them: a code point, not a UTF-16 unit (four emoji are four characters, not eight).
  if (characterCount(password) < MIN_PASSWORD_CHARS) throw new InvalidArgumentError(`password: must be at least ${MIN_PASSWORD_CHARS} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new InvalidArgumentError(`password: must be at most ${MAX_PASSWORD_LENGTH} characters`);
  refuseIfProblem('password', freeTextProblem(password, 'single-line'));
  if (password !== confirmation) throw new InvalidArgumentError('password_confirmation: does not match password');
}

/**
 * A username as stored: in Unicode NFC, so every spelling of "Zoë" (an "ë" typed as one character or as "e" and a
 * combining mark) is one name; InvalidArgumentError when it breaks the username rule (usernameProblem: letters and
 * digits of one script, "_" and "-", nothing invisible). Uniqueness is the store's, under usernameKey.
 */
export function normalizeUsername(raw: string): string {
  const username = raw.normalize('NFC');
  refuseIfProblem('username', usernameProblem(username));
  return username;
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
  // Written in full and nothing invisible, as a card's link (the URL parser would open https://x.org/ for "https:/x.org").
  const asWritten = linkProblem(raw);
  // No "user:password@" (shown to everyone) and a host that is a DNS name or an IP literal, as a card's link.
  if (asWritten === 'not-full-url' || asWritten === 'backslash' || asWritten === 'invisible-character' || asWritten === 'credentials' || asWritten === 'host' || asWritten === 'look-alike-host') {
    refuseIfProblem('website', linkProblemText(raw));
  }
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
