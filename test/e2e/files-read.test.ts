import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { signUp, type TestUser } from '../support/accounts';
import { eventuallyDefined } from '../support/eventually';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';

// GET /api/file/:id answers the File with its content streamed as it is read (docs/files.md#memory-bounds), and an
// upload is refused for its session or declared size before its body is read or it takes an upload slot.
const MAX_FILE_BYTES = 20 * 1024 * 1024;
/** The upload route's body limit (app.ts): the file in base64 inside JSON. */
const UPLOAD_BODY_LIMIT = Math.ceil((MAX_FILE_BYTES * 4) / 3) + 256 * 1024;
/** Bytes per ReadFile message of the files service. */
const CHUNK = 256 * 1024;
/** Public (odd sizes are uploaded public), so anonymous readers get it. */
const LARGE = 16 * 1024 * 1024 + 1;
const coffee = readFileSync(join(__dirname, '../fixtures/documents/coffee.pdf'));

/** A valid PDF of exactly `size` bytes: coffee.pdf, then a comment as long as needed, then a last %%EOF. */
function pdfOfSize(size: number): Buffer {
  if (size === coffee.length) return coffee;
  const tail = Buffer.from('\n%%EOF\n');
  return Buffer.concat([coffee, Buffer.from('\n%'), Buffer.alloc(size - coffee.length - 2 - tail.length, 'padding '), tail]);
}

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  await mailbox.start();
  // One upload body of the largest size at a time and none waiting: an upload holding the slot refuses every other.
  system = await startSystem({ env: { SMTP_URL: mailbox.url, MAX_FILE_BYTES: String(MAX_FILE_BYTES), UPLOADS_AT_ONCE: '1', UPLOAD_QUEUE: '0',
    // The memory check reads with 8 clients at once from one address; the per-client share is not what it is about.
    FILE_READS_PER_CLIENT: '8' } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'alice'), signUp(system.baseUrl, mailbox, 'bob')]);
}, 120_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

async function upload(user: TestUser, bytes: Buffer, isPrivate: boolean): Promise<any> {
  const res = await user.client.post('/api/file', { base64_docx_file: bytes.toString('base64url'), file_name: `${bytes.length}.pdf`, file_mime_type: 'application/pdf', private: isPrivate, tag_set: ['sized'] });
  if (res.status !== 200) throw new Error(`upload of ${bytes.length} bytes: ${res.status} ${res.text}`);
  return res.json;
}

/** The user's file records once none is being ingested any more (so none changes while it is compared). */
async function settledListing(user: TestUser): Promise<any[]> {
  return eventuallyDefined(
    async () => {
      const files = (await user.client.get(`/api/user/files/${user.id}`)).json as any[];
      return files.some((f) => f.ingestion_status === 'pending') ? undefined : files;
    },
    'the ingestion of the uploaded files',
    180_000,
  );
}

describe('reading a file with its content', () => {
  const sizes = [coffee.length, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK - 2, 2 * CHUNK - 1, 2 * CHUNK, 2 * CHUNK + 1, LARGE];
  const uploaded = new Map<number, { id: string; bytes: Buffer }>();

  beforeAll(async () => {
    for (const size of sizes) {
      const bytes = pdfOfSize(size);
      uploaded.set(size, { id: (await upload(alice, bytes, size % 2 === 0)).id, bytes });
    }
  }, 240_000);

  it('gives content that decodes to the uploaded bytes, for sizes on either side of chunk and 3-byte boundaries and a large one, with the other fields as listed', async () => {
    const listed = new Map((await settledListing(alice)).map((f) => [f.id as string, f]));
    for (const size of sizes) {
      const { id, bytes } = uploaded.get(size)!;
      const res = await fetch(`${system.baseUrl}/api/file/${id}`, { headers: { cookie: alice.client.cookie! } });
      const text = await res.text();
      const { base64url_content: content, ...fields } = JSON.parse(text);
      expect({ size, status: res.status, type: res.headers.get('content-type') }).toEqual({ size, status: 200, type: 'application/json; charset=utf-8' });
      expect({ size, sameBytes: Buffer.from(content, 'base64url').equals(bytes), unpadded: !content.includes('=') }).toEqual({ size, sameBytes: true, unpadded: true });
      expect(fields).toEqual(listed.get(id));
      // Byte for byte what express's res.json writes: compact, the listing's members in order, content last.
      expect(text).toBe(JSON.stringify({ ...listed.get(id), base64url_content: bytes.toString('base64url') }));
      expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    }
  }, 120_000);

  it('is 404 JSON for a missing file and for a private file of someone else, anonymous or logged in', async () => {
    const privateFile = uploaded.get(CHUNK)!.id;
    const anonymous = new ApiClient(system.baseUrl);
    for (const res of [
      await alice.client.get('/api/file/00000000-0000-4000-8000-000000000000'),
      await bob.client.get(`/api/file/${privateFile}`),
      await anonymous.get(`/api/file/${privateFile}`),
    ]) {
      expect({ status: res.status, json: res.json }).toEqual({ status: 404, json: { message: 'File not found' } });
    }
    const publicFile = uploaded.get(CHUNK + 1)!;
    const read = await anonymous.get(`/api/file/${publicFile.id}`);
    expect(Buffer.from(read.json.base64url_content, 'base64url').equals(publicFile.bytes)).toBe(true);
  });

  it('holds no copy of the file per reader: 8 readers of a 16 MiB file at once leave the gateway process far below 8 answers in memory', async () => {
    const { id, bytes } = uploaded.get(LARGE)!;
    await settledListing(alice);
    const pid = system.process.pid!;
    const statusOf = () => readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (status: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]);
    try {
      // Resets the process's peak resident set (VmHWM) to its present one (Linux).
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
    } catch (err) {
      console.warn(`skipped the memory check: /proc/${pid}/clear_refs cannot be written here (${(err as Error).message})`);
      return;
    }
    const before = kib(statusOf(), 'VmRSS');
    const answers = await Promise.all(Array.from({ length: 8 }, () => fetch(`${system.baseUrl}/api/file/${id}`).then(async (res) => ({ status: res.status, text: await res.text() }))));
    const peakGrowthMiB = (kib(statusOf(), 'VmHWM') - before) / 1024;
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(Buffer.from(JSON.parse(answer.text).base64url_content, 'base64url').equals(bytes)).toBe(true);
    }
    // Each answer is ~22 MB of JSON; holding them whole took ~435 MB more at the peak (measured), streaming ~30.
    expect(peakGrowthMiB).toBeLessThan(150);
  }, 120_000);
});

interface EarlyAnswer {
  status: number;
  json: unknown;
  /** Still open, the rest of the body unsent. */
  socket: Socket;
}

/**
 * Sends an upload's head declaring `declaredLength` bytes of body and only the first 64 KiB of it, and resolves with
 * the answer the gateway gives meanwhile: it comes only if the gateway answers without reading the whole body.
 */
function answerWhileSending(cookie: string | undefined, declaredLength: number): Promise<EarlyAnswer> {
  const url = new URL(system.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let received = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (data) => {
      received = Buffer.concat([received, data]);
      const headEnd = received.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = received.subarray(0, headEnd).toString('latin1');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
      const body = received.subarray(headEnd + 4);
      if (body.length < length) return;
      resolve({ status: Number(head.split(' ')[1]), json: JSON.parse(body.subarray(0, length).toString()), socket });
    });
    const head = [`POST /api/file HTTP/1.1`, `Host: ${url.host}`, 'Content-Type: application/json', `Content-Length: ${declaredLength}`, ...(cookie ? [`Cookie: ${cookie}`] : [])];
    socket.write(`${head.join('\r\n')}\r\n\r\n{"base64_docx_file":"${'A'.repeat(64 * 1024)}`);
  });
}

describe('an upload refused before its body is read', () => {
  it('anonymous: 401 at once while its large body is still being sent, and it holds no upload slot', async () => {
    const anonymous = await answerWhileSending(undefined, UPLOAD_BODY_LIMIT);
    try {
      expect({ status: anonymous.status, json: anonymous.json }).toEqual({ status: 401, json: { message: 'You must be logged in' } });
      // The only slot (UPLOADS_AT_ONCE 1, no queue) is free for a logged-in upload while the anonymous one still sends.
      const accepted = await alice.client.post('/api/file', { base64_docx_file: coffee.toString('base64url'), file_name: 'coffee.pdf', file_mime_type: 'application/pdf', private: true });
      expect(accepted.status).toBe(200);
    } finally {
      anonymous.socket.destroy();
    }
  }, 30_000);

  it('logged in with a declared length above the limit: 413 at once, before the body is sent', async () => {
    const tooLarge = await answerWhileSending(alice.client.cookie, UPLOAD_BODY_LIMIT + 1);
    tooLarge.socket.destroy();
    expect({ status: tooLarge.status, json: tooLarge.json }).toEqual({ status: 413, json: { message: 'The request body is too large' } });
  }, 30_000);
});
