import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startIdentity } from '../src/main';
import { testTempDir } from '../../../test/support/cleanup';

const dataDirWithSecret = (content: string | undefined) => {
  const dir = testTempDir('identity-secret-');
  if (content !== undefined) {
    mkdirSync(join(dir, 'identity'));
    writeFileSync(join(dir, 'identity', 'jwt-secret'), content, { mode: 0o600 });
  }
  return dir;
};
const envFor = (dataDir: string) => ({ DATA_DIR: dataDir, IDENTITY_GRPC_PORT: '0', PASSWORD_HASH_COST: '1024' });

describe('the session secret kept in DATA_DIR', () => {
  it('is generated once, readable by the owner only, and kept across starts', async () => {
    const dir = dataDirWithSecret(undefined);
    const first = await startIdentity(envFor(dir));
    await first.stop();
    const path = join(dir, 'identity', 'jwt-secret');
    const secret = readFileSync(path, 'utf8');
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(statSync(path).mode & 0o077).toBe(0);
    const second = await startIdentity(envFor(dir));
    await second.stop();
    expect(readFileSync(path, 'utf8')).toBe(secret);
  });

  it.each([
    ['emptied', ''],
    ['truncated', 'Zm9vYmFy\n'],
  ])('stops the start when the file is %s, instead of signing sessions anyone could forge', async (_, content) => {
    const started = startIdentity(envFor(dataDirWithSecret(content))).then(async (running) => {
      await running.stop();
      return 'started';
    });
    await expect(started).rejects.toThrow(/jwt-secret holds a secret shorter than 32 characters/);
  });
});
