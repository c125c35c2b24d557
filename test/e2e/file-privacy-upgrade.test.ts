import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { freePort, startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { testTempDir } from '../support/cleanup';

// An upgrade from a store whose cards did not keep their file's privacy (the migration gave them the privacy of the
// file's collection, else of their hidden-by-file mark) and whose file collections could be published by hand while
// their file was private: after the restart the cards service asks the files service once, and no other user sees the
// private file's id or name on a public card of its owner's nor in her collection listing. All-in-one on SQLite: the
// test writes the earlier version's state into the cards database while the system is stopped.

const MIME_DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

let mailbox: Mailbox;
let dataDir: string;
let system: RunningSystem | undefined;
let alice: TestUser;
let bob: TestUser;
/** The same address before and after the restart, so the users' sessions (clients) go on working. */
let env: Record<string, string>;

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  dataDir = testTempDir('cards-file-privacy-upgrade-');
  env = { SMTP_URL: mailbox.url, PORT: String(await freePort()) };
  system = await startSystem({ dataDir, env });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'alice'), signUp(system.baseUrl, mailbox, 'bob')]);
}, 120_000);

afterAll(async () => {
  await system?.stop();
  await mailbox?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function waitUntil<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

it("after the upgrade, others see a private file's id and name neither on its owner's public cards nor in her collection listing", async () => {
  const fileName = `secret-merger-plan-${randomUUID().slice(0, 8)}.docx`;
  const bytes = readFileSync(join(__dirname, '../fixtures/documents/energy.docx'));
  const uploaded = await alice.client.post('/api/file', { base64_docx_file: bytes.toString('base64url'), file_name: fileName, file_mime_type: MIME_DOCX, private: true });
  expect(uploaded.status).toBe(200);
  const fileId = uploaded.json.id;
  await waitUntil('the ingestion', async () => ((await alice.client.get(`/api/file/${fileId}`)).json?.ingestion_status === 'done' ? true : undefined));
  // Public by her choice while the file is private.
  const words = Array.from({ length: 80 }, () => randomUUID().slice(0, 8)).join(' ');
  const created = await alice.client.post('/api/card', { card_html: `<p>${words}</p>`, link: '', private: false, file_uuid: fileId });
  expect(created.status).toBe(200);
  const cardId = created.json.card_metadata.id;
  await system!.stop();
  system = undefined;

  // The earlier version's state: the card took the privacy of the file's collection, published by hand, and the
  // backfill was never run.
  const db = new Database(join(dataDir, 'cards', 'cards.db'));
  db.prepare('UPDATE collections SET is_public = 1 WHERE file_id = ?').run(fileId);
  db.prepare('UPDATE cards SET file_private = 0 WHERE file_id = ?').run(fileId);
  db.prepare('DELETE FROM one_time_tasks').run();
  db.close();

  system = await startSystem({ dataDir, env });
  const anonymous = new ApiClient(system.baseUrl);
  const seenBy = async (client: ApiClient) => {
    const [card, listing] = await Promise.all([client.get(`/api/card/${cardId}`), client.get(`/api/user/collections/${alice.id}`)]);
    const text = card.text + listing.text;
    return { cardStatus: card.status, namesFile: text.includes(fileId) || text.includes(fileName) };
  };
  for (const client of [bob.client, anonymous]) {
    await waitUntil('the private file hidden from others', async () => {
      const seen = await seenBy(client);
      return JSON.stringify(seen) === JSON.stringify({ cardStatus: 200, namesFile: false }) ? seen : undefined;
    });
  }
  // Her card stays public, and she still sees her file on it and her collection, private now as its file is.
  expect((await alice.client.get(`/api/card/${cardId}`)).json).toMatchObject({ file_id: fileId, file_name: fileName });
  const own = (await alice.client.get(`/api/user/collections/${alice.id}`)).json as any[];
  expect(own.find((c) => c.file_id === fileId)).toMatchObject({ is_public: false });
}, 180_000);
