import { existsSync, readdirSync, readFileSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '@cards/platform';
import { signUp, type TestUser } from '../support/accounts';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';

// The files service SIGKILLed in the middle of an upload, between storing its bytes and storing its record (the
// production topology, every service its own process, on the embedded stores): the test holds files.db's write lock,
// so the record's insert waits in SQLite's busy_timeout, and kills files once the bytes are in DATA_DIR/files/objects.
// The user was answered 503 and has no such file; before, those bytes stayed in the object store for ever (nothing
// points at them). Now the next start removes them once the upload's marker is older than an hour (aged here).
// Embedded only: it locks DATA_DIR/files/files.db and reads the objects directory.

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const DOCS = join(__dirname, '../fixtures/documents');

let mailbox: Mailbox;
let system: RunningSystem;
let author: TestUser;
let kept: string;
let cut: string;
let uploadStatus: number | undefined;

const objectsDir = () => join(system.dataDir, 'files', 'objects');
const objects = () => readdirSync(objectsDir()).filter((name) => name !== '.tmp');
const fileIds = (names: string[]) => names.filter((name) => /^[0-9a-f-]{36}$/.test(name));

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, SYSTEM_TOPOLOGY: 'distributed' } });
  author = await signUp(system.baseUrl, mailbox, 'files-kill-upload');
  const body = { base64_docx_file: readFileSync(join(DOCS, 'energy.docx')).toString('base64url'), file_name: 'energy.docx', file_mime_type: DOCX, private: false };
  const first = await author.client.post('/api/file', body);
  expect(first.status).toBe(200);
  kept = first.json.id;
  const before = new Set(objects());

  const store = openSqlite(join(system.dataDir, 'files', 'files.db'));
  try {
    store.exec('BEGIN IMMEDIATE'); // the record's insert waits for this lock
    const answer = author.client.post('/api/file', { ...body, file_name: 'cut.docx' }).then((res) => (uploadStatus = res.status));
    // Its bytes stored, its record waiting: killed now.
    for (;;) {
      const fresh = fileIds(objects()).filter((name) => !before.has(name));
      if (fresh.length > 0) {
        cut = fresh[0]!;
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    await system.killService!('files');
    expect(existsSync(join(objectsDir(), cut))).toBe(true);
    await answer;
  } finally {
    store.exec('ROLLBACK');
    store.close();
  }
  // An hour later, as far as the upload's marker can tell.
  const hourAgo = new Date(Date.now() - 61 * 60 * 1000);
  for (const name of objects().filter((n) => n.includes(cut))) utimesSync(join(objectsDir(), name), hourAgo, hourAgo);
  await system.restartService!('files');
}, 300_000);

afterAll(async () => {
  await system?.stop();
  await mailbox?.stop();
});

it('answers the cut upload 503, lists only the stored file, and the next start removes the cut upload’s bytes', async () => {
  expect(uploadStatus).toBe(503);
  const files = (await author.client.get(`/api/user/files/${author.id}`)).json as { id: string }[];
  expect(files.map((f) => f.id)).toEqual([kept]);
  expect(cut).not.toBe(kept);
  // The sweep runs in the background at start.
  for (let i = 0; i < 600 && objects().some((n) => n.includes(cut)); i++) await new Promise((r) => setTimeout(r, 100));
  expect(objects()).toEqual([kept]);
  expect((await author.client.get(`/api/file/${kept}/download`)).status).toBe(200);
});
