import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteIdentityRepository } from '../src/adapters/sqlite/sqlite-identity-repository';
import { startIdentity } from '../src/main';
import { testTempDir } from '../../../test/support/cleanup';

describe('identity at start on the embedded default', () => {
  it('deletes the sessions and invitations that expired more than a day ago and the .eml files older than MAIL_DIR_RETENTION_HOURS', async () => {
    const dir = testTempDir('identity-sweep-');
    const day = 24 * 3_600_000;
    const now = Date.now();
    mkdirSync(join(dir, 'identity'));
    const dbPath = join(dir, 'identity', 'identity.db');
    const before = new SqliteIdentityRepository(dbPath);
    const expired = { userId: 'u', createdAt: new Date(now - 3 * day), expiresAt: new Date(now - 2 * day), revokedAt: null, passwordVersion: 0 };
    await before.createSession({ id: 'expired', ...expired });
    await before.createSession({ id: 'recently-expired', ...expired, expiresAt: new Date(now - day / 2) });
    await before.createInvitation({ id: 'unconfirmed', email: 'never@example.com', referralTokens: ['r'], createdAt: new Date(now - 3 * day), expiresAt: new Date(now - 2 * day), usedAt: null });
    await before.close();
    mkdirSync(join(dir, 'mail'));
    writeFileSync(join(dir, 'mail', 'old.eml'), 'x');
    utimesSync(join(dir, 'mail', 'old.eml'), new Date(now - 5 * 3_600_000), new Date(now - 5 * 3_600_000));
    writeFileSync(join(dir, 'mail', 'new.eml'), 'x');

    const running = await startIdentity({ DATA_DIR: dir, IDENTITY_GRPC_PORT: '0', PASSWORD_HASH_COST: '1024', MAIL_DIR_RETENTION_HOURS: '4' });
    await running.stop();

    expect(readdirSync(join(dir, 'mail'))).toEqual(['new.eml']);
    const after = new SqliteIdentityRepository(dbPath);
    expect(await after.findSession('expired')).toBeNull();
    expect(await after.findInvitation('unconfirmed')).toBeNull();
    expect(await after.findSession('recently-expired')).not.toBeNull();
    await after.close();
  });
});
