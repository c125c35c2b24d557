import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { signUp, type TestUser } from '../support/accounts';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';

// GET /api/file/:id goes on reading from the byte it reached when a ReadFile call ends by its deadline or a cut
// connection, so a client of any pace gets the whole answer; reads under way are bounded (docs/files.md#memory-bounds).
const coffee = readFileSync(join(__dirname, '../fixtures/documents/coffee.pdf'));
/** ~11 MB of JSON: several times what the socket buffers between the gateway and a paused client hold. */
const SIZE = 8 * 1024 * 1024 + 1;
/** The slow client's pace: the answer takes ~7 s, several 1 s calls and more than a connection's age plus its grace. */
const BYTES_PER_SECOND = 1_500_000;

/** A valid PDF of exactly `size` bytes: coffee.pdf, then a comment as long as needed, then a last %%EOF. */
function pdfOfSize(size: number): Buffer {
  const tail = Buffer.from('\n%%EOF\n');
  return Buffer.concat([coffee, Buffer.from('\n%'), Buffer.alloc(size - coffee.length - 2 - tail.length, 'padding '), tail]);
}
const bytes = pdfOfSize(SIZE);

const mailbox = new Mailbox();

interface SlowRead {
  status: number;
  headers: IncomingMessage['headers'];
  /** The whole body, or the error that cut it. */
  body: Promise<Buffer>;
}

/**
 * GET of `path` read at `bytesPerSecond`; `pauseAt` (bytes) stops reading for `pauseMs` once that much has arrived,
 * calling `duringPause` meanwhile.
 */
function slowGet(baseUrl: string, path: string, options: { cookie?: string; headers?: Record<string, string>; bytesPerSecond: number; pauseAt?: number; pauseMs?: number; duringPause?: () => Promise<void> }): Promise<SlowRead> {
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}${path}`, { headers: { ...options.headers, ...(options.cookie ? { cookie: options.cookie } : {}) } }, (res) => {
      const body = (async () => {
        const chunks: Buffer[] = [];
        let received = 0;
        let paused = false;
        const started = Date.now();
        for await (const chunk of res) {
          chunks.push(chunk as Buffer);
          received += (chunk as Buffer).length;
          if (options.pauseAt !== undefined && !paused && received >= options.pauseAt) {
            paused = true;
            await Promise.all([sleep(options.pauseMs ?? 0), options.duringPause?.()]);
          }
          const due = started + (received / options.bytesPerSecond) * 1000;
          if (due > Date.now()) await sleep(due - Date.now());
        }
        // A cut connection can end the stream without an error event: the length tells a whole answer from a part.
        const whole = Buffer.concat(chunks);
        if (res.headers['content-length'] !== undefined && whole.length !== Number(res.headers['content-length'])) throw new Error(`the answer ended after ${whole.length} of ${res.headers['content-length']} bytes`);
        return whole;
      })();
      body.catch(() => undefined);
      resolve({ status: res.statusCode!, headers: res.headers, body });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Uploads the file, trying again (as the 503 says to) when the upload's own call was cut by a connection's age. */
async function upload(user: TestUser, isPrivate: boolean): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const res = await user.client.post('/api/file', { base64_docx_file: bytes.toString('base64url'), file_name: 'large.pdf', file_mime_type: 'application/pdf', private: isPrivate });
    if (res.status === 200) return res.json.id;
    if (res.status !== 503 || attempt === 3) throw new Error(`upload: ${res.status} ${res.text}`);
    await sleep(500);
  }
}

function contentOf(body: Buffer): Buffer {
  return Buffer.from(JSON.parse(body.toString()).base64url_content, 'base64url');
}

beforeAll(() => mailbox.start());
afterAll(() => mailbox.stop());

describe('a slow reader with ReadFile calls of 1 s, at most 2 reads at once, a client idle for 5 s cut', () => {
  let system: RunningSystem;
  let alice: TestUser;

  beforeAll(async () => {
    system = await startSystem({ env: { SMTP_URL: mailbox.url, FILE_READ_CALL_MS: '1000', FILE_READS_AT_ONCE: '2', FILE_READ_IDLE_MS: '5000' } });
    alice = await signUp(system.baseUrl, mailbox, 'alice');
  }, 120_000);
  afterAll(() => system?.stop());

  it('gets the exact content, read over several calls', async () => {
    const id = await upload(alice, true);
    const read = await slowGet(system.baseUrl, `/api/file/${id}`, { cookie: alice.client.cookie, bytesPerSecond: BYTES_PER_SECOND / 2 });
    expect(read.status).toBe(200);
    expect(contentOf(await read.body).equals(bytes)).toBe(true);
  }, 60_000);

  it.each([
    ['deleted', (client: ApiClient, id: string) => client.delete(`/api/file/${id}`)],
    ['made private', (client: ApiClient, id: string) => client.put('/api/file', { file_id: id, private: true })],
  ])('a file %s between two calls is still read whole: the read completes from what was opened, never cut part way', async (_change, change) => {
    const id = await upload(alice, false);
    // Anonymous: a public file made private is then someone else's private file.
    const read = await slowGet(system.baseUrl, `/api/file/${id}`, {
      bytesPerSecond: BYTES_PER_SECOND,
      pauseAt: 1_000_000,
      pauseMs: 2500,
      duringPause: async () => {
        expect((await change(alice.client, id)).status).toBe(204);
      },
    });
    expect(read.status).toBe(200);
    expect(contentOf(await read.body).equals(bytes)).toBe(true);
    // A read begun after the change is refused as before.
    expect((await new ApiClient(system.baseUrl).get(`/api/file/${id}`)).status).toBe(404);
  }, 60_000);

  it('answers a read beyond the bound 503 JSON with Retry-After before any byte, and admits reads again once one ends', async () => {
    const id = await upload(alice, false);
    let releaseFirst!: () => void;
    const firstPaused = new Promise<void>((resolve) => (releaseFirst = resolve));
    const holding = [
      await slowGet(system.baseUrl, `/api/file/${id}`, { bytesPerSecond: BYTES_PER_SECOND, pauseAt: 1, duringPause: () => firstPaused }),
      await slowGet(system.baseUrl, `/api/file/${id}`, { bytesPerSecond: BYTES_PER_SECOND, pauseAt: 1, pauseMs: 2000 }),
    ];
    expect(holding.map((r) => r.status)).toEqual([200, 200]);
    const anonymous = new ApiClient(system.baseUrl);
    const refused = await anonymous.get(`/api/file/${id}`);
    expect({ status: refused.status, json: refused.json, retryAfter: refused.headers.get('retry-after') }).toEqual({
      status: 503,
      json: { message: 'Too many file reads are under way; read the file again in a few seconds' },
      retryAfter: '5',
    });
    releaseFirst();
    for (const read of holding) expect(contentOf(await read.body).equals(bytes)).toBe(true);
    const again = await anonymous.get(`/api/file/${id}`);
    expect(again.status).toBe(200);
    expect(Buffer.from(again.json.base64url_content, 'base64url').equals(bytes)).toBe(true);
  }, 60_000);

  it('cuts a client that takes nothing for longer than the idle time, and its read no longer counts', async () => {
    const id = await upload(alice, false);
    const stalled = await Promise.all([1, 2].map(() => slowGet(system.baseUrl, `/api/file/${id}`, { bytesPerSecond: BYTES_PER_SECOND, pauseAt: 1, pauseMs: 12_000 })));
    expect(stalled.map((r) => r.status)).toEqual([200, 200]);
    for (const read of stalled) await expect(read.body).rejects.toThrow();
    const after = await new ApiClient(system.baseUrl).get(`/api/file/${id}`);
    expect(after.status).toBe(200);
  }, 60_000);
});

// The grace (3 s) leaves an 8 MiB upload on a busy machine time to finish on its connection; the reader takes half the
// pace of the others (~15 s), so its ReadFile stream, a few MB ahead of it in socket buffers at most, still outlives
// the connection it began on (cut at most 2.2 + 3 s after that opened).
describe('a slow reader while the services end gRPC connections at their max age (2 s, grace 3 s)', () => {
  let system: RunningSystem;
  let alice: TestUser;

  beforeAll(async () => {
    system = await startSystem({ env: { SMTP_URL: mailbox.url, GRPC_MAX_CONNECTION_AGE_MS: '2000', GRPC_MAX_CONNECTION_AGE_GRACE_MS: '3000' } });
    alice = await signUp(system.baseUrl, mailbox, 'alice');
  }, 120_000);
  afterAll(() => system?.stop());

  it('gets the exact content though the connection its read began on is cut', async () => {
    const id = await upload(alice, true);
    const read = await slowGet(system.baseUrl, `/api/file/${id}`, { cookie: alice.client.cookie, bytesPerSecond: BYTES_PER_SECOND / 2 });
    expect(read.status).toBe(200);
    expect(contentOf(await read.body).equals(bytes)).toBe(true);
  }, 60_000);
});

describe('reads one client has under way: at most 2 of the 4 reads at once', () => {
  let system: RunningSystem;
  let alice: TestUser;

  beforeAll(async () => {
    system = await startSystem({ env: { SMTP_URL: mailbox.url, FILE_READS_AT_ONCE: '4', FILE_READS_PER_CLIENT: '2' } });
    alice = await signUp(system.baseUrl, mailbox, 'alice');
  }, 120_000);
  afterAll(() => system?.stop());

  it('answers a client\'s read beyond its share 429 JSON with Retry-After while others still read, and admits it again once one of its reads ends', async () => {
    const id = await upload(alice, false);
    let releaseHolders!: () => void;
    const holdersPaused = new Promise<void>((resolve) => (releaseHolders = resolve));
    // Two anonymous reads from this address that stop taking the answer.
    const holding = [
      await slowGet(system.baseUrl, `/api/file/${id}`, { bytesPerSecond: BYTES_PER_SECOND, pauseAt: 1, duringPause: () => holdersPaused }),
      await slowGet(system.baseUrl, `/api/file/${id}`, { bytesPerSecond: BYTES_PER_SECOND, pauseAt: 1, duringPause: () => holdersPaused }),
    ];
    expect(holding.map((r) => r.status)).toEqual([200, 200]);

    const anonymous = new ApiClient(system.baseUrl);
    const refused = await anonymous.get(`/api/file/${id}`);
    expect({ status: refused.status, json: refused.json, retryAfter: refused.headers.get('retry-after') }).toEqual({
      status: 429,
      json: { message: 'You have too many file reads under way; read the file again when one has finished' },
      retryAfter: '5',
    });
    // Another client (a signed-in user, same address) still reads.
    const other = await alice.client.get(`/api/file/${id}`);
    expect(other.status).toBe(200);
    expect(Buffer.from(other.json.base64url_content, 'base64url').equals(bytes)).toBe(true);

    releaseHolders();
    for (const read of holding) expect(contentOf(await read.body).equals(bytes)).toBe(true);
    const again = await anonymous.get(`/api/file/${id}`);
    expect(again.status).toBe(200);
  }, 60_000);
});

describe('reads one client has under way, behind a proxy: an IPv6 client is its /64', () => {
  let system: RunningSystem;
  let alice: TestUser;

  beforeAll(async () => {
    system = await startSystem({ env: { SMTP_URL: mailbox.url, FILE_READS_AT_ONCE: '4', FILE_READS_PER_CLIENT: '2', TRUST_PROXY: '1' } });
    alice = await signUp(system.baseUrl, mailbox, 'alice');
  }, 120_000);
  afterAll(() => system?.stop());

  it('counts anonymous reads from addresses of one /64 together, and another /64 apart', async () => {
    const id = await upload(alice, false);
    let releaseHolders!: () => void;
    const holdersPaused = new Promise<void>((resolve) => (releaseHolders = resolve));
    const from = (address: string) => ({ 'x-forwarded-for': address });
    // One subscriber's /64 holds every address it rotates through: two held reads from two of them.
    const holding = [
      await slowGet(system.baseUrl, `/api/file/${id}`, { headers: from('2001:db8:1:2::1'), bytesPerSecond: BYTES_PER_SECOND, pauseAt: 1, duringPause: () => holdersPaused }),
      await slowGet(system.baseUrl, `/api/file/${id}`, { headers: from('2001:db8:1:2::2'), bytesPerSecond: BYTES_PER_SECOND, pauseAt: 1, duringPause: () => holdersPaused }),
    ];
    expect(holding.map((r) => r.status)).toEqual([200, 200]);
    const third = await fetch(`${system.baseUrl}/api/file/${id}`, { headers: from('2001:db8:1:2::3') });
    expect(third.status).toBe(429);
    await third.body?.cancel();
    const elsewhere = await fetch(`${system.baseUrl}/api/file/${id}`, { headers: from('2001:db8:1:3::1') });
    expect(elsewhere.status).toBe(200);
    await elsewhere.arrayBuffer();
    releaseHolders();
    for (const read of holding) await read.body;
  }, 60_000);
});
