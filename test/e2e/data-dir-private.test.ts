/**
 * The data dir is private to the service's user (docs/security.md, "The data dir is private"): the embedded default made
 * its .eml mail (live reset links), identity.db (sessions, password hashes) and the cards and files stores 0644 in 0755
 * directories, readable by every local user (mail audit). Directories are 0700 and files 0600 now, and a data dir an
 * earlier release left open is made 0700 at start, which closes everything under it.
 */
import { chmodSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testTempDir } from '../support/cleanup';
import { eventuallyDefined } from '../support/eventually';
import { ApiClient } from '../support/http';
import { startSystem } from '../support/service';

const modeOf = (path: string) => `0${(statSync(path).mode & 0o777).toString(8)}`;

/** Every path under `root` with its mode, directories and files apart. */
function modesUnder(root: string): { dirs: Record<string, string>; files: Record<string, string> } {
  const dirs: Record<string, string> = {};
  const files: Record<string, string> = {};
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath ?? entry.path, entry.name);
    const name = path.slice(root.length + 1);
    if (entry.isDirectory()) dirs[name] = modeOf(path);
    else if (entry.isFile()) files[name] = modeOf(path);
  }
  return { dirs, files };
}

/** Asks for an invitation: without SMTP_URL it is written as an .eml file under DATA_DIR/mail. */
async function mailAnInvitation(baseUrl: string, dataDir: string): Promise<void> {
  const email = `private-${Date.now()}@example.com`;
  expect((await new ApiClient(baseUrl).post('/api/invitation', { email, referral_tokens: [] })).status).toBe(200);
  const mailed = async () => {
    try {
      return readdirSync(join(dataDir, 'mail')).some((name) => name.endsWith('.eml')) || undefined;
    } catch {
      return undefined;
    }
  };
  await eventuallyDefined(mailed, 'the invitation written as an .eml file');
}

describe('the data dir of the all-in-one', () => {
  it('is made 0700 with every directory under it 0700 and every file 0600', async () => {
    const dataDir = join(testTempDir('cards-private-'), 'data');
    const system = await startSystem({ dataDir });
    try {
      await mailAnInvitation(system.baseUrl, dataDir);
      expect(modeOf(dataDir)).toBe('0700');
      const { dirs, files } = modesUnder(dataDir);
      // The embedded stores, unless the suite runs against shared engines (MONGO_URL, KAFKA_BROKERS in the environment).
      const stores = process.env.MONGO_URL ? [] : ['identity/identity.db', 'cards/cards.db', 'files/files.db'];
      expect(Object.keys(files)).toEqual(expect.arrayContaining(['identity/jwt-secret', ...stores]));
      expect(Object.keys(files).some((name) => name.startsWith('mail/') && name.endsWith('.eml'))).toBe(true);
      expect(Object.entries(dirs).filter(([, mode]) => mode !== '0700')).toEqual([]);
      expect(Object.entries(files).filter(([, mode]) => mode !== '0600')).toEqual([]);
      expect(system.logs()).not.toMatch(/made the data dir private/);
    } finally {
      await system.stop();
    }
  });

  it('left open (0755, 0644) by an earlier release is made 0700 at start, once logged, and what is new is 0600', async () => {
    const dataDir = testTempDir('cards-private-old-');
    mkdirSync(join(dataDir, 'mail'), { recursive: true });
    writeFileSync(join(dataDir, 'mail', 'old-reset.eml'), 'a reset link of an earlier release');
    chmodSync(join(dataDir, 'mail', 'old-reset.eml'), 0o644);
    chmodSync(join(dataDir, 'mail'), 0o755);
    chmodSync(dataDir, 0o755);
    const system = await startSystem({ dataDir });
    try {
      expect(modeOf(dataDir)).toBe('0700');
      expect(system.logs().match(/made the data dir private/g)).toHaveLength(1);
      expect(system.logs()).toMatch(/mode 0755/);
      await mailAnInvitation(system.baseUrl, dataDir);
      const { files } = modesUnder(dataDir);
      // The old content keeps its mode: the data dir's 0700 closes it.
      expect(files['mail/old-reset.eml']).toBe('0644');
      const made = Object.entries(files).filter(([name]) => name !== 'mail/old-reset.eml');
      expect(made.length).toBeGreaterThan(3);
      expect(made.filter(([, mode]) => mode !== '0600')).toEqual([]);
    } finally {
      await system.stop();
    }
  });
});
