import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { signUp, type TestUser } from '../support/accounts';
import { Mailbox } from '../support/mailbox';
import { pacedUpload, type Pace, type PacedAnswer } from '../support/paced-upload';
import { startSystem, type RunningSystem } from '../support/service';

// An admitted upload whose body arrives below the minimum rate (UPLOAD_MIN_BYTES_PER_SECOND over
// UPLOAD_BODY_RATE_WINDOW_MS, after UPLOAD_BODY_GRACE_MS) is cut: 408 {"message"}, its slot free at once, nothing stored.
// Before, with the one upload slot of UPLOADS_AT_ONCE=1, a trickling client held it until the 300 s request timeout
// and every other user's upload waited UPLOAD_QUEUE_WAIT_MS and was answered 503.
const MAX_FILE_BYTES = 1024 * 1024;
const MIN_BYTES_PER_SECOND = 2048;
const QUEUE_WAIT_MS = 15_000;
const COFFEE = readFileSync(join(__dirname, '../fixtures/documents/coffee.pdf'));
const TOO_SLOW = /^The upload arrived too slowly \(below 2 KiB\/s\) and was stopped; upload the file again/;

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({
    env: {
      SMTP_URL: mailbox.url,
      MAX_FILE_BYTES: String(MAX_FILE_BYTES),
      // One upload body of the largest size at a time; others wait their turn.
      UPLOADS_AT_ONCE: '1',
      UPLOAD_QUEUE: '4',
      UPLOAD_QUEUE_WAIT_MS: String(QUEUE_WAIT_MS),
      // Small limits so the test is quick: checked from 0.5 s after admission, averaged over 1 s.
      UPLOAD_BODY_GRACE_MS: '500',
      UPLOAD_BODY_RATE_WINDOW_MS: '1000',
      UPLOAD_MIN_BYTES_PER_SECOND: String(MIN_BYTES_PER_SECOND),
    },
  });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'alice'), signUp(system.baseUrl, mailbox, 'bob')]);
}, 120_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

const uploadJson = (bytes: Buffer, name = 'coffee.pdf') =>
  Buffer.from(JSON.stringify({ base64_docx_file: bytes.toString('base64url'), file_name: name, file_mime_type: 'application/pdf', private: false }));
/** The gateway's upload body limit for MAX_FILE_BYTES (base64 and room for the JSON around it). */
const BODY_LIMIT = Math.ceil((MAX_FILE_BYTES * 4) / 3) + 256 * 1024;
/** A body just below the limit, the whole upload bound: a real document followed by JSON whitespace. */
const fullSizeBody = () => {
  const json = uploadJson(COFFEE);
  return Buffer.concat([json, Buffer.alloc(BODY_LIMIT - 1024 - json.length, ' ')]);
};

function paced(user: TestUser, body: Buffer, pace: Pace) {
  return pacedUpload(system.baseUrl, '/api/file', { cookie: user.client.cookie!, 'content-type': 'application/json' }, body, pace);
}

async function filesOf(user: TestUser): Promise<string[]> {
  const res = await user.client.get(`/api/user/files/${user.id}`);
  expect(res.status).toBe(200);
  return res.json.map((f: { file_name: string }) => f.file_name);
}

const cutLines = (userId: string) => system.logs().split('\n').filter((line) => line.includes('upload cut') && line.includes(userId));

function expectCut(answer: PacedAnswer): void {
  expect(answer.status).toBe(408);
  expect(answer.json).toEqual({ message: expect.stringMatching(TOO_SLOW) });
  expect(answer.headers.connection).toBe('close');
}

/** Bob uploads while Alice's slow upload holds the only slot: answered once her upload is cut. */
async function bobUploadsMeanwhile(): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  const res = await bob.client.post('/api/file', JSON.parse(uploadJson(COFFEE, 'bob.pdf').toString()));
  return { status: res.status, ms: Date.now() - started };
}

it('cuts an upload trickling a few bytes a second (408), frees its slot at once for another user\'s upload, and stores nothing of it', async () => {
  // 10 bytes every 200 ms (50 bytes/s) of a full-size body: its Content-Length takes the whole upload bound.
  const trickle = paced(alice, fullSizeBody(), { bytesPerTick: 10, tickMs: 200 });
  try {
    // Alice's upload is admitted first; Bob's waits for the slot.
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Before, Bob waited the whole UPLOAD_QUEUE_WAIT_MS and was answered 503.
    const bobs = await bobUploadsMeanwhile();
    expect(bobs.status).toBe(200);
    expect(bobs.ms).toBeLessThan(QUEUE_WAIT_MS / 2);

    const cut = await trickle.answer;
    expectCut(cut);
    expect(cut.sentBytes).toBeLessThan(1000);
  } finally {
    trickle.close();
  }
  expect(await filesOf(alice)).toEqual([]);
  expect(cutLines(alice.id)).toHaveLength(1);
  expect(cutLines(alice.id)[0]).toMatch(/"level":40/);
}, 60_000);

it('cuts an upload whose client stops sending (idle) the same way', async () => {
  const quiet = paced(alice, fullSizeBody(), { bytesPerTick: 4096, tickMs: 50, goQuietAfter: 8192 });
  try {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const bobs = await bobUploadsMeanwhile();
    expect(bobs.status).toBe(200);
    expect(bobs.ms).toBeLessThan(QUEUE_WAIT_MS / 2);

    const cut = await quiet.answer;
    expectCut(cut);
    expect(cut.sentBytes).toBe(8192);
  } finally {
    quiet.close();
  }
  expect(await filesOf(alice)).toEqual([]);
  expect(cutLines(alice.id)).toHaveLength(2);
}, 60_000);

it('lets a slow but steady upload above the minimum rate finish and stores it', async () => {
  // 4 KiB every 250 ms (16 KiB/s, eight times the minimum): ~2.3 s for the document, well past the grace and window.
  const body = uploadJson(COFFEE, 'steady.pdf');
  expect(body.length / (16 * 1024)).toBeGreaterThan(2);
  const steady = paced(alice, body, { bytesPerTick: 4096, tickMs: 250 });
  try {
    const answer = await steady.answer;
    expect({ status: answer.status, name: answer.json?.file_name }).toEqual({ status: 200, name: 'steady.pdf' });
    expect(answer.sentBytes).toBe(body.length);
  } finally {
    steady.close();
  }
  expect(await filesOf(alice)).toEqual(['steady.pdf']);
  // No further cut was logged.
  expect(cutLines(alice.id)).toHaveLength(2);
}, 60_000);
