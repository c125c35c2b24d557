import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { rmdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';
import { eventually } from './openapi-support';
import { testTempDir } from '../support/cleanup';

// The all-in-one with its DATA_DIR on a small tmpfs that fills up while cards are written and delivered: every write
// answers 200 or 503 "Storage is full" (never a 500, never a success not stored), the process lives on, and once space
// is freed every acknowledged card is found by search with nothing in the dead letters. Needs mount(8) (root); skipped
// with a printed reason otherwise.

const mountPoint = testTempDir('cards-disk-full-');
const mountRefused = ((): string | undefined => {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', mountPoint], { stdio: 'pipe' });
    return undefined;
  } catch (err) {
    rmdirSync(mountPoint);
    return String((err as { stderr?: Buffer }).stderr ?? err).trim() || 'mount failed';
  }
})();
if (mountRefused) console.log(`disk-full.test.ts skipped: cannot mount a small tmpfs for the data dir (${mountRefused}); run it as root`);
const describeOnTmpfs = mountRefused ? describe.skip : describe;

const dataDir = join(mountPoint, 'data');
const fillers = join(mountPoint, 'fillers');
let mailbox: Mailbox;
let system: RunningSystem;
let user: TestUser;

/** Fills the file system with files of zeros, in shrinking chunks, until less than `leave` bytes are free. */
function fillUp(leave: number): void {
  execFileSync('mkdir', ['-p', fillers]);
  let n = 0;
  for (let chunk = 4 * 1024 * 1024; chunk >= 4096; chunk /= 4) {
    for (;;) {
      const free = statfsSync(mountPoint).bavail * statfsSync(mountPoint).bsize;
      if (free < leave + chunk) break;
      try {
        writeFileSync(join(fillers, `f${n++}`), Buffer.alloc(chunk));
      } catch {
        break;
      }
    }
  }
}

async function createCard(word: string): Promise<{ status: number; body: { message?: string; card_metadata?: { id: string } } }> {
  const res = await user.client.post('/api/card', { card_html: html(`${uniqueText()} ${word}`), link: '', private: false });
  return { status: res.status, body: res.json };
}

async function found(word: string, id: string): Promise<boolean> {
  const res = await user.client.post('/api/card/search/1', { content: word });
  return res.status === 200 && (res.json.score_cards as { metadata: { id: string }[] }[]).some((c) => c.metadata[0]!.id === id);
}

describeOnTmpfs('the all-in-one on a data dir whose file system fills up', () => {
  beforeAll(async () => {
    mailbox = new Mailbox();
    await mailbox.start();
    system = await startSystem({ dataDir, env: { SMTP_URL: mailbox.url, DATA_DIR_FREE_WARNING_MB: '8' } });
    user = await signUp(system.baseUrl, mailbox, 'disk-full');
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await mailbox?.stop();
    try {
      execFileSync('umount', [mountPoint], { stdio: 'pipe' });
      rmdirSync(mountPoint);
    } catch (err) {
      console.log(`disk-full.test.ts: could not unmount ${mountPoint}: ${String(err)}`);
    }
  });

  it('answers 200 or 503 "Storage is full" while full, lives on, and indexes every acknowledged card once there is room', async () => {
    const acknowledged = new Map<string, string>(); // word -> card id
    const refused: string[] = [];
    const write = async (word: string) => {
      const { status, body } = await createCard(word);
      if (status !== 200 && status !== 503) throw new Error(`POST /api/card: ${status} ${JSON.stringify(body)}`);
      if (status === 200) acknowledged.set(word, body.card_metadata!.id);
      else {
        expect(body.message).toMatch(/^Storage is full/);
        refused.push(word);
      }
    };
    // Room for a few cards only: the system's own writes fill the disk, the last cards accepted meeting it on their way
    // to the index (the consumers' writes, the outbox relays, the event log), then the refusals begin.
    fillUp(1024 * 1024);
    for (let i = 0; i < 400 && refused.length < 5; i++) await write(`whilefilling${i}xq${Date.now()}`);
    fillUp(0);
    for (let i = 0; i < 3; i++) await write(`whilefull${i}xq${Date.now()}`);
    expect(refused.length).toBeGreaterThan(0);
    // Longer than a consumer's 8 counted tries take (~13 s): a full disk must not count, or the cards accepted last would
    // be dead letters, never searchable. The process must not exit meanwhile.
    await new Promise((r) => setTimeout(r, 15_000));
    expect(system.process.exitCode).toBeNull();
    const logout = await user.client.get('/api/auth');
    expect(logout.status).toBe(200); // reads still work, the session too

    rmSync(fillers, { recursive: true, force: true });
    await write(`afterfull0xq${Date.now()}`);
    expect(acknowledged.size).toBeGreaterThanOrEqual(4);
    for (const [word, id] of acknowledged) await eventually(`card ${id} (${word}) to be found by search`, () => found(word, id), 60_000, 500);
    expect(system.process.exitCode).toBeNull();
    const events = new Database(join(dataDir, 'events', 'events.db'), { readonly: true });
    try {
      expect(events.prepare('SELECT group_id, topic, seq, error FROM dead_letters').all()).toEqual([]);
    } finally {
      events.close();
    }
    expect(system.logs()).not.toMatch(/"msg":"unexpected error in gRPC handler"/);
    if (process.env.DISK_FULL_TEST_VERBOSE) console.log({ acknowledged: acknowledged.size, refused: refused.length }, system.logs());
  }, 240_000);
});
