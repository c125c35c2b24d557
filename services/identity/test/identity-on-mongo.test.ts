import { randomBytes } from 'node:crypto';
import { connectMongo, createGrpcClient, createLogger } from '@cards/platform';
import { identity } from '@cards/proto';
import { startIdentity } from '../src/main';
import { MongoIdentityRepository } from '../src/adapters/mongo/mongo-identity-repository';
import { ScryptPasswordHasher } from '../src/adapters/crypto/scrypt-password-hasher';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { testTempDir } from '../../../test/support/cleanup';

// The composition root with MONGO_URL: the identity service keeps its data in MongoDB, not in
// DATA_DIR, so a restarted instance with a fresh data directory still knows the user.
// The service's logger reads LOG_LEVEL from the process environment, not from the env it is given.
process.env.LOG_LEVEL ??= 'fatal';
const { engine, skipReason } = engineForSuite('mongo-java-server', startMongoSync);

(engine ? describe : describe.skip)(`identity service on MongoDB (MONGO_URL)${skipReason ? ` — skipped: ${skipReason.split('\n')[0]}` : ''}`, () => {
  const env = (dataDir: string) => ({
    DATA_DIR: dataDir,
    IDENTITY_GRPC_HOST: '127.0.0.1',
    IDENTITY_GRPC_PORT: '0',
    MONGO_URL: `${engine!.url}/?appName=identity-test-${randomBytes(3).toString('hex')}`,
    JWT_SECRET: 'j'.repeat(40),
    PASSWORD_HASH_COST: '1024',
    LOG_LEVEL: 'fatal',
  });

  it('registers, logs in and still resolves the session after a restart with a new DATA_DIR', async () => {
    const first = await startIdentity(env(testTempDir('identity-mongo-')));
    const email = `mongo-${randomBytes(4).toString('hex')}@example.com`;
    let token: string;
    try {
      const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, first.address);
      const { invitationId } = await client.createInvitation({ email, referralTokens: [] });
      const user = await client.register({ invitationId, password: 'correct horse battery', passwordConfirmation: 'correct horse battery' });
      expect(user.email).toBe(email);
      ({ token } = await client.login({ email, password: 'correct horse battery' }));
      channel.close();
    } finally {
      await first.stop();
    }
    const second = await startIdentity(env(testTempDir('identity-mongo-')));
    try {
      const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, second.address);
      expect((await client.resolveSession({ token })).email).toBe(email);
      channel.close();
    } finally {
      await second.stop();
    }
  });

  it("shows an e-mail's domain in Unicode for accounts stored as typed (before the ASCII rule), in ASCII (since) and new; every spelling finds them", async () => {
    const tag = randomBytes(4).toString('hex');
    const connection = await connectMongo({ url: engine!.url, database: 'identity', logger: createLogger('identity-test', 'fatal') });
    const repository = await MongoIdentityRepository.open(connection);
    const passwordHash = await new ScryptPasswordHasher(1024).hash('password1');
    const now = new Date();
    for (const [id, email] of [[`typed-${tag}`, `typed-${tag}@b\u00fccher.example`], [`ascii-${tag}`, `ascii-${tag}@xn--bcher-kva.example`]] as const) {
      await repository.createInvitation({ id: `i-${id}`, email, referralTokens: [], createdAt: now, expiresAt: new Date(now.getTime() + 60_000), usedAt: null });
      await repository.registerFromInvitation(`i-${id}`, { id, email, username: null, website: null, visibleEmail: true, passwordHash, passwordVersion: 0, createdAt: now, updatedAt: now }, now);
    }
    const service = await startIdentity(env(testTempDir('identity-mongo-')));
    try {
      const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, service.address);
      for (const local of [`typed-${tag}`, `ascii-${tag}`]) {
        for (const email of [`${local}@b\u00fccher.example`, `${local}@bu\u0308cher.example`, `${local}@XN--BCHER-KVA.example`]) {
          expect((await client.login({ email, password: 'password1' })).user?.email).toBe(`${local}@b\u00fccher.example`);
        }
      }
      const { invitationId } = await client.createInvitation({ email: `new-${tag}@xn--bcher-kva.example`, referralTokens: [] });
      const user = await client.register({ invitationId, password: 'password1', passwordConfirmation: 'password1' });
      expect(user.email).toBe(`new-${tag}@b\u00fccher.example`);
      expect((await repository.findUserById(user.id))?.email).toBe(`new-${tag}@xn--bcher-kva.example`);
      channel.close();
    } finally {
      await service.stop();
      await repository.close();
    }
  });

  it('fails to start, naming MONGO_URL, when the server is unreachable', async () => {
    await expect(startIdentity({ ...env(testTempDir('identity-mongo-')), MONGO_URL: 'mongodb://127.0.0.1:1/' })).rejects.toThrow(
      /MongoDB at mongodb:\/\/127\.0\.0\.1:1\/.* is unreachable \(MONGO_URL\)/,
    );
  });
});
