import { randomUUID } from 'node:crypto';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnauthenticatedError,
  serviceCounter,
  UnavailableError,
  type Logger,
} from '@cards/platform';
import { EXPIRED_RECORD_RETENTION_MS, EXPIRED_SWEEP_BATCH, EXPIRED_SWEEP_MAX_BATCHES, INVITATION_TTL_MS, PASSWORD_RESET_TTL_MS, SESSION_TTL_MS, type ProfilePatch, type User } from '../domain/model';
import { RecipientRefusedError, type IdentityRepository, type Mailer, type OutgoingMail, type PasswordHasher, type TokenSigner } from '../domain/ports';

type MailKind = 'invitation' | 'password_reset';

/** Mails identity handed to its mailer (SMTP or .eml files), by kind and whether the mailer took them. */
const mailsSent = serviceCounter('card_library_mails_total', 'Mails identity sent (outcome sent: the mailer took it; failed: it threw), by kind: invitation, password_reset', ['kind', 'outcome'] as const);
for (const kind of ['invitation', 'password_reset'] satisfies MailKind[]) for (const outcome of ['sent', 'failed']) mailsSent.inc({ kind, outcome }, 0);
import { checkDeliverableEmail, checkNewPassword, EMAIL_HIDDEN_WITHOUT_USERNAME, emailSpellings, emailVisibilityCondition, normalizeEmail, normalizePassword, normalizeUsername, normalizeWebsite, shownEmail, withAsciiDomain } from '../domain/rules';

export interface IdentityServiceDeps {
  repository: IdentityRepository;
  mailer: Mailer;
  hasher: PasswordHasher;
  tokens: TokenSigner;
  publicUrl: string;
  logger: Logger;
  now?: () => Date;
  /** Waits before each new attempt at a reset mail the mailer failed to take (RESET_MAIL_RETRY_DELAYS_MS by default). */
  resetMailRetryDelaysMs?: readonly number[];
}

/**
 * A reset mail the mail server did not take (down, a stall, a temporary 4xx) is tried again after these waits: the
 * requester was answered 204 before it went out, so a blip of the mail server would otherwise lose it silently. Short,
 * so stopping the service (which waits for the mail under way) is not held up for long. Not when the server refused
 * the address for good.
 */
export const RESET_MAIL_RETRY_DELAYS_MS = [1_000, 5_000] as const;

export interface ProfileChange {
  /** Empty string clears the username. */
  username?: string;
  /** Empty string clears the website. */
  website?: string;
  visibleEmail?: boolean;
}

const INCORRECT_LOGIN = 'Incorrect email or password';
/**
 * Why a login failed, for the operator only: the status reason the gateway's access line names
 * (`grpc:UNAUTHENTICATED:UNKNOWN_ACCOUNT`, `grpc:UNAUTHENTICATED:WRONG_PASSWORD`). The answer to the caller is the same
 * for both (401 "Incorrect email or password"), and an unknown address costs the same password hash work as a wrong
 * password (one with no account possible, as it is no address at all, costs none).
 */
export const UNKNOWN_ACCOUNT = 'UNKNOWN_ACCOUNT';
export const WRONG_PASSWORD = 'WRONG_PASSWORD';
class IncorrectLoginError extends UnauthenticatedError {
  constructor(override readonly reason: typeof UNKNOWN_ACCOUNT | typeof WRONG_PASSWORD) {
    super(INCORRECT_LOGIN);
  }
}
/** Using a reset link marks every other open link of the account used too, so a refused link may never have been used itself. */
const RESET_LINK_SPENT = 'This password reset link is no longer valid: it or another reset link of this account has been used';
/**
 * An id no record has: never sent, or expired and deleted (deleteExpired) whether used or not. Still 404 as before the
 * records were deleted (the status clients know); the message says which two cases it can be.
 */
const INVITATION_UNKNOWN = 'This invitation is not valid: it has expired or was never sent';
const RESET_LINK_UNKNOWN = 'This password reset link is not valid: it has expired or was never sent';

export const INVITATION_ADDRESS_REFUSED = 'email: the mail server refused this address (no such mailbox or domain), so no invitation can reach it; check how it is written';

/** The identity use cases: invitation, registration, sessions, password reset, profile. */
export class IdentityService {
  private readonly now: () => Date;
  // A hash to compare against when the e-mail is unknown, so timing does not reveal accounts.
  private dummyHash: Promise<string> | undefined;
  private readonly afterAnswerWork = new Set<Promise<void>>();

  constructor(private readonly deps: IdentityServiceDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * Invites an address. An address that already has an account gets a mail saying so instead of a registration
   * link; the answer is the same either way (an invitation is recorded for it too, unusable since registering an
   * existing e-mail is refused), so the invitation form does not tell anyone which addresses have accounts.
   * Both kinds of invitation wait for their mail, so timing tells them apart no better than the answer does, and a
   * mail server that fails makes the invitation fail, so the inviter knows to try again.
   */
  async invite(rawEmail: string, referralTokens: string[]): Promise<string> {
    const email = normalizeEmail(rawEmail);
    checkDeliverableEmail(email);
    const account = await this.deps.repository.findUserByEmail(emailSpellings(rawEmail));
    const now = this.now();
    const id = randomUUID();
    await this.deps.repository.createInvitation({ id, email, referralTokens, createdAt: now, expiresAt: new Date(now.getTime() + INVITATION_TTL_MS), usedAt: null });
    if (account) {
      const login = `${this.deps.publicUrl}/auth/login`;
      const forgot = `${this.deps.publicUrl}/auth/forgot`;
      await this.sendInvitationMail({
        to: email,
        subject: 'You already have a Card Library account',
        text: `Someone asked for an invitation to the Card Library for this address, but it already has an account.\n\nLog in here:\n${login}\n\nForgot your password? Ask for a new one here:\n${forgot}\n\nIf it was not you, ignore this mail.\n`,
        html: `<p>Someone asked for an invitation to the Card Library for this address, but it already has an account.</p><p><a href="${login}">Log in</a> or, if you forgot your password, <a href="${forgot}">ask for a new one</a>.</p><p>If it was not you, ignore this mail.</p>`,
      });
      return id;
    }
    // The registration page shows this address: as its owner knows it; the mail goes to the ASCII form.
    const link = `${this.deps.publicUrl}/auth/register/${id}?email=${encodeURIComponent(shownEmail(email))}`;
    await this.sendInvitationMail({
      to: email,
      subject: 'You are invited to the Card Library',
      text: `You have been invited to the Card Library.\n\nSet your password here (the link is valid for 24 hours):\n${link}\n`,
      html: `<p>You have been invited to the Card Library.</p><p><a href="${link}">Set your password</a> (the link is valid for 24 hours).</p>`,
    });
    return id;
  }

  /** Sends one mail, counted by kind and outcome in card_library_mails_total. */
  private async sendMail(kind: MailKind, mail: OutgoingMail): Promise<void> {
    try {
      await this.deps.mailer.send(mail);
    } catch (err) {
      mailsSent.inc({ kind, outcome: 'failed' });
      throw err;
    }
    mailsSent.inc({ kind, outcome: 'sent' });
  }

  /** sendMail, tried again after each of the retry delays while it fails (the mail server's refusal of the address aside). */
  private async sendResetMail(mail: OutgoingMail): Promise<void> {
    const delays = this.deps.resetMailRetryDelaysMs ?? RESET_MAIL_RETRY_DELAYS_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.sendMail('password_reset', mail);
      } catch (err) {
        if (err instanceof RecipientRefusedError || attempt >= delays.length) throw err;
        this.deps.logger.warn({ err, attempt: attempt + 1 }, 'password reset mail could not be sent; trying again');
        await new Promise((resolve) => setTimeout(resolve, delays[attempt]));
      }
    }
  }

  /**
   * A mail server that fails is an outage the inviter can wait out (503), not an internal error (500). One that refuses
   * the address for good (no such mailbox or domain) is the address's fault: 400, as "try again later" never would work.
   * The same for an address with an account and without, so the answer still tells nobody which addresses have one.
   */
  private async sendInvitationMail(mail: OutgoingMail): Promise<void> {
    try {
      await this.sendMail('invitation', mail);
    } catch (err) {
      if (err instanceof RecipientRefusedError) {
        this.deps.logger.warn({ response: err.response }, 'invitation mail refused by the mail server for its address');
        throw new InvalidArgumentError(INVITATION_ADDRESS_REFUSED);
      }
      this.deps.logger.error({ err }, 'invitation mail could not be sent');
      throw new UnavailableError('The invitation mail could not be sent; try again later');
    }
  }

  async register(invitationId: string, typedPassword: string, typedConfirmation: string): Promise<User> {
    const password = normalizePassword(typedPassword);
    checkNewPassword(password, normalizePassword(typedConfirmation));
    const invitation = await this.deps.repository.findInvitation(invitationId);
    if (!invitation) throw new NotFoundError(INVITATION_UNKNOWN);
    const now = this.now();
    if (invitation.usedAt) throw new FailedPreconditionError('This invitation has already been used');
    if (invitation.expiresAt <= now) throw new FailedPreconditionError('This invitation has expired');
    // An invitation stored before addresses were normalised (NFC, the domain in ASCII) may spell it otherwise.
    const email = normalizeEmail(invitation.email);
    if (await this.deps.repository.findUserByEmail(emailSpellings(invitation.email))) throw new AlreadyExistsError('An account with this email already exists');
    const user: User = {
      id: randomUUID(),
      email,
      username: null,
      website: null,
      visibleEmail: true,
      passwordHash: await this.deps.hasher.hash(password),
      passwordVersion: 0,
      createdAt: now,
      updatedAt: now,
    };
    const registered = await this.deps.repository.registerFromInvitation(invitation.id, user, now);
    if (!registered) throw new FailedPreconditionError('This invitation has already been used');
    return user;
  }

  async login(rawEmail: string, password: string): Promise<{ token: string; expiresAt: Date; user: User }> {
    let spellings: string[];
    try {
      spellings = emailSpellings(rawEmail);
    } catch {
      throw new IncorrectLoginError(UNKNOWN_ACCOUNT);
    }
    const user = await this.deps.repository.findUserByEmail(spellings);
    if (!user) {
      await this.passwordMatches(password, await this.getDummyHash());
      throw new IncorrectLoginError(UNKNOWN_ACCOUNT);
    }
    const matched = await this.passwordMatches(password, user.passwordHash);
    if (!matched) throw new IncorrectLoginError(WRONG_PASSWORD);
    // A hash from before passwords were normalized, or from before the cost was raised: made again, in NFC at the cost now.
    if (matched === 'as-typed' || this.deps.hasher.needsRehash(user.passwordHash)) await this.rehashInNfc(user, password);
    const now = this.now();
    // The session is bound to the password just checked: a reset that replaces it meanwhile leaves this session dead.
    const session = { id: randomUUID(), userId: user.id, createdAt: now, expiresAt: new Date(now.getTime() + SESSION_TTL_MS), revokedAt: null, passwordVersion: user.passwordVersion };
    await this.deps.repository.createSession(session);
    return { token: this.deps.tokens.sign(session.id, user.id, session.expiresAt), expiresAt: session.expiresAt, user };
  }

  async logout(token: string): Promise<void> {
    const claims = this.deps.tokens.verify(token);
    if (claims) await this.deps.repository.revokeSession(claims.sessionId, this.now());
  }

  async resolveSession(token: string): Promise<User> {
    const claims = this.deps.tokens.verify(token);
    if (!claims) throw new UnauthenticatedError('Not logged in');
    const session = await this.deps.repository.findSession(claims.sessionId);
    if (!session || session.revokedAt || session.expiresAt <= this.now() || session.userId !== claims.userId) throw new UnauthenticatedError('Not logged in');
    const user = await this.deps.repository.findUserById(session.userId);
    if (!user || (session.passwordVersion !== null && session.passwordVersion !== user.passwordVersion)) throw new UnauthenticatedError('Not logged in');
    return user;
  }

  /** resolveSession for each token, in order; null where the token is not a live session. */
  async resolveSessions(tokens: readonly string[]): Promise<(User | null)[]> {
    return Promise.all(
      tokens.map((token) =>
        this.resolveSession(token).catch((err: unknown) => {
          if (err instanceof UnauthenticatedError) return null;
          throw err;
        }),
      ),
    );
  }

  /** Sends a reset mail when the account exists; says nothing either way, and answers before any mail goes out. */
  async requestPasswordReset(rawEmail: string): Promise<void> {
    const user = await this.deps.repository.findUserByEmail(emailSpellings(rawEmail));
    if (!user) {
      this.deps.logger.info('password reset requested for an unknown address');
      return;
    }
    // The reset is recorded after the answer too: an unknown address costs one lookup, a known one must not cost more.
    this.afterAnswer(async () => {
      const now = this.now();
      const id = randomUUID();
      await this.deps.repository.createPasswordReset({
        id,
        userId: user.id,
        createdAt: now,
        expiresAt: new Date(now.getTime() + PASSWORD_RESET_TTL_MS),
        usedAt: null,
        passwordVersion: user.passwordVersion,
      });
      const link = `${this.deps.publicUrl}/auth/password/${id}`;
      await this.sendResetMail({
        // An address stored before domains were kept in ASCII: sent where its mail goes, as every new one is.
        to: withAsciiDomain(user.email),
        subject: 'Reset your Card Library password',
        text: `Someone asked to reset the password of your Card Library account.\n\nChoose a new password here (the link is valid for 1 hour):\n${link}\n\nIf it was not you, ignore this mail.\n`,
        html: `<p>Someone asked to reset the password of your Card Library account.</p><p><a href="${link}">Choose a new password</a> (the link is valid for 1 hour).</p><p>If it was not you, ignore this mail.</p>`,
      });
    }, 'password reset mail');
  }

  async resetPassword(resetId: string, typedPassword: string, typedConfirmation: string): Promise<void> {
    const password = normalizePassword(typedPassword);
    checkNewPassword(password, normalizePassword(typedConfirmation));
    const reset = await this.deps.repository.findPasswordReset(resetId);
    if (!reset) throw new NotFoundError(RESET_LINK_UNKNOWN);
    const now = this.now();
    if (reset.usedAt) throw new FailedPreconditionError(RESET_LINK_SPENT);
    if (reset.expiresAt <= now) throw new FailedPreconditionError('This password reset link has expired');
    const hash = await this.deps.hasher.hash(password);
    const done = await this.deps.repository.completePasswordReset(reset, hash, now);
    if (!done) throw new FailedPreconditionError(RESET_LINK_SPENT);
  }

  /**
   * Deletes the sessions, invitations and reset links that expired more than EXPIRED_RECORD_RETENTION_MS ago, used,
   * revoked or not: in batches of EXPIRED_SWEEP_BATCH of each kind, at most EXPIRED_SWEEP_MAX_BATCHES per call (the rest
   * at the next). Run at start and periodically (main.ts). How many were deleted.
   */
  async deleteExpired(): Promise<number> {
    const before = new Date(this.now().getTime() - EXPIRED_RECORD_RETENTION_MS);
    let total = 0;
    for (let batch = 0; batch < EXPIRED_SWEEP_MAX_BATCHES; batch++) {
      const deleted = await this.deps.repository.deleteExpired(before, EXPIRED_SWEEP_BATCH);
      total += deleted;
      if (deleted === 0) break;
    }
    return total;
  }

  /** Writes only the fields the change names, so changes of other fields made meanwhile stay. */
  async updateProfile(userId: string, change: ProfileChange): Promise<User> {
    const patch: ProfilePatch = {};
    if (change.username !== undefined) {
      if (change.username === '') patch.username = null;
      else patch.username = normalizeUsername(change.username);
    }
    if (change.website !== undefined && change.website.trim() === '') patch.website = null;
    else if (change.website !== undefined) {
      try {
        patch.website = normalizeWebsite(change.website);
      } catch (err) {
        // A website stored under an earlier rule (credentials, a host like "x..com") may be sent back unchanged: the
        // profile form always sends it. It is kept without being judged again; any other value follows the rule.
        if (!(err instanceof InvalidArgumentError) || (await this.deps.repository.findUserById(userId))?.website !== change.website.trim()) throw err;
      }
    }
    if (change.visibleEmail !== undefined) patch.visibleEmail = change.visibleEmail;
    const updated = await this.deps.repository.updateProfile(userId, patch, emailVisibilityCondition(patch), this.now());
    if (updated) return updated;
    if (!(await this.deps.repository.findUserById(userId))) throw new UnauthenticatedError('Not logged in');
    throw new InvalidArgumentError(EMAIL_HIDDEN_WITHOUT_USERNAME);
  }

  async getUsers(ids: string[]): Promise<User[]> {
    if (ids.length > 1000) throw new InvalidArgumentError('ids: at most 1000 per call');
    return this.deps.repository.findUsersByIds([...new Set(ids)]);
  }

  /** Resolves once the mail of earlier reset requests has been handed over (or has failed). */
  async mailSent(): Promise<void> {
    while (this.afterAnswerWork.size > 0) await Promise.all([...this.afterAnswerWork]);
  }

  /**
   * Runs work after the caller has its answer. How long an SMTP server takes would otherwise tell whether an address
   * has an account (a reset mail goes only to accounts). A failure is logged; the caller was not going to learn it.
   */
  private afterAnswer(work: () => Promise<void>, what: string): void {
    const running: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(work)
      .catch((err: unknown) => this.deps.logger.error({ err }, `${what} could not be sent`))
      .finally(() => this.afterAnswerWork.delete(running));
    this.afterAnswerWork.add(running);
  }

  /**
   * Whether the password typed matches the hash: its NFC form first (every hash made since passwords are normalized),
   * then, when it differs, the password as typed (a hash made before from a password set decomposed); the same
   * checks against the dummy hash for an unknown address, so timing tells nothing more.
   */
  private async passwordMatches(typed: string, hash: string): Promise<'nfc' | 'as-typed' | false> {
    const nfc = normalizePassword(typed);
    if (await this.deps.hasher.verify(nfc, hash)) return 'nfc';
    if (nfc !== typed && (await this.deps.hasher.verify(typed, hash))) return 'as-typed';
    return false;
  }

  /**
   * A hash made from a password as typed (not NFC), or at another cost than the hasher's now, is replaced by one of its
   * NFC form at the cost now, so every spelling logs in from now on and a raised cost reaches the accounts in use.
   */
  private async rehashInNfc(user: User, typed: string): Promise<void> {
    try {
      await this.deps.repository.rehashPassword(user.id, user.passwordHash, await this.deps.hasher.hash(normalizePassword(typed)));
    } catch (err) {
      // The login stands: the old hash still matches what was typed, and the next login tries again.
      this.deps.logger.error({ err }, 'password could not be rehashed in NFC');
    }
  }

  private getDummyHash(): Promise<string> {
    this.dummyHash ??= this.deps.hasher.hash(randomUUID());
    return this.dummyHash;
  }
}
