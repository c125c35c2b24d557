import type { Invitation, PasswordReset, ProfilePatch, Session, StoredProfileCondition, User } from './model';

/**
 * Storage of users, invitations, sessions and password resets.
 * Unique e-mail and unique username (case-insensitive) are enforced by the store itself.
 */
export interface IdentityRepository {
  createInvitation(invitation: Invitation): Promise<void>;
  findInvitation(id: string): Promise<Invitation | null>;
  /**
   * Marks the invitation used and creates the user, atomically.
   * Returns false (and changes nothing) when the invitation was already used; throws AlreadyExistsError on a taken e-mail.
   */
  registerFromInvitation(invitationId: string, user: User, usedAt: Date): Promise<boolean>;

  findUserById(id: string): Promise<User | null>;
  /**
   * The account of an address as normalizeEmail gives it (NFC), or of the first of several spellings of it that has
   * one (emailSpellings, most preferred first). Also finds one stored under a spelling's NFD form (addresses were only
   * lower-cased before); a spelling as given is preferred to its NFD form.
   */
  findUserByEmail(spellings: string | readonly string[]): Promise<User | null>;
  findUsersByIds(ids: readonly string[]): Promise<User[]>;
  /**
   * Writes the fields the patch names and `updatedAt`, nothing else, in one conditional write: only when the stored
   * profile meets `requires` at that moment. The user as stored afterwards, or null when there is no such user or it
   * does not meet `requires` (nothing written). Throws AlreadyExistsError when the username is taken by someone else.
   */
  updateProfile(userId: string, patch: ProfilePatch, requires: StoredProfileCondition, updatedAt: Date): Promise<User | null>;

  createSession(session: Session): Promise<void>;
  findSession(id: string): Promise<Session | null>;
  revokeSession(id: string, at: Date): Promise<void>;

  createPasswordReset(reset: PasswordReset): Promise<void>;
  findPasswordReset(id: string): Promise<PasswordReset | null>;
  /**
   * Sets the new password hash and moves the user's passwordVersion on, marks the reset used, revokes every session of
   * the user and spends their other reset links, atomically (without a transaction: see docs/engines.md). Returns false,
   * leaving the password and the sessions as they are, when the reset was already used or the password was replaced since the link was
   * sent (of two links used at once, one wins). A link without passwordVersion is held to the user's current one.
   */
  completePasswordReset(reset: PasswordReset, passwordHash: string, at: Date): Promise<boolean>;
  /**
   * Replaces the hash of the user's password by another hash of the same password (a rehash at login), only while the
   * stored hash is still `previousHash`: a reset meanwhile wins. The password version, sessions and reset links stay.
   * False when nothing was written.
   */
  rehashPassword(userId: string, previousHash: string, passwordHash: string): Promise<boolean>;

  /**
   * Deletes the sessions, invitations and password resets whose expiresAt is at or before `before` (used, revoked or
   * not), at most `limit` of each kind. How many were deleted in all. Nothing expired can be used again, so only the
   * message refusing it changes (identity-service: an unknown link is refused as one that expired).
   */
  deleteExpired(before: Date, limit: number): Promise<number>;

  close(): Promise<void>;
}

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/**
 * The mail server refused the recipient for good (a 5xx answer to RCPT TO naming the address: no such mailbox, no such
 * domain, a malformed address): sending again will not help, unlike an outage. `response` is the server's answer.
 */
export class RecipientRefusedError extends Error {
  constructor(readonly response: string) {
    super(`the mail server refused the recipient: ${response}`);
    this.name = 'RecipientRefusedError';
  }
}

/** Sends e-mail. RecipientRefusedError when the server refuses the address for good; any other error may pass. */
export interface Mailer {
  send(mail: OutgoingMail): Promise<void>;
  close(): Promise<void>;
}

/** One-way password hashing. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /**
   * Whether the password matches the hash. Costs at least what checking a hash made now costs, whatever the stored
   * hash's own cost: an unknown address is checked against a hash made now, so a known one stored under a lower cost
   * would otherwise answer sooner.
   */
  verify(password: string, hash: string): Promise<boolean>;
  /** Whether the hash was made with other parameters than hash() uses now (a raised cost): login replaces it. */
  needsRehash(hash: string): boolean;
}

/** Signs and checks session tokens; the token names the session by its id. */
export interface TokenSigner {
  sign(sessionId: string, userId: string, expiresAt: Date): string;
  /** The session id, or null when the token is forged, malformed or expired. */
  verify(token: string): { sessionId: string; userId: string } | null;
}
