// A small compressed body that inflates to millions of JSON values (audit: 17.5 KB of gzip, 18 MB of `[{},{},...]`)
// must not stall the gateway: JSON.parse of it blocked the event loop ~2.7 s, so every request of the process waited,
// and four at once from one user were all admitted (each weighed its 17.5 KB Content-Length).
import { createServer, type Server } from 'node:http';
import zlib from 'node:zlib';
import type { GatewayClients } from '../src/clients';
import { API_JSON_SHAPE, jsonShapeProblem } from '../src/http/json-shape';
import { appWithoutServices, closed, listening, until } from './app-without-services';

const MAX_FILE_BYTES = 20 * 1024 * 1024;
const user = (token: string) => ({ id: token.replace(/^token-/, 'user-'), email: `${token}@example.com`, visibleEmail: false });

/** Identity knows every `token-*` cookie; files takes an upload and answers once `hold` (if any) is released. */
function fakeClients(received: number[], hold?: Promise<void>): GatewayClients {
  return {
    identity: {
      resolveSession: async ({ token }: { token: string }) => user(token),
      resolveSessions: async ({ tokens }: { tokens: string[] }) => ({ resolutions: tokens.map((token) => ({ user: user(token) })) }),
    },
    files: {
      uploadFile: async (messages: AsyncIterable<{ part?: { $case: string; value: unknown } }>) => {
        let bytes = 0;
        for await (const message of messages) if (message.part?.$case === 'chunk') bytes += (message.part.value as Buffer).length;
        received.push(bytes);
        await hold;
        const now = new Date();
        return { id: '6f1c2b1e-0000-4000-8000-000000000001', userId: 'user-a', fileName: 'a.docx', mimeType: 'x', private: false, createdAt: now, updatedAt: now, size: bytes, tags: [], ingestionStatus: 'pending' };
      },
    },
  } as unknown as GatewayClients;
}

/** The gateway; `onInflated` is called when a request body piped through a decompressor has all come out of it. */
async function serve(clients: GatewayClients, overrides: Parameters<typeof appWithoutServices>[0] = {}, onInflated?: () => void): Promise<{ server: Server; base: string }> {
  const app = appWithoutServices({ clients, maxFileBytes: MAX_FILE_BYTES, ...overrides });
  const server = createServer((req, res) => {
    const pipe = req.pipe.bind(req);
    // The JSON parser pipes a compressed body into its decompressor and reads that to its end; this listener comes first.
    req.pipe = <T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T => {
      if (onInflated) (destination as unknown as NodeJS.ReadableStream).once('end', onInflated);
      return pipe(destination, options);
    };
    void app(req, res);
  });
  return listening(server);
}

const close = closed;

const upload = (base: string, token: string, body: Buffer, headers: Record<string, string> = {}) =>
  fetch(`${base}/api/file`, { method: 'POST', headers: { 'content-type': 'application/json', cookie: `ai-editor=${token}`, ...headers }, body });

const BOMB_TEXT = `[${'{},'.repeat(6_000_000)}{}]`; // 18 MB, 6 million objects: within the upload route's ~27 MB limit
const BOMB = zlib.gzipSync(BOMB_TEXT, { level: 9 });
const REFUSED = { message: expect.stringMatching(/^The request body is not accepted: it holds more than 10000 values/) };

describe('jsonShapeProblem', () => {
  it('counts containers and separators outside strings only', () => {
    const bounds = { maxValues: 5, maxDepth: 3 };
    expect(jsonShapeProblem(Buffer.from('{"a":[1,2],"b":"x"}'), bounds)).toBeNull(); // { [ , , = 4
    expect(jsonShapeProblem(Buffer.from('{"a":[1,2,3,4],"b":"x"}'), bounds)).toBe('it holds more than 5 values');
    // Brackets, commas and escaped quotes inside strings are text, not structure.
    expect(jsonShapeProblem(Buffer.from('{"a":"[[[[,,,,{{{{\\"[[[[,,,,\\\\","b":"\\\\\\"]]],,,,"}'), bounds)).toBeNull();
    expect(jsonShapeProblem(Buffer.from('[[[[]]]]'), bounds)).toBe('it nests more than 3 levels of objects and arrays');
    expect(jsonShapeProblem(Buffer.from('[[["unterminated'), bounds)).toBeNull(); // JSON.parse answers that one
  });

  it('leaves a legitimate upload body alone: a 20 MiB document, its fields and 100 tags', () => {
    const body = Buffer.from(
      JSON.stringify({ base64_docx_file: Buffer.alloc(MAX_FILE_BYTES, 7).toString('base64url'), file_name: 'a, [b].docx', file_mime_type: 'x', private: false, tag_set: Array.from({ length: 100 }, (_, i) => `tag "${i}", {x}`) }),
    );
    expect(jsonShapeProblem(body, API_JSON_SHAPE)).toBeNull();
  });
});

describe('a gzipped body of millions of JSON values', () => {
  afterEach(() => jest.restoreAllMocks());

  it('is refused 400 without being parsed, while the gateway goes on answering', async () => {
    // The moment the gateway has the whole inflated body (just before it would parse it), a GET /livez is sent.
    let probe: Promise<{ status: number }> | undefined;
    const { server, base } = await serve(fakeClients([]), {}, () => {
      probe = fetch(`${base}/livez`).then(async (res) => ({ status: (await res.text(), res.status) }));
    });
    const parsedLengths: number[] = [];
    const parse = JSON.parse.bind(JSON);
    jest.spyOn(JSON, 'parse').mockImplementation((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
      parsedLengths.push(String(text).length);
      return parse(text, reviver);
    });
    try {
      const res = await upload(base, 'token-a', BOMB, { 'content-encoding': 'gzip' });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(REFUSED);
      expect(probe).toBeDefined();
      const livez = await probe!;
      expect(livez.status).toBe(200);
      // Never handed to JSON.parse: the refusal is a byte scan, not 6 million objects.
      expect(parsedLengths.filter((length) => length >= BOMB_TEXT.length)).toEqual([]);
      // Not timed here (no timed assertions in tests): parsing it held the event loop ~2.7 s on the audit host, and
      // the GET sent meanwhile waited behind it; the assertion above is what removes that wait.
    } finally {
      await close(server);
    }
  });

  it('is refused 400 on any route whose limit would take it (JSON_BODY_LIMIT raised)', async () => {
    const { server, base } = await serve(fakeClients([]), { jsonBodyLimit: '30mb' });
    try {
      const res = await fetch(`${base}/api/register/00000000-0000-4000-8000-000000000000`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: BOMB });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(REFUSED);
    } finally {
      await close(server);
    }
  });
});

describe('compressed uploads weigh the upload limit, not their declared length', () => {
  it('answers 429 to a user\'s further compressed uploads while their first is under way, as for full-size uncompressed ones', async () => {
    let release = () => undefined as void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const received: number[] = [];
    const { server, base } = await serve(fakeClients(received, hold));
    const body = zlib.gzipSync(JSON.stringify({ base64_docx_file: Buffer.alloc(4096, 1).toString('base64url'), file_name: 'a.docx', file_mime_type: 'x', private: false }));
    try {
      const first = upload(base, 'token-a', body, { 'content-encoding': 'gzip' });
      // The first is admitted and held in the files service; the next three arrive while it is under way.
      await until(() => received.length > 0);
      const others: Response[] = [];
      for (let i = 0; i < 3; i++) void upload(base, 'token-a', body, { 'content-encoding': 'gzip' }).then((res) => others.push(res));
      // Each is answered at once, or (before) admitted and held like the first: then the files service sees it.
      await until(() => others.length >= 3 || received.length >= 2);
      expect(received).toHaveLength(1);
      expect(others.map((res) => res.status)).toEqual([429, 429, 429]);
      expect(await others[0]!.json()).toEqual({ message: expect.stringMatching(/^You have too many uploads under way/) });
      release();
      expect((await first).status).toBe(200);
      expect(received).toEqual([4096]);
    } finally {
      release();
      await close(server);
    }
  });

  it('still takes a legitimate 20 MiB document with tags, plain and gzipped', async () => {
    const received: number[] = [];
    const { server, base } = await serve(fakeClients(received));
    const json = Buffer.from(JSON.stringify({ base64_docx_file: Buffer.alloc(MAX_FILE_BYTES, 7).toString('base64url'), file_name: 'big.docx', file_mime_type: 'x', private: false, tag_set: Array.from({ length: 100 }, (_, i) => `tag ${i}`) }));
    try {
      const plain = await upload(base, 'token-a', json);
      expect(plain.status).toBe(200);
      await plain.arrayBuffer(); // the answer echoes the file: the upload holds its share until it is read
      const gzipped = await upload(base, 'token-a', zlib.gzipSync(json, { level: 1 }), { 'content-encoding': 'gzip' });
      expect(gzipped.status).toBe(200);
      await gzipped.arrayBuffer();
      expect(received).toEqual([MAX_FILE_BYTES, MAX_FILE_BYTES]);
    } finally {
      await close(server);
    }
  });
});
