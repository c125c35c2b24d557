import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ClientError, Status } from 'nice-grpc';
import type { files } from '@cards/proto';
import type { GatewayClients } from '../src/clients';
import { MemoryAttemptCounter } from '../src/adapters/memory/memory-attempt-counter';
import type { GatewayAppOptions } from '../src/app';
import { appWithoutServices, closed, listening } from './app-without-services';

// Express hands HEAD to a GET route's handlers, and HEAD is what link checkers, prefetchers and monitors send freely
// (docs/decisions.md, "Methods"): a GET that does more than read refuses it, and a HEAD asks for no more than its head.

async function serve(overrides: Partial<GatewayAppOptions>): Promise<{ server: Server; port: number }> {
  const server = createServer(appWithoutServices({ accessLogLevel: 'silent', ...overrides }));
  await listening(server);
  return { server, port: (server.address() as AddressInfo).port };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function send(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HEAD /api/password/:email (GET sends a password-reset mail)', () => {
  let server: Server;
  let port: number;
  const mails: string[] = [];
  beforeAll(async () => {
    const identity = {
      async requestPasswordReset({ email }: { email: string }) {
        mails.push(email);
        return {};
      },
    };
    // One mail per address and per client address: a HEAD that counted would leave the GET after it refused (429).
    const rateLimits = { perIpPerMinute: 1, perEmailPerMinute: 1, mailPerIp: 1, counter: new MemoryAttemptCounter() };
    ({ server, port } = await serve({ clients: { identity } as unknown as GatewayClients, rateLimits }));
  });
  afterAll(() => closed(server));

  it('is 405 with Allow: GET, OPTIONS, sends no mail and counts toward no limit; the GET after it sends the mail', async () => {
    for (const headers of [{}, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' }, { purpose: 'prefetch' }] as Array<Record<string, string>>) {
      const head = await send(port, 'HEAD', '/api/password/someone%40example.com', headers);
      expect({ headers, status: head.status, allow: head.headers.allow, type: head.headers['content-type'], body: head.text }).toEqual({
        headers,
        status: 405,
        allow: 'GET, OPTIONS',
        type: 'application/json; charset=utf-8',
        body: '',
      });
    }
    expect(mails).toEqual([]);
    const get = await send(port, 'GET', '/api/password/someone%40example.com');
    expect(get.status).toBe(204);
    expect(mails).toEqual(['someone@example.com']);
  });

  it('leaves HEAD out of the path\'s methods: OPTIONS and a 405 to another method say GET, OPTIONS', async () => {
    const options = await send(port, 'OPTIONS', '/api/password/someone%40example.com');
    expect({ status: options.status, allow: options.headers.allow }).toEqual({ status: 204, allow: 'GET, OPTIONS' });
    const put = await send(port, 'PUT', '/api/password/someone%40example.com');
    expect({ status: put.status, allow: put.headers.allow, json: JSON.parse(put.text) as unknown }).toEqual({
      status: 405,
      allow: 'GET, OPTIONS',
      json: { message: 'PUT is not allowed here; allowed: GET, OPTIONS' },
    });
  });

  it('leaves HEAD to the other GET routes: HEAD /livez is 200 and the OPTIONS of /api/card/count lists it', async () => {
    expect((await send(port, 'HEAD', '/livez')).status).toBe(200);
    expect((await send(port, 'OPTIONS', '/api/card/count')).headers.allow).toBe('GET, HEAD, OPTIONS');
  });
});

describe('HEAD /api/file/:id (GET streams the file\'s content)', () => {
  const FILE_ID = '0b0e4c1e-8a54-4c52-9d43-5a3a1f0f7a11';
  const OWNER = '4f8b7a10-3c2d-4e5f-8a9b-0c1d2e3f4a5b';
  const bytes = Buffer.alloc(300_000, 'file bytes ');
  const record = {
    id: FILE_ID,
    userId: OWNER,
    fileName: 'notes.pdf',
    mimeType: 'application/pdf',
    private: true,
    createdAt: new Date('2026-11-24T00:00:00Z'),
    updatedAt: new Date('2026-11-24T00:00:00Z'),
    size: bytes.length,
    tags: ['a'],
    ingestionStatus: 'done',
  } as unknown as files.File;
  /** A public record whose stored bytes are missing (a broken store): ReadFile is NOT_FOUND, GetFile only when asked to check. */
  const BROKEN_ID = '5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
  const broken = { ...record, id: BROKEN_ID, private: false } as files.File;
  const calls: string[] = [];
  /** A files port that checks visibility as the service does (private: the owner only) and records every call. */
  const filesPort = {
    async getFile({ fileId, callerId, checkContent }: files.GetFileRequest) {
      calls.push(`getFile:${callerId ?? 'anonymous'}${checkContent ? ':checkContent' : ''}`);
      if (fileId === BROKEN_ID && !checkContent) return broken;
      if (fileId !== FILE_ID || callerId !== OWNER) throw new ClientError('/files.v1.FileService/GetFile', Status.NOT_FOUND, 'File not found');
      return record;
    },
    readFile({ fileId, callerId }: files.GetFileRequest) {
      calls.push(`readFile:${callerId ?? 'anonymous'}`);
      return (async function* () {
        if (fileId !== FILE_ID || callerId !== OWNER) throw new ClientError('/files.v1.FileService/ReadFile', Status.NOT_FOUND, 'File not found');
        yield { part: { $case: 'file', value: record } };
        for (let at = 0; at < bytes.length; at += 65_536) {
          calls.push('chunk');
          yield { part: { $case: 'chunk', value: bytes.subarray(at, at + 65_536) } };
        }
      })();
    },
  };
  const OTHER = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
  const identity = {
    async resolveSession({ token }: { token: string }) {
      if (token === 'owner-session') return { id: OWNER, email: 'owner@example.com' };
      if (token === 'other-session') return { id: OTHER, email: 'other@example.com' };
      throw new ClientError('/identity.v1.IdentityService/ResolveSession', Status.UNAUTHENTICATED, 'Not logged in');
    },
  };
  const owner = { cookie: 'ai-editor=owner-session' };
  let server: Server;
  let port: number;
  beforeAll(async () => {
    ({ server, port } = await serve({ clients: { files: filesPort, identity } as unknown as GatewayClients }));
  });
  afterAll(() => closed(server));
  beforeEach(() => calls.splice(0));

  const head = (answer: Answer) => ({ status: answer.status, type: answer.headers['content-type'], length: answer.headers['content-length'], cache: answer.headers['cache-control'] });

  it('answers the GET\'s status and headers (type, Content-Length, caching) from GetFile, with no ReadFile call', async () => {
    const get = await send(port, 'GET', `/api/file/${FILE_ID}`, owner);
    expect(JSON.parse(get.text)).toMatchObject({ id: FILE_ID, base64url_content: bytes.toString('base64url') });
    expect(calls).toContain('readFile:' + OWNER);
    calls.splice(0);
    const answer = await send(port, 'HEAD', `/api/file/${FILE_ID}`, owner);
    expect(head(answer)).toEqual(head(get));
    expect(head(answer)).toEqual({ status: 200, type: 'application/json; charset=utf-8', length: String(Buffer.byteLength(get.text)), cache: 'no-store' });
    expect(answer.text).toBe('');
    expect(calls).toEqual([`getFile:${OWNER}:checkContent`]);
  });

  it('is 404 where the GET is (someone else\'s private file, anonymous or signed in as another), and 400 for an id that is no UUID', async () => {
    for (const headers of [{}, { cookie: 'ai-editor=other-session' }] as Array<Record<string, string>>) {
      const [get, answer] = [await send(port, 'GET', `/api/file/${FILE_ID}`, headers), await send(port, 'HEAD', `/api/file/${FILE_ID}`, headers)];
      expect({ headers, get: get.status, head: answer.status, type: answer.headers['content-type'] }).toEqual({ headers, get: 404, head: 404, type: 'application/json; charset=utf-8' });
    }
    const [get, answer] = [await send(port, 'GET', '/api/file/not-a-uuid', owner), await send(port, 'HEAD', '/api/file/not-a-uuid', owner)];
    expect([get.status, answer.status]).toEqual([400, 400]);
    // The GETs' reads only (the 400s call nothing); the HEADs asked GetFile as the caller they were.
    expect(calls).toEqual(['readFile:anonymous', 'getFile:anonymous:checkContent', `readFile:${OTHER}`, `getFile:${OTHER}:checkContent`]);
  });

  it('is 404 where the GET is for a record whose stored bytes are missing (GetFile checks the content, nothing is read)', async () => {
    for (const headers of [{}, owner] as Array<Record<string, string>>) {
      const [get, answer] = [await send(port, 'GET', `/api/file/${BROKEN_ID}`, headers), await send(port, 'HEAD', `/api/file/${BROKEN_ID}`, headers)];
      expect({ headers, get: get.status, getJson: JSON.parse(get.text) as unknown, head: head(answer), body: answer.text }).toEqual({
        headers,
        get: 404,
        getJson: { message: 'File not found' },
        head: head(get),
        body: '',
      });
    }
    // The GETs' reads, the HEADs' GetFile asking for the content's check.
    expect(calls).toEqual(['readFile:anonymous', 'getFile:anonymous:checkContent', `readFile:${OWNER}`, `getFile:${OWNER}:checkContent`]);
  });

  it('takes no read slot: answered while the client\'s reads (FILE_READS_PER_CLIENT) and all reads are taken, when the GET is refused', async () => {
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    // A read that sends its header and then waits: it holds the one read slot and the owner's one share.
    const holding = {
      ...filesPort,
      readFile: () =>
        (async function* () {
          yield { part: { $case: 'file', value: record } };
          await held;
          yield { part: { $case: 'chunk', value: bytes } };
        })(),
    };
    const limited = await serve({ clients: { files: holding, identity } as unknown as GatewayClients, fileReads: { atOnce: 1, perClient: 1, callMs: 50_000, idleMs: 60_000 } });
    try {
      let started!: () => void;
      const answering = new Promise<void>((resolve) => (started = resolve));
      const reading = new Promise<Answer>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: limited.port, path: `/api/file/${FILE_ID}`, headers: owner }, (res) => {
          started();
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
        });
        req.on('error', reject);
        req.end();
      });
      // The first read has begun its answer and holds its slot and share until its bytes come.
      await answering;
      const [ownGet, otherGet] = [await send(limited.port, 'GET', `/api/file/${FILE_ID}`, owner), await send(limited.port, 'GET', `/api/file/${FILE_ID}`)];
      expect([ownGet.status, otherGet.status]).toEqual([429, 503]);
      const answer = await send(limited.port, 'HEAD', `/api/file/${FILE_ID}`, owner);
      letGo();
      const read = await reading;
      expect({ status: answer.status, retryAfter: answer.headers['retry-after'], length: answer.headers['content-length'] }).toEqual({
        status: 200,
        retryAfter: undefined,
        length: String(Buffer.byteLength(read.text)),
      });
      expect(read.status).toBe(200);
    } finally {
      letGo();
      await closed(limited.server);
    }
  });
});
