import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp } from '../support/accounts';
import { ApiClient } from '../support/http';
import { testTempDir } from '../support/cleanup';

// A process killed (SIGKILL) in the middle of ingesting a long document: after the restart the
// ingestion resumes from the event log and the document ends with exactly one copy of each card.
const DOCX = readFileSync(join(__dirname, '../fixtures/documents/bench/book-100-pages.docx'));
const PLANNED_CARDS = 250; // what the splitter makes of this document (see bench/files-ingest-bench.ts)

let system: RunningSystem | undefined;
const mailbox = new Mailbox();
const dataDir = testTempDir('cards-files-restart-');

beforeAll(async () => {
  await mailbox.start();
});
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function cardsCreated(client: ApiClient, userId: string): Promise<number> {
  const res = await client.get(`/api/user/${userId}/1`);
  return res.status === 200 ? (res.json.total_cards_created as number) : -1;
}

it('a crash mid-document leaves nothing that blocks the retry, and the retry makes no second copy', async () => {
  const env = { SMTP_URL: mailbox.url };
  system = await startSystem({ env, dataDir });
  const user = await signUp(system.baseUrl, mailbox, 'crash');
  const upload = await user.client.post('/api/file', {
    base64_docx_file: DOCX.toString('base64url'),
    file_name: 'book.docx',
    file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    private: false,
  });
  expect(upload.status).toBe(200);

  // Kill once some, but not all, cards exist.
  const deadline = Date.now() + 60_000;
  let before = 0;
  while (Date.now() < deadline) {
    before = await cardsCreated(user.client, user.id);
    if (before >= 10) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await system.kill();
  expect(before).toBeGreaterThanOrEqual(10);
  expect(before).toBeLessThan(PLANNED_CARDS);

  system = await startSystem({ env, dataDir });
  const client = new ApiClient(system.baseUrl);
  client.cookie = user.client.cookie;
  let file: any;
  const until = Date.now() + 120_000;
  do {
    await new Promise((r) => setTimeout(r, 250));
    file = (await client.get(`/api/file/${upload.json.id}`)).json;
  } while (file?.ingestion_status === 'pending' && Date.now() < until);
  expect(file.ingestion_status).toBe('done');
  expect(await cardsCreated(client, user.id)).toBe(PLANNED_CARDS);

  const collections = await client.get(`/api/user/collections/${user.id}`);
  expect(collections.status).toBe(200);
  const mine = (collections.json as any[]).filter((c) => c.file_id === upload.json.id);
  expect(mine).toHaveLength(1);
  const pages = await client.get(`/api/card_collection/${mine[0].id}/1`);
  expect(pages.status).toBe(200);
  expect(pages.json.total_pages).toBe(Math.ceil(PLANNED_CARDS / 25));
}, 240_000);
