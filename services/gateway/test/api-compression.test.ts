// /api JSON answers are compressed (br, else gzip) for clients whose Accept-Encoding allows it: a page of search results
// is ~61 KiB of JSON, most of a repeat visit's bytes on a slow link. Small answers, file bytes and HEAD go as they are,
// and a streamed listing still arrives whole. node:http, not fetch: fetch asks for and undoes compression on its own.
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import type { GatewayClients } from '../src/clients';
import { appWithoutServices, closed, listening } from './app-without-services';

const USER_ID = '0b3c6a52-2f1e-4c61-9a8e-3f7a9d8e1c01';
const FILE_ID = '6f1c2b1e-0000-4000-8000-000000000001';
const TOKEN = 'the-internal-token';
// A text file that compresses well, well over the threshold.
const FILE_BYTES = Buffer.from('a line of a text file that compresses very well\n'.repeat(200));
const user = (token: string) => ({ id: USER_ID, email: `${token}@example.com`, visibleEmail: false });

function notification(i: number) {
  const at = new Date(Date.UTC(2026, 0, 1) - i * 1000);
  const id = `6f1c2b1e-0000-4000-8000-${String(i).padStart(12, '0')}`;
  return { id, userId: USER_ID, type: 2, cardId: id, verificationId: `v${i}`, similarityScore: i % 101, userRead: false, createdAt: at, updatedAt: at };
}

/** 2,500 notifications answered in pages of 1,000 (a streamed listing), tagged with a version; 7 cards; every file public. */
const clients = {
  identity: {
    resolveSession: async ({ token }: { token: string }) => user(token),
    resolveSessions: async ({ tokens }: { tokens: string[] }) => ({ resolutions: tokens.map((token) => ({ user: user(token) })) }),
  },
  notifications: {
    listNotifications: async ({ pageToken }: { pageToken: string }) => {
      const start = pageToken === '' ? 0 : Number(pageToken);
      const end = Math.min(start + 1000, 2500);
      return { notifications: Array.from({ length: end - start }, (_, i) => notification(start + i)), nextPageToken: end < 2500 ? String(end) : '' };
    },
    getListVersion: async () => ({ version: '3.1' }),
  },
  cards: { countCards: async () => ({ totalCount: 7 }) },
  files: {
    getFile: async () => ({ id: FILE_ID }),
    readFile: () =>
      (async function* () {
        const file = { id: FILE_ID, userId: USER_ID, fileName: 'notes.txt', mimeType: 'text/plain', private: false, size: FILE_BYTES.length, tags: [], createdAt: new Date(0), updatedAt: new Date(0) };
        yield { part: { $case: 'file', value: file } };
        yield { part: { $case: 'chunk', value: FILE_BYTES } };
      })(),
  },
} as unknown as GatewayClients;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function ask(base: string, path: string, headers: Record<string, string>, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers: { cookie: 'ai-editor=token-a', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('/api answers compressed for clients that accept it', () => {
  let files: Server;
  let running: { server: Server; base: string };

  beforeAll(async () => {
    files = createServer((req, res) => {
      if (req.headers['x-files-internal-token'] !== TOKEN) return void res.writeHead(401).end();
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(FILE_BYTES.length) });
      res.end(FILE_BYTES);
    });
    await listening(files);
    const filesHttpAddress = `127.0.0.1:${(files.address() as AddressInfo).port}`;
    running = await listening(createServer(appWithoutServices({ clients, filesHttpAddress, filesInternalToken: TOKEN, accessLogLevel: 'silent' })));
  });
  afterAll(async () => {
    await closed(running.server);
    await new Promise((resolve) => files.close(resolve));
  });

  it('sends a large answer (a streamed listing) gzip-compressed to a client accepting gzip, whole, with Vary: Accept-Encoding', async () => {
    const plain = await ask(running.base, '/api/notifications', {});
    const zipped = await ask(running.base, '/api/notifications', { 'accept-encoding': 'gzip' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toMatch(/accept-encoding/i);
    expect(zipped.headers['content-type']).toMatch(/^application\/json/);
    expect(zipped.body.length).toBeLessThan(plain.body.length / 4);
    const list = JSON.parse(gunzipSync(zipped.body).toString()) as Array<{ id: string }>;
    expect(list).toHaveLength(2500);
    expect(list[2499]!.id).toBe(notification(2499).id);
    expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
  });

  it('prefers br when the client accepts it', async () => {
    const res = await ask(running.base, '/api/notifications', { 'accept-encoding': 'gzip, deflate, br' });
    expect(res.headers['content-encoding']).toBe('br');
    expect(JSON.parse(brotliDecompressSync(res.body).toString())).toHaveLength(2500);
  });

  it('sends the answer as it is to a client that does not ask (no Accept-Encoding, or identity only)', async () => {
    for (const headers of [{}, { 'accept-encoding': 'identity' }, { 'accept-encoding': 'gzip;q=0, br;q=0' }] as Array<Record<string, string>>) {
      const res = await ask(running.base, '/api/notifications', headers);
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBeUndefined();
      // A cache in between keeps this answer apart from the compressed one.
      expect(res.headers.vary).toMatch(/accept-encoding/i);
      expect(JSON.parse(res.body.toString())).toHaveLength(2500);
    }
  });

  it('sends a small answer as it is even to a client accepting gzip', async () => {
    const res = await ask(running.base, '/api/card/count', { 'accept-encoding': 'gzip, br' });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    // Looked at and left as it is: a larger answer at the same address would be compressed.
    expect(res.headers.vary).toMatch(/accept-encoding/i);
    expect(JSON.parse(res.body.toString())).toEqual({ total_count: 7 });
  });

  it("never compresses a file download (the file's bytes pass through as the files service sent them)", async () => {
    const res = await ask(running.base, `/api/file/${FILE_ID}/download`, { 'accept-encoding': 'gzip, br' });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers['content-length']).toBe(String(FILE_BYTES.length));
    expect(res.body.equals(FILE_BYTES)).toBe(true);
  });

  it("never compresses a file's content read as JSON (its length is announced, as its HEAD announces it)", async () => {
    const res = await ask(running.base, `/api/file/${FILE_ID}`, { 'accept-encoding': 'gzip, br' });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers['content-length']).toBe(String(res.body.length));
    expect(Buffer.from((JSON.parse(res.body.toString()) as { base64url_content: string }).base64url_content, 'base64url').equals(FILE_BYTES)).toBe(true);
  });

  it('weakens the list ETag on the compressed answer, and a poll naming it still gets 304; HEAD goes as it is', async () => {
    const plain = await ask(running.base, '/api/notifications', {});
    const tag = plain.headers.etag!;
    expect(tag).toMatch(/^"[^"]+"$/);
    const zipped = await ask(running.base, '/api/notifications', { 'accept-encoding': 'gzip' });
    expect(zipped.headers.etag).toBe(`W/${tag}`);
    const again = await ask(running.base, '/api/notifications', { 'accept-encoding': 'gzip', 'if-none-match': zipped.headers.etag! });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    const head = await ask(running.base, '/api/notifications', { 'accept-encoding': 'gzip' }, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-encoding']).toBeUndefined();
    expect(head.body.length).toBe(0);
  });
});
