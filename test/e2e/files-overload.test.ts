import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { signUp, type TestUser } from '../support/accounts';
import { eventuallyDefined } from '../support/eventually';
import type { ApiResponse } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';

// Uploads beyond the bounds on parser workers (files) and on upload bodies held at once (gateway) are answered 503 with
// a message and Retry-After; every accepted one is stored and ingested, none is lost or answered 500.
const FIXTURES = join(__dirname, '../fixtures/documents');
const MAX_FILE_BYTES = 2 * 1024 * 1024;
const MIME = { doc: 'application/msword', pdf: 'application/pdf' } as const;
// Both formats are checked by their library in a parser worker at upload.
const DOCUMENTS = ['coffee.pdf', 'history.doc'] as const;
const PARSER_BUSY = 'The service is busy reading other documents; upload the file again in a few seconds';
const UPLOADS_BUSY = 'Too many uploads are under way; upload the file again in a few seconds';
const OWN_UPLOADS_BUSY = 'You have too many uploads under way; upload the file again when one has finished';

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({
    env: {
      SMTP_URL: mailbox.url,
      MAX_FILE_BYTES: String(MAX_FILE_BYTES),
      // One document read at a time and no upload waiting for it: a second upload check at the same moment is refused.
      PARSER_WORKERS: '1',
      PARSER_QUEUE: '0',
      // One upload body of the largest size at a time (smaller ones count by their size), none waiting.
      UPLOADS_AT_ONCE: '1',
      UPLOAD_QUEUE: '0',
    },
  });
  alice = await signUp(system.baseUrl, mailbox, 'alice');
}, 120_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

function upload(name: string, bytes: Buffer): Promise<ApiResponse> {
  const ext = name.split('.').pop() as keyof typeof MIME;
  return alice.client.post('/api/file', { base64_docx_file: bytes.toString('base64url'), file_name: name, file_mime_type: MIME[ext], private: false });
}

function expectBusy(res: ApiResponse, message: string): void {
  expect(res.json).toEqual({ message });
  expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
}

async function ingestionOf(fileId: string): Promise<any> {
  return eventuallyDefined(
    async () => {
      const res = await alice.client.get(`/api/file/${fileId}`);
      return res.json?.ingestion_status !== 'pending' ? res.json : undefined;
    },
    `ingestion of ${fileId}`,
    120_000,
  );
}

it('concurrent uploads beyond the parser workers are stored and ingested or refused 503, none lost', async () => {
  const names = Array.from({ length: 12 }, (_, i) => DOCUMENTS[i % DOCUMENTS.length]!);
  const answers = await Promise.all(names.map((name) => upload(name, readFileSync(join(FIXTURES, name)))));

  for (const res of answers) {
    expect([200, 503]).toContain(res.status);
    if (res.status === 503) expectBusy(res, PARSER_BUSY);
  }
  const accepted = answers.filter((res) => res.status === 200).map((res) => res.json.id as string);
  expect(accepted.length).toBeGreaterThan(0);
  expect(accepted.length).toBeLessThan(answers.length);

  // Exactly the accepted files are stored, and each is ingested into cards.
  const listing = await alice.client.get(`/api/user/files/${alice.id}`);
  expect(listing.json.map((f: { id: string }) => f.id).sort()).toEqual([...accepted].sort());
  for (const id of accepted) {
    const file = await ingestionOf(id);
    expect({ id, status: file.ingestion_status, error: file.ingestion_error }).toEqual({ id, status: 'done', error: null });
  }

  // The workers were given back: an upload now is accepted.
  const again = await upload('coffee.pdf', readFileSync(join(FIXTURES, 'coffee.pdf')));
  expect(again.status).toBe(200);
  expect((await ingestionOf(again.json.id)).ingestion_status).toBe('done');
}, 300_000);

it('concurrent uploads of the largest size beyond what the gateway holds at once are refused 503 (429 beyond the user\'s share) before their body is read', async () => {
  // Near MAX_FILE_BYTES and not a PDF: the files service refuses each at once (400), the gateway holds it meanwhile.
  const large = Buffer.alloc(MAX_FILE_BYTES - 1024, 'not a pdf ');
  const answers = await Promise.all(Array.from({ length: 6 }, () => upload('large.pdf', large)));

  // One user's further uploads beyond half the bound are refused 429 at once (the bound's own 503 is left to others).
  for (const res of answers) {
    expect([400, 429, 503]).toContain(res.status);
    if (res.status === 503) expectBusy(res, UPLOADS_BUSY);
    else if (res.status === 429) expectBusy(res, OWN_UPLOADS_BUSY);
    else expect(res.json.message).toMatch(/^base64_docx_file: /);
  }
  expect(answers.some((res) => res.status === 429 || res.status === 503)).toBe(true);
  expect(answers.some((res) => res.status === 400)).toBe(true);

  // Small uploads count by their size: one goes through after the large ones.
  const small = await upload('coffee.pdf', readFileSync(join(FIXTURES, 'coffee.pdf')));
  expect(small.status).toBe(200);
}, 120_000);
