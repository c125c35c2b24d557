import { join } from 'node:path';
import { createLogger, FailedPreconditionError, InvalidArgumentError, NotFoundError, openSqlite, serviceMetrics, UnauthenticatedError, UnavailableError } from '@cards/platform';
import { IdentityService, INVITATION_ADDRESS_REFUSED, UNKNOWN_ACCOUNT, WRONG_PASSWORD } from '../src/application/identity-service';
import { identityHandlers } from '../src/grpc/identity-handlers';
import { JwtTokenSigner } from '../src/adapters/crypto/jwt-token-signer';
import { ScryptPasswordHasher } from '../src/adapters/crypto/scrypt-password-hasher';
import { MIGRATIONS, SqliteIdentityRepository } from '../src/adapters/sqlite/sqlite-identity-repository';
import { usernameKey } from '../src/domain/username-key';
import { RecipientRefusedError, type IdentityRepository, type Mailer, type OutgoingMail } from '../src/domain/ports';
import { testTempDir } from '../../../test/support/cleanup';

// The mailer is not what these tests are about: a recorder stands in for it.
class RecordingMailer implements Mailer {
  sent: OutgoingMail[] = [];
  async send(mail: OutgoingMail) {
    this.sent.push(mail);
  }
  async close() {}
}

/** Holds every mail until released; `sending` settles when a send has started while held. */
class HeldMailer extends RecordingMailer {
  private gate: Promise<void> = Promise.resolve();
  private open = () => {};
  private started = () => {};
  sending: Promise<void> = new Promise((resolve) => (this.started = resolve));
  hold() {
    this.gate = new Promise((resolve) => (this.open = resolve));
    this.sending = new Promise((resolve) => (this.started = resolve));
  }
  release() {
    this.open();
  }
  override async send(mail: OutgoingMail) {
    this.started();
    await this.gate;
    await super.send(mail);
  }
}

/**
 * The store with the next call of one method held until released, so a test puts one use case's store calls before or after
 * another's in the order it wants (a race, without timing).
 */
class StoreGate {
  private held: { method: string; reached: () => void; gate: Promise<void> } | null = null;

  wrap(repository: IdentityRepository): IdentityRepository {
    return new Proxy(repository, {
      get: (target, name, receiver) => {
        const value: unknown = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          const held = this.held;
          if (held && held.method === name) {
            this.held = null;
            held.reached();
            await held.gate;
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }

  /** Holds the next call of `method` before it reaches the store; `reached` settles once it is held. */
  holdNext(method: keyof IdentityRepository): { reached: Promise<void>; release: () => void } {
    let release = () => {};
    let reached = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    this.held = { method, reached, gate };
    return { reached: reachedPromise, release };
  }
}

// No new attempt at a failed reset mail unless a test asks for them (resetMailRetryDelays).
function setup(start = new Date('2026-01-01T00:00:00Z'), mailer = new RecordingMailer(), gate?: StoreGate, resetMailRetryDelaysMs: number[] = []) {
  let now = start;
  const repository = new SqliteIdentityRepository(join(testTempDir('identity-'), 'identity.db'));
  const service = new IdentityService({
    repository: gate ? gate.wrap(repository) : repository,
    mailer,
    hasher: new ScryptPasswordHasher(1024),
    tokens: new JwtTokenSigner('s'.repeat(40)),
    publicUrl: 'https://cards.example',
    logger: createLogger('test', 'silent'),
    now: () => now,
    resetMailRetryDelaysMs,
  });
  return { service, mailer, repository, advance: (ms: number) => (now = new Date(now.getTime() + ms)) };
}

describe('IdentityService', () => {
  it('invitation mail links to the registration page with the e-mail', async () => {
    const { service, mailer } = setup();
    const id = await service.invite(' Bob@Example.COM ', ['ref']);
    await service.mailSent();
    expect(mailer.sent[0]!.to).toBe('bob@example.com');
    expect(mailer.sent[0]!.text).toContain(`https://cards.example/auth/register/${id}?email=bob%40example.com`);
  });

  it('refuses to invite an address no mail server would take, sending nothing', async () => {
    const { service, mailer } = setup();
    await expect(service.invite(`${'x'.repeat(65)}@example.com`, [])).rejects.toThrow(/before @ must be at most 64/);
    await service.mailSent();
    expect(mailer.sent).toHaveLength(0);
  });

  it('an invitation expires after 24 hours', async () => {
    const { service, advance } = setup();
    const id = await service.invite('late@example.com', []);
    advance(24 * 60 * 60 * 1000 + 1);
    await expect(service.register(id, 'password1', 'password1')).rejects.toThrow(/expired/);
  });

  it('a session token stops working after 24 hours even if never revoked', async () => {
    // jsonwebtoken checks exp against the real clock, so the session row's expiry is what this asserts.
    const { service, advance } = setup(new Date());
    const id = await service.invite('s@example.com', []);
    await service.register(id, 'password1', 'password1');
    const { token } = await service.login('s@example.com', 'password1');
    await expect(service.resolveSession(token)).resolves.toMatchObject({ email: 's@example.com' });
    advance(24 * 60 * 60 * 1000 + 1);
    await expect(service.resolveSession(token)).rejects.toThrow(/Not logged in/);
  });

  it("a failed login tells the operator a wrong password from an unknown account (its status reason), not the caller, and hashes for both", async () => {
    const { service } = setup(new Date());
    const id = await service.invite('known@example.com', []);
    await service.register(id, 'password1', 'password1');
    const verify = jest.spyOn(ScryptPasswordHasher.prototype, 'verify');
    try {
      const refusal = async (email: string) => {
        verify.mockClear();
        const err = await service.login(email, 'wrong password').then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(UnauthenticatedError);
        const { message, status, reason } = err as UnauthenticatedError;
        return { message, status, reason, hashChecks: verify.mock.calls.length };
      };
      const wrong = await refusal('known@example.com');
      const unknown = await refusal('nobody@example.com');
      expect(wrong).toEqual({ message: 'Incorrect email or password', status: unknown.status, reason: WRONG_PASSWORD, hashChecks: 1 });
      expect(unknown).toEqual({ message: 'Incorrect email or password', status: wrong.status, reason: UNKNOWN_ACCOUNT, hashChecks: 1 });
    } finally {
      verify.mockRestore();
    }
  });

  it('a forged or foreign token is refused', async () => {
    const { service } = setup(new Date());
    const foreign = new JwtTokenSigner('t'.repeat(40)).sign('00000000-0000-4000-8000-000000000000', 'u', new Date(Date.now() + 60_000));
    await expect(service.resolveSession(foreign)).rejects.toThrow(/Not logged in/);
    await expect(service.resolveSession('not.a.jwt')).rejects.toThrow(/Not logged in/);
  });

  it('resolves several tokens in one call, in order, null for each one that is not a live session', async () => {
    const { service } = setup(new Date());
    for (const name of ['a', 'b']) await service.register(await service.invite(`${name}@example.com`, []), 'password1', 'password1');
    const a = (await service.login('a@example.com', 'password1')).token;
    const b = (await service.login('b@example.com', 'password1')).token;
    const loggedOut = (await service.login('a@example.com', 'password1')).token;
    await service.logout(loggedOut);
    const users = await service.resolveSessions([b, 'not.a.jwt', a, loggedOut, b]);
    expect(users.map((u) => u?.email ?? null)).toEqual(['b@example.com', null, 'a@example.com', null, 'b@example.com']);
  });

  it('a password is one password in NFC: set composed, it logs in typed decomposed, and the other way round', async () => {
    const { service, mailer } = setup(new Date());
    const composed = 'passw\u00f6rd1';
    const decomposed = 'passwo\u0308rd1';
    await service.register(await service.invite('c@example.com', []), composed, decomposed);
    await expect(service.login('c@example.com', decomposed)).resolves.toMatchObject({ user: { email: 'c@example.com' } });
    await expect(service.login('c@example.com', composed)).resolves.toMatchObject({ user: { email: 'c@example.com' } });
    await service.register(await service.invite('d@example.com', []), decomposed, decomposed);
    await expect(service.login('d@example.com', composed)).resolves.toMatchObject({ user: { email: 'd@example.com' } });
    await service.requestPasswordReset('d@example.com');
    await service.mailSent();
    const resetId = /auth\/password\/([0-9a-f-]{36})/.exec(mailer.sent.at(-1)!.text)![1]!;
    await service.resetPassword(resetId, 'n\u00e9wpassword', 'ne\u0301wpassword');
    await expect(service.login('d@example.com', 'ne\u0301wpassword')).resolves.toMatchObject({ user: { email: 'd@example.com' } });
    await expect(service.login('d@example.com', 'newpassword')).rejects.toThrow(/Incorrect email or password/);
  });

  it('an account whose hash was made from a decomposed password logs in with what was typed, and is rehashed in NFC on success', async () => {
    const repository = new SqliteIdentityRepository(join(testTempDir('identity-'), 'identity.db'));
    const hasher = new ScryptPasswordHasher(1024);
    const service = new IdentityService({ repository, mailer: new RecordingMailer(), hasher, tokens: new JwtTokenSigner('s'.repeat(40)), publicUrl: 'https://cards.example', logger: createLogger('test', 'silent') });
    const decomposed = 'passwo\u0308rd1';
    const now = new Date();
    // As the version before stored it: the hash of the password as typed, decomposed.
    const typedHash = await hasher.hash(decomposed);
    await repository.createInvitation({ id: 'i-old', email: 'old@example.com', referralTokens: [], createdAt: now, expiresAt: new Date(now.getTime() + 60_000), usedAt: null });
    await repository.registerFromInvitation('i-old', { id: 'u-old', email: 'old@example.com', username: null, website: null, visibleEmail: true, passwordHash: typedHash, passwordVersion: 0, createdAt: now, updatedAt: now }, now);
    await expect(service.login('old@example.com', 'passw\u00f6rd1x')).rejects.toThrow(/Incorrect email or password/);
    expect((await repository.findUserById('u-old'))?.passwordHash).toBe(typedHash);
    const { token } = await service.login('old@example.com', decomposed);
    const rehashed = (await repository.findUserById('u-old'))!;
    expect(rehashed.passwordHash).not.toBe(typedHash);
    expect(await hasher.verify('passw\u00f6rd1', rehashed.passwordHash)).toBe(true);
    expect(rehashed.passwordVersion).toBe(0);
    // The session just opened stays: the password is the same one.
    await expect(service.resolveSession(token)).resolves.toMatchObject({ id: 'u-old' });
    await expect(service.login('old@example.com', 'passw\u00f6rd1')).resolves.toMatchObject({ user: { id: 'u-old' } });
    await expect(service.login('old@example.com', decomposed)).resolves.toMatchObject({ user: { id: 'u-old' } });
  });

  it('an account whose hash is from before PASSWORD_HASH_COST was raised is rehashed at the cost now when it logs in, not on a failed login', async () => {
    const repository = new SqliteIdentityRepository(join(testTempDir('identity-'), 'identity.db'));
    const hasher = new ScryptPasswordHasher(2048);
    const service = new IdentityService({ repository, mailer: new RecordingMailer(), hasher, tokens: new JwtTokenSigner('s'.repeat(40)), publicUrl: 'https://cards.example', logger: createLogger('test', 'silent') });
    const now = new Date();
    const oldHash = await new ScryptPasswordHasher(1024).hash('password1');
    await repository.createInvitation({ id: 'i-cost', email: 'cost@example.com', referralTokens: [], createdAt: now, expiresAt: new Date(now.getTime() + 60_000), usedAt: null });
    await repository.registerFromInvitation('i-cost', { id: 'u-cost', email: 'cost@example.com', username: null, website: null, visibleEmail: true, passwordHash: oldHash, passwordVersion: 0, createdAt: now, updatedAt: now }, now);
    await expect(service.login('cost@example.com', 'password2')).rejects.toThrow(/Incorrect email or password/);
    expect((await repository.findUserById('u-cost'))?.passwordHash).toBe(oldHash);
    const { token } = await service.login('cost@example.com', 'password1');
    const rehashed = (await repository.findUserById('u-cost'))!;
    expect(rehashed.passwordHash).toMatch(/^scrypt\$2048\$8\$1\$/);
    expect(rehashed.passwordVersion).toBe(0);
    await expect(service.resolveSession(token)).resolves.toMatchObject({ id: 'u-cost' });
    await expect(service.login('cost@example.com', 'password1')).resolves.toMatchObject({ user: { id: 'u-cost' } });
  });

  it('a website stored under an earlier rule (credentials, an invalid host) may be sent back unchanged; any other such value is refused', async () => {
    const repository = new SqliteIdentityRepository(join(testTempDir('identity-'), 'identity.db'));
    const service = new IdentityService({ repository, mailer: new RecordingMailer(), hasher: new ScryptPasswordHasher(1024), tokens: new JwtTokenSigner('s'.repeat(40)), publicUrl: 'https://cards.example', logger: createLogger('test', 'silent') });
    const user = await service.register(await service.invite('web@example.com', []), 'password1', 'password1');
    // As the version before stored it.
    await repository.updateProfile(user.id, { website: 'https://u:p@x..com/' }, 'none', new Date());
    await expect(service.updateProfile(user.id, { website: ' https://u:p@x..com/ ', username: 'webber' })).resolves.toMatchObject({ website: 'https://u:p@x..com/', username: 'webber' });
    await expect(service.updateProfile(user.id, { website: 'https://u:p@x..com/other' })).rejects.toThrow(/^website: must be an http or https URL without a user name or password/);
    await expect(service.updateProfile(user.id, { website: 'https://x..com/' })).rejects.toThrow(/^website: .*whose host is a domain name/);
    await expect(service.updateProfile(user.id, { website: 'https://x.com/' })).resolves.toMatchObject({ website: 'https://x.com/' });
    // Once changed, the earlier value is no longer stored, so it follows the rule.
    await expect(service.updateProfile(user.id, { website: 'https://u:p@x..com/' })).rejects.toThrow(/^website: /);
  });

  it('an address spelled with a Unicode domain and in punycode is one account, mailed at the punycode address', async () => {
    const { service, mailer } = setup(new Date());
    const first = await service.invite('x@ex\u00e4mple.com', []);
    await service.mailSent();
    expect(mailer.sent.at(-1)!.to).toBe('x@xn--exmple-cua.com');
    // The registration page shows the address the link carries: as its owner typed it.
    expect(mailer.sent.at(-1)!.text).toContain(`/auth/register/${first}?email=${encodeURIComponent('x@ex\u00e4mple.com')}`);
    const second = await service.invite('X@XN--EXMPLE-CUA.COM', []);
    const user = await service.register(first, 'password1', 'password1');
    expect(user.email).toBe('x@xn--exmple-cua.com');
    await expect(service.register(second, 'password1', 'password1')).rejects.toThrow(/already exists/);
    await service.invite('x@xn--exmple-cua.com', []);
    await service.mailSent();
    expect(mailer.sent.at(-1)!.subject).toBe('You already have a Card Library account');
    for (const email of ['x@ex\u00e4mple.com', 'x@exa\u0308mple.com', 'x@xn--exmple-cua.com']) {
      await expect(service.login(email, 'password1')).resolves.toMatchObject({ user: { id: user.id } });
    }
  });

  it('accounts stored before under a Unicode domain keep working; two stored under both spellings each keep their own', async () => {
    const repository = new SqliteIdentityRepository(join(testTempDir('identity-'), 'identity.db'));
    const hasher = new ScryptPasswordHasher(1024);
    const mailer = new RecordingMailer();
    const service = new IdentityService({ repository, mailer, hasher, tokens: new JwtTokenSigner('s'.repeat(40)), publicUrl: 'https://cards.example', logger: createLogger('test', 'silent') });
    const now = new Date();
    // As the version before stored them: the address lower-cased and in NFC, the domain as typed.
    const stored = async (id: string, email: string, password: string) => {
      await repository.createInvitation({ id: `i-${id}`, email, referralTokens: [], createdAt: now, expiresAt: new Date(now.getTime() + 60_000), usedAt: null });
      await repository.registerFromInvitation(`i-${id}`, { id, email, username: null, website: null, visibleEmail: true, passwordHash: await hasher.hash(password), passwordVersion: 0, createdAt: now, updatedAt: now }, now);
    };
    await stored('u-alone', 'solo@b\u00fccher.example', 'password-solo');
    await stored('u-unicode', 'x@ex\u00e4mple.com', 'password-unicode');
    await stored('u-ascii', 'x@xn--exmple-cua.com', 'password-ascii');
    // One account under a Unicode domain: found by every spelling.
    for (const email of ['solo@b\u00fccher.example', 'SOLO@BU\u0308CHER.EXAMPLE', 'solo@xn--bcher-kva.example']) {
      await expect(service.login(email, 'password-solo')).resolves.toMatchObject({ user: { id: 'u-alone', email: 'solo@b\u00fccher.example' } });
    }
    // Two accounts stored under the two spellings of one address: each spelling logs into its own.
    await expect(service.login('x@ex\u00e4mple.com', 'password-unicode')).resolves.toMatchObject({ user: { id: 'u-unicode' } });
    await expect(service.login('x@xn--exmple-cua.com', 'password-ascii')).resolves.toMatchObject({ user: { id: 'u-ascii' } });
    // Nobody registers either spelling again; the reset mail goes where mail for the address goes.
    const invited = await service.invite('solo@xn--bcher-kva.example', []);
    await service.mailSent();
    expect(mailer.sent.at(-1)!.subject).toBe('You already have a Card Library account');
    await expect(service.register(invited, 'password1', 'password1')).rejects.toThrow(/already exists/);
    await service.requestPasswordReset('SOLO@B\u00dcCHER.EXAMPLE');
    await service.mailSent();
    expect(mailer.sent.at(-1)).toMatchObject({ to: 'solo@xn--bcher-kva.example', subject: 'Reset your Card Library password' });
    // An invitation stored before under the Unicode spelling registers the address in ASCII.
    await repository.createInvitation({ id: 'i-new', email: 'new@ex\u00e4mple.com', referralTokens: [], createdAt: now, expiresAt: new Date(now.getTime() + 60_000), usedAt: null });
    await expect(service.register('i-new', 'password1', 'password1')).resolves.toMatchObject({ email: 'new@xn--exmple-cua.com' });
  });

  it('one account for an address with and without a final dot; one stored before with the dot still logs in; an empty label is refused', async () => {
    const repository = new SqliteIdentityRepository(join(testTempDir('identity-'), 'identity.db'));
    const hasher = new ScryptPasswordHasher(1024);
    const mailer = new RecordingMailer();
    const service = new IdentityService({ repository, mailer, hasher, tokens: new JwtTokenSigner('s'.repeat(40)), publicUrl: 'https://cards.example', logger: createLogger('test', 'silent') });
    const now = new Date();
    // A new address typed with a final dot is stored and mailed without it; the other spelling is the same account.
    const id = await service.invite('bob@example.com.', []);
    await service.mailSent();
    expect(mailer.sent.at(-1)!.to).toBe('bob@example.com');
    await expect(service.register(id, 'password1', 'password1')).resolves.toMatchObject({ email: 'bob@example.com' });
    for (const spelling of ['bob@example.com', 'BOB@EXAMPLE.COM.', 'bob@example.com.']) {
      const again = await service.invite(spelling, []);
      await service.mailSent();
      expect(mailer.sent.at(-1)!.subject).toBe('You already have a Card Library account');
      await expect(service.register(again, 'password1', 'password1')).rejects.toThrow(/already exists/);
    }
    // Stored before this rule with the final dot (as typed): logs in with and without it, and blocks the plain spelling.
    await repository.createInvitation({ id: 'i-dot', email: 'carol@ex\u00e4mple.com.', referralTokens: [], createdAt: now, expiresAt: new Date(now.getTime() + 60_000), usedAt: null });
    await repository.registerFromInvitation('i-dot', { id: 'u-dot', email: 'carol@ex\u00e4mple.com.', username: null, website: null, visibleEmail: true, passwordHash: await hasher.hash('password-dot'), passwordVersion: 0, createdAt: now, updatedAt: now }, now);
    for (const email of ['carol@ex\u00e4mple.com.', 'carol@ex\u00e4mple.com', 'carol@xn--exmple-cua.com']) {
      await expect(service.login(email, 'password-dot')).resolves.toMatchObject({ user: { id: 'u-dot' } });
    }
    const blocked = await service.invite('carol@xn--exmple-cua.com', []);
    await expect(service.register(blocked, 'password1', 'password1')).rejects.toThrow(/already exists/);
    for (const email of ['bob@example.com..', 'bob@a..example.com', 'bob@.example.com']) {
      await expect(service.invite(email, [])).rejects.toThrow(/^email: the domain has an empty part/);
    }
  });

  it("the service's face shows an address's domain in Unicode, whichever form it is stored in; spellings still find it", async () => {
    const repository = new SqliteIdentityRepository(join(testTempDir('identity-'), 'identity.db'));
    const hasher = new ScryptPasswordHasher(1024);
    const mailer = new RecordingMailer();
    const service = new IdentityService({ repository, mailer, hasher, tokens: new JwtTokenSigner('s'.repeat(40)), publicUrl: 'https://cards.example', logger: createLogger('test', 'silent') });
    const handlers = identityHandlers(service);
    const call = {} as never;
    const now = new Date();
    // Stored as typed (before the ASCII rule) and in ASCII (since): the same stored forms a store holds after an upgrade.
    for (const [id, email] of [['u-typed', 'typed@b\u00fccher.example'], ['u-ascii', 'ascii@xn--bcher-kva.example']] as const) {
      await repository.createInvitation({ id: `i-${id}`, email, referralTokens: [], createdAt: now, expiresAt: new Date(now.getTime() + 60_000), usedAt: null });
      await repository.registerFromInvitation(`i-${id}`, { id, email, username: null, website: null, visibleEmail: true, passwordHash: await hasher.hash('password1'), passwordVersion: 0, createdAt: now, updatedAt: now }, now);
    }
    for (const local of ['typed', 'ascii']) {
      for (const email of [`${local}@b\u00fccher.example`, `${local.toUpperCase()}@BU\u0308CHER.EXAMPLE`, `${local}@xn--bcher-kva.example`]) {
        const { token, user } = await handlers.login({ email, password: 'password1' }, call);
        expect(user!.email).toBe(`${local}@b\u00fccher.example`);
        expect((await handlers.resolveSession({ token: token! }, call)).email).toBe(`${local}@b\u00fccher.example`);
      }
    }
    expect((await handlers.getUsers({ ids: ['u-typed', 'u-ascii'] }, call)).users!.map((u) => u.email).sort()).toEqual(['ascii@b\u00fccher.example', 'typed@b\u00fccher.example']);
    // A new account typed in punycode: stored and mailed in ASCII, shown in Unicode.
    const invitationId = (await handlers.createInvitation({ email: 'new@XN--BCHER-KVA.example', referralTokens: [] }, call)).invitationId!;
    await service.mailSent();
    expect(mailer.sent.at(-1)!.to).toBe('new@xn--bcher-kva.example');
    const user = await handlers.register({ invitationId, password: 'password1', passwordConfirmation: 'password1' }, call);
    expect(user.email).toBe('new@b\u00fccher.example');
    expect((await repository.findUserById(user.id!))!.email).toBe('new@xn--bcher-kva.example');
    expect((await handlers.updateUser({ userId: user.id!, username: 'newcomer' }, call)).email).toBe('new@b\u00fccher.example');
    // A domain IDNA takes with an invisible character (Braille blank; a joiner after a virama) would show it: refused as before the ASCII rule.
    for (const email of ['x@a\u2800b.example', 'x@\u0915\u094d\u200c\u0937.example']) {
      await expect(handlers.createInvitation({ email, referralTokens: [] }, call)).rejects.toThrow(/^email: must not contain invisible characters/);
    }
  });

  it('password reset links expire after one hour', async () => {
    const { service, mailer, advance } = setup(new Date());
    const id = await service.invite('r@example.com', []);
    await service.register(id, 'password1', 'password1');
    await service.requestPasswordReset('r@example.com');
    await service.mailSent();
    const resetId = /auth\/password\/([0-9a-f-]{36})/.exec(mailer.sent.at(-1)!.text)![1]!;
    advance(60 * 60 * 1000 + 1);
    await expect(service.resetPassword(resetId, 'password2', 'password2')).rejects.toThrow(/expired/);
  });

  it('a used reset link, and the session it ended, are deleted a day after the link expires; the link is then unknown (404)', async () => {
    const { service, mailer, repository, advance } = setup(new Date());
    const id = await service.invite('used@example.com', []);
    await service.register(id, 'password1', 'password1');
    const { token } = await service.login('used@example.com', 'password1');
    await service.requestPasswordReset('used@example.com');
    await service.mailSent();
    const resetId = /auth\/password\/([0-9a-f-]{36})/.exec(mailer.sent.at(-1)!.text)![1]!;
    await service.resetPassword(resetId, 'password2', 'password2');
    await expect(service.resolveSession(token)).rejects.toThrow(/Not logged in/);
    advance(60 * 60 * 1000 + 24 * 60 * 60 * 1000 - 1);
    expect(await service.deleteExpired()).toBe(0);
    await expect(service.resetPassword(resetId, 'password3', 'password3')).rejects.toThrow(/no longer valid/);
    advance(2);
    expect(await service.deleteExpired()).toBe(1);
    expect(await repository.findPasswordReset(resetId)).toBeNull();
    // The session revoked by the reset and the used invitation go a day after their own expiry (24 h after they were made).
    advance(23 * 60 * 60 * 1000);
    expect(await service.deleteExpired()).toBe(2);
    expect(await repository.findInvitation(id)).toBeNull();
    const refused = service.resetPassword(resetId, 'password3', 'password3');
    await expect(refused).rejects.toBeInstanceOf(NotFoundError);
    await expect(refused).rejects.toThrow('This password reset link is not valid: it has expired or was never sent');
    await expect(service.resolveSession(token)).rejects.toThrow(/Not logged in/);
    await expect(service.login('used@example.com', 'password2')).resolves.toMatchObject({ token: expect.any(String) });
  });

  it("an unconfirmed sign-up's invitation (address, referral tokens) is deleted a day after it expires; its link is then unknown (404)", async () => {
    const { service, repository, advance } = setup();
    const id = await service.invite('never@example.com', ['ref-a']);
    advance(2 * 24 * 60 * 60 * 1000 - 1);
    expect(await service.deleteExpired()).toBe(0);
    expect(await repository.findInvitation(id)).toMatchObject({ email: 'never@example.com' });
    await expect(service.register(id, 'password1', 'password1')).rejects.toThrow(/expired/);
    advance(1);
    expect(await service.deleteExpired()).toBe(1);
    expect(await repository.findInvitation(id)).toBeNull();
    const refused = service.register(id, 'password1', 'password1');
    await expect(refused).rejects.toBeInstanceOf(NotFoundError);
    await expect(refused).rejects.toThrow('This invitation is not valid: it has expired or was never sent');
  });

  it('an invitation for a registered address answers as for a new one and mails the holder that they have an account', async () => {
    const { service, mailer } = setup();
    const id = await service.invite('held@example.com', []);
    await service.register(id, 'password1', 'password1');
    await expect(service.invite(' Held@Example.com ', [])).resolves.toMatch(/^[0-9a-f-]{36}$/);
    await service.mailSent();
    const mail = mailer.sent.at(-1)!;
    expect(mail.to).toBe('held@example.com');
    expect(mail.text).toMatch(/already has an account/);
    expect(mail.text).toContain('https://cards.example/auth/forgot');
    expect(mail.text).not.toMatch(/auth\/register\//);
  });

  it('a reset request answers before its mail is sent, so a slow mail server reveals no account', async () => {
    const mailer = new HeldMailer();
    const { service } = setup(new Date(), mailer);
    await service.register(await service.invite('slow@example.com', []), 'password1', 'password1');
    mailer.hold();
    const outcome = await Promise.race([service.requestPasswordReset('slow@example.com').then(() => 'answered'), mailer.sending.then(() => 'waited for the mail')]);
    mailer.release();
    await service.mailSent();
    expect(outcome).toBe('answered');
    expect(mailer.sent.map((m) => m.subject)).toEqual(['You are invited to the Card Library', 'Reset your Card Library password']);
  });

  it('an invitation fails as unavailable (503, not 500) when its mail cannot be sent, for a new and a registered address alike, so the inviter can retry', async () => {
    const mailer = new RecordingMailer();
    const { service } = setup(new Date(), mailer);
    await service.register(await service.invite('held@example.com', []), 'password1', 'password1');
    mailer.send = () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.5:25'));
    for (const email of ['new@example.com', 'held@example.com']) {
      const failure = await service.invite(email, []).then(() => undefined, (err: unknown) => err);
      expect(failure).toBeInstanceOf(UnavailableError);
      expect(failure).toMatchObject({ message: 'The invitation mail could not be sent; try again later' });
    }
  });

  it('an invitation to an address the mail server refuses for good (no such mailbox) fails as bad input (400), not "try again later", for a new and a registered address alike', async () => {
    const mailer = new RecordingMailer();
    const { service } = setup(new Date(), mailer);
    await service.register(await service.invite('gone@example.com', []), 'password1', 'password1');
    mailer.send = () => Promise.reject(new RecipientRefusedError('550 5.1.1 <gone@example.com>: Recipient address rejected: User unknown'));
    for (const email of ['nobody@example.com', 'gone@example.com']) {
      const failure = await service.invite(email, []).then(() => undefined, (err: unknown) => err);
      expect(failure).toBeInstanceOf(InvalidArgumentError);
      expect(failure).toMatchObject({ message: INVITATION_ADDRESS_REFUSED });
    }
  });

  it('a reset mail the mail server did not take (down, a temporary refusal) is tried again after the answer, so a blip does not lose it; not one it refused for good', async () => {
    const mailer = new RecordingMailer();
    const { service } = setup(new Date(), mailer, undefined, [0, 0]);
    await service.register(await service.invite('blip@example.com', []), 'password1', 'password1');
    const send = mailer.send.bind(mailer);
    const failures = [new Error('connect ECONNREFUSED 10.0.0.5:25'), Object.assign(new Error('451 4.3.0 try again later'), { responseCode: 451 })];
    let attempts = 0;
    mailer.send = async (mail) => {
      attempts++;
      const failure = failures.shift();
      if (failure) throw failure;
      await send(mail);
    };
    await service.requestPasswordReset('blip@example.com');
    await service.mailSent();
    expect(attempts).toBe(3);
    expect(mailer.sent.map((m) => m.subject)).toEqual(['You are invited to the Card Library', 'Reset your Card Library password']);

    attempts = 0;
    mailer.send = async () => {
      attempts++;
      throw new RecipientRefusedError('550 5.1.1 User unknown');
    };
    await service.requestPasswordReset('blip@example.com');
    await service.mailSent();
    expect(attempts).toBe(1);

    attempts = 0;
    mailer.send = async () => {
      attempts++;
      throw new Error('connect ECONNREFUSED 10.0.0.5:25');
    };
    await service.requestPasswordReset('blip@example.com');
    await service.mailSent();
    expect(attempts).toBe(3);
  });

  it('counts mails sent and failed by kind in card_library_mails_total (no address in the labels)', async () => {
    const count = async (kind: string, outcome: string) =>
      (await serviceMetrics.getSingleMetric('card_library_mails_total')!.get()).values.find((v) => v.labels.kind === kind && v.labels.outcome === outcome)?.value ?? 0;
    const before = { invitation: await count('invitation', 'sent'), reset: await count('password_reset', 'sent'), failed: await count('invitation', 'failed'), resetFailed: await count('password_reset', 'failed') };
    const mailer = new RecordingMailer();
    const { service } = setup(new Date(), mailer);
    await service.register(await service.invite('counted@example.com', []), 'password1', 'password1');
    await service.requestPasswordReset('counted@example.com');
    await service.mailSent();
    expect(await count('invitation', 'sent')).toBe(before.invitation + 1);
    expect(await count('password_reset', 'sent')).toBe(before.reset + 1);
    mailer.send = () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.5:25'));
    await expect(service.invite('other@example.com', [])).rejects.toBeInstanceOf(UnavailableError);
    await service.requestPasswordReset('counted@example.com');
    await service.mailSent();
    expect(await count('invitation', 'failed')).toBe(before.failed + 1);
    expect(await count('password_reset', 'failed')).toBe(before.resetFailed + 1);
  });

  it('no reset mail is sent for an unknown address, and no error reveals it', async () => {
    const { service, mailer } = setup();
    await expect(service.requestPasswordReset('ghost@example.com')).resolves.toBeUndefined();
    await service.mailSent();
    expect(mailer.sent).toHaveLength(0);
  });

  it('passwords are stored hashed, never as given', async () => {
    const { service } = setup();
    const id = await service.invite('h@example.com', []);
    const user = await service.register(id, 'password1', 'password1');
    expect(user.passwordHash).not.toContain('password1');
    expect(user.passwordHash).toMatch(/^scrypt\$/);
  });

  it('clearing the username is refused while the e-mail is hidden', async () => {
    const { service } = setup();
    const id = await service.invite('p@example.com', []);
    const user = await service.register(id, 'password1', 'password1');
    await service.updateProfile(user.id, { username: 'pat', visibleEmail: false });
    await expect(service.updateProfile(user.id, { username: '' })).rejects.toThrow(/visible_email/);
    await expect(service.updateProfile(user.id, { username: '', visibleEmail: true })).resolves.toMatchObject({ username: null, visibleEmail: true });
  });

  it('keeps the website trimmed, refuses one with spaces inside and leaves the profile as it was', async () => {
    const { service } = setup();
    const id = await service.invite('w@example.com', []);
    const user = await service.register(id, 'password1', 'password1');
    await expect(service.updateProfile(user.id, { website: ' https://w.example/me ' })).resolves.toMatchObject({ website: 'https://w.example/me' });
    await expect(service.updateProfile(user.id, { website: 'https://w.example/my\npage', username: 'wendy' })).rejects.toThrow(/website/);
    await expect(service.getUsers([user.id])).resolves.toMatchObject([{ website: 'https://w.example/me', username: null }]);
    await expect(service.updateProfile(user.id, { website: '   ' })).resolves.toMatchObject({ website: null });
  });

  it('a login with the old password that races a reset opens no session that outlives the new password', async () => {
    const gate = new StoreGate();
    const { service, mailer } = setup(new Date(), new RecordingMailer(), gate);
    await service.register(await service.invite('race@example.com', []), 'old password', 'old password');
    await service.requestPasswordReset('race@example.com');
    await service.mailSent();
    const resetId = /auth\/password\/([0-9a-f-]{36})/.exec(mailer.sent.at(-1)!.text)![1]!;
    // The login has checked the old password and is about to store its session when the reset runs whole.
    const held = gate.holdNext('createSession');
    const login = service.login('race@example.com', 'old password');
    await held.reached;
    await service.resetPassword(resetId, 'new password', 'new password');
    held.release();
    const { token } = await login;
    await expect(service.resolveSession(token)).rejects.toThrow(/Not logged in/);
    await expect(service.resolveSessions([token])).resolves.toEqual([null]);
    // The new password opens a session that works.
    await expect(service.resolveSession((await service.login('race@example.com', 'new password')).token)).resolves.toMatchObject({ email: 'race@example.com' });
  });

  it('two profile changes of different fields at once both hold', async () => {
    const gate = new StoreGate();
    const { service } = setup(new Date(), new RecordingMailer(), gate);
    const user = await service.register(await service.invite('both@example.com', []), 'password1', 'password1');
    // The website change is about to write when the username change runs whole.
    const held = gate.holdNext('updateProfile');
    const website = service.updateProfile(user.id, { website: 'https://both.example' });
    await held.reached;
    await service.updateProfile(user.id, { username: 'both_fields' });
    held.release();
    await expect(website).resolves.toMatchObject({ website: 'https://both.example', username: 'both_fields' });
    await expect(service.getUsers([user.id])).resolves.toMatchObject([{ website: 'https://both.example', username: 'both_fields', visibleEmail: true }]);
  });

  it('hiding the e-mail while another request clears the username is refused, so the e-mail is never hidden without a username', async () => {
    const gate = new StoreGate();
    const { service } = setup(new Date(), new RecordingMailer(), gate);
    const user = await service.register(await service.invite('hide@example.com', []), 'password1', 'password1');
    await service.updateProfile(user.id, { username: 'hider' });
    const held = gate.holdNext('updateProfile');
    const hide = service.updateProfile(user.id, { visibleEmail: false });
    await held.reached;
    await expect(service.updateProfile(user.id, { username: '' })).resolves.toMatchObject({ username: null, visibleEmail: true });
    held.release();
    await expect(hide).rejects.toThrow(/visible_email: can be false only when a username is set/);
    await expect(service.getUsers([user.id])).resolves.toMatchObject([{ username: null, visibleEmail: true }]);
  });
});

describe('IdentityService on an identity file of the version before the second username key', () => {
  it('"will" and "wiII" (capital i\'s), two users there, both still log in and keep their names; no one else takes either', async () => {
    const path = join(testTempDir('identity-'), 'identity.db');
    const hasher = new ScryptPasswordHasher(1024);
    // The file as that version (migration 4) wrote it: each name under its usernameKey, "will" and "wiii".
    const old = openSqlite(path, MIGRATIONS.slice(0, 4));
    const insert = old.prepare('INSERT INTO users (id, email, username, username_key, website, visible_email, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, 1, ?, ?, ?)');
    const holders = [
      { id: '00000000-0000-4000-8000-000000000001', email: 'will@example.com', username: 'will', day: '01' },
      { id: '00000000-0000-4000-8000-000000000002', email: 'capital-i@example.com', username: 'wiII', day: '02' },
    ];
    for (const { id, email, username, day } of holders) {
      const when = `2026-01-${day}T00:00:00.000Z`;
      insert.run(id, email, username, usernameKey(username), await hasher.hash(`${username} password`), when, when);
    }
    old.close();
    const service = new IdentityService({
      repository: new SqliteIdentityRepository(path),
      mailer: new RecordingMailer(),
      hasher,
      tokens: new JwtTokenSigner('s'.repeat(40)),
      publicUrl: 'https://cards.example',
      logger: createLogger('test', 'silent'),
      now: () => new Date(),
    });
    for (const { email, username } of holders) {
      const { token, user } = await service.login(email, `${username} password`);
      expect(user.username).toBe(username);
      await expect(service.resolveSession(token)).resolves.toMatchObject({ email, username });
    }
    const newer = await service.register(await service.invite('newer@example.com', []), 'password1', 'password1');
    for (const username of ['will', 'Will', 'wiII', 'WILL']) await expect(service.updateProfile(newer.id, { username })).rejects.toThrow(/username: already taken/);
    await expect(service.updateProfile(newer.id, { username: 'wiii' })).rejects.toThrow(/username: already taken/);
    // "will" renames away: "wiII" still reads as "will", so the name stays taken.
    await expect(service.updateProfile(holders[0]!.id, { username: 'william' })).resolves.toMatchObject({ username: 'william' });
    for (const username of ['will', 'Will']) await expect(service.updateProfile(newer.id, { username })).rejects.toThrow(/username: already taken/);
    await expect(service.updateProfile(newer.id, { username: 'willow' })).resolves.toMatchObject({ username: 'willow' });
  });
});
