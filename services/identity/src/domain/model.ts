export interface User {
  id: string;
  email: string;
  username: string | null;
  website: string | null;
  visibleEmail: boolean;
  passwordHash: string;
  /**
   * How many times the password has been replaced (0 until the first reset). A session and a reset link carry the
   * value they were made under, so neither outlives the password it was made with, whatever order racing requests run in.
   */
  passwordVersion: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A change of profile as the store writes it: only the fields named change; null clears a username or website. */
export interface ProfilePatch {
  username?: string | null;
  website?: string | null;
  visibleEmail?: boolean;
}

/**
 * What the stored profile must hold, when a patch is written, for the profile after it to keep the rule that the
 * e-mail is hidden only behind a username: the patch alone may not say (it hides the e-mail but leaves the username
 * as stored, or clears the username but leaves the visibility as stored), and a request changing the other field
 * may run in between.
 */
export type StoredProfileCondition = 'none' | 'has-username' | 'email-visible';

export interface Invitation {
  id: string;
  email: string;
  referralTokens: string[];
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

export interface Session {
  id: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  /** The user's passwordVersion at login; null for a session stored before sessions recorded it (revocation alone ends it). */
  passwordVersion: number | null;
}

export interface PasswordReset {
  id: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  /** The user's passwordVersion when the link was sent; null for a link stored before links recorded it. */
  passwordVersion: number | null;
}

export const INVITATION_TTL_MS = 24 * 60 * 60 * 1000;
export const SESSION_TTL_MS = 24 * 60 * 60 * 1000;
export const PASSWORD_RESET_TTL_MS = 60 * 60 * 1000;
/**
 * How long a session, invitation or reset link is kept after it expires (used, revoked or not) before it is deleted:
 * meanwhile a late click hears "expired" or "already used"; afterwards "not valid". The MongoDB adapter's TTL indexes
 * and the sweep (IdentityService.deleteExpired) both use it. See docs/decisions.md.
 */
export const EXPIRED_RECORD_RETENTION_MS = 24 * 60 * 60 * 1000;
/** At most this many of each kind deleted per batch of the sweep, and this many batches per sweep. */
export const EXPIRED_SWEEP_BATCH = 500;
export const EXPIRED_SWEEP_MAX_BATCHES = 20;
/** scrypt cost grows with length; longer passwords are refused rather than hashed. */
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * The stored e-mails findUserByEmail looks for, most preferred first: each spelling, then its NFD form (addresses
 * stored before NFC was the rule), without repeats.
 */
export function emailLookupOrder(spellings: string | readonly string[]): string[] {
  return [...new Set((typeof spellings === 'string' ? [spellings] : spellings).flatMap((email) => [email, email.normalize('NFD')]))];
}
