import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, newId } from '@cards/platform';
import { DiskObjectStore } from '../src/adapters/disk/disk-object-store';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { SqliteFileRepository } from '../src/adapters/sqlite/sqlite-file-repository';
import { FilesService } from '../src/application/files-service';
import { contentDisposition, startInternalDownloadServer } from '../src/http/internal-download-server';
import { testTempDir } from '../../../test/support/cleanup';

const TOKEN = 'a-shared-secret-for-tests';
const pdf = readFileSync(join(__dirname, '../../../test/fixtures/documents/coffee.pdf'));
let dir: string;
let repository: SqliteFileRepository;
let server: Awaited<ReturnType<typeof startInternalDownloadServer>>;
let service: FilesService;
let base: string;

beforeAll(async () => {
  dir = testTempDir('files-http-');
  repository = new SqliteFileRepository(join(dir, 'files.db'));
  const logger = createLogger('files-test', 'silent');
  service = new FilesService({ repository, objects: new DiskObjectStore(join(dir, 'objects')), reader: new LibraryDocumentReader(), maxFileBytes: 1 << 20, logger, onEventsWritten: () => undefined });
  server = await startInternalDownloadServer({ host: '127.0.0.1', port: 0, acceptedTokens: [TOKEN], service, logger });
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await server.close();
  await repository.close();
  rmSync(dir, { recursive: true, force: true });
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${base}${path}`, { headers: { 'x-files-internal-token': TOKEN, ...headers } });

describe('internal download server', () => {
  it('streams the bytes with type, length and disposition when the token is presented', async () => {
    const owner = newId();
    const file = await service.upload({ callerId: owner, fileName: 'Kaffee Ä.pdf', mimeType: 'application/pdf', private: false, tags: [], bytes: pdf });
    const res = await get(`/files/${file.id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('content-length')).toBe(String(pdf.length));
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="Kaffee _.pdf"; filename*=UTF-8''Kaffee%20%C3%84.pdf`);
    expect(Buffer.from(await res.arrayBuffer()).equals(pdf)).toBe(true);
  });

  it('refuses requests without the token or with a wrong one', async () => {
    const file = await service.upload({ callerId: newId(), fileName: 'a.pdf', mimeType: 'application/pdf', private: false, tags: [], bytes: pdf });
    expect((await fetch(`${base}/files/${file.id}`)).status).toBe(401);
    expect((await get(`/files/${file.id}`, { 'x-files-internal-token': 'a-shared-secret-for-testz' })).status).toBe(401);
  });

  it('re-checks visibility with the caller the gateway names', async () => {
    const owner = newId();
    const file = await service.upload({ callerId: owner, fileName: 'p.pdf', mimeType: 'application/pdf', private: true, tags: [], bytes: pdf });
    expect((await get(`/files/${file.id}`)).status).toBe(404);
    expect((await get(`/files/${file.id}`, { 'x-caller-id': newId() })).status).toBe(404);
    expect((await get(`/files/${file.id}`, { 'x-caller-id': owner })).status).toBe(200);
  });

  it('answers 404 for unknown ids and other paths', async () => {
    expect((await get(`/files/${newId()}`)).status).toBe(404);
    expect((await get('/files/../../etc/passwd')).status).toBe(404);
    expect((await get('/other')).status).toBe(404);
  });

  it('contentDisposition quotes safely', () => {
    expect(contentDisposition('a"b\\c.pdf')).toBe(`attachment; filename="a_b_c.pdf"; filename*=UTF-8''a%22b%5Cc.pdf`);
  });
});

describe('internal download server: conditional GET (RFC 9110 If-None-Match, If-Modified-Since)', () => {
  let file: Awaited<ReturnType<FilesService['upload']>>;
  let etag: string;
  let lastModified: string;
  let owner: string;
  let hidden: Awaited<ReturnType<FilesService['upload']>>;
  beforeAll(async () => {
    owner = newId();
    file = await service.upload({ callerId: owner, fileName: 'c.pdf', mimeType: 'application/pdf', private: false, tags: [], bytes: pdf });
    hidden = await service.upload({ callerId: owner, fileName: 'h.pdf', mimeType: 'application/pdf', private: true, tags: [], bytes: pdf });
    const res = await get(`/files/${file.id}`);
    await res.arrayBuffer();
    [etag, lastModified] = [res.headers.get('etag')!, res.headers.get('last-modified')!];
  });
  const lastModifiedMs = () => Date.parse(lastModified);
  /** The answer's status, the headers a 304 must and must not carry, and its body's length. */
  async function outcome(headers: Record<string, string>, method = 'GET', id = file.id) {
    const res = await fetch(`${base}/files/${id}`, { method, headers: { 'x-files-internal-token': TOKEN, ...headers } });
    const body = Buffer.from(await res.arrayBuffer());
    return { status: res.status, etag: res.headers.get('etag'), type: res.headers.get('content-type'), bytes: body.length };
  }
  const notModified = () => ({ status: 304, etag, type: null, bytes: 0 });
  const whole = () => ({ status: 200, etag, type: 'application/pdf', bytes: pdf.length });

  it('If-None-Match naming the ETag (weak comparison: W/ too; in a list; *) is 304 with the ETag and no body, on GET and HEAD, whatever the Range', async () => {
    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, ` , ${etag} ,`, '*']) {
      for (const method of ['GET', 'HEAD']) expect({ ifNoneMatch, method, ...(await outcome({ 'if-none-match': ifNoneMatch }, method)) }).toEqual({ ifNoneMatch, method, ...notModified() });
    }
    expect(await outcome({ 'if-none-match': etag, range: 'bytes=0-9' })).toEqual(notModified());
    const res = await fetch(`${base}/files/${file.id}`, { headers: { 'x-files-internal-token': TOKEN, 'if-none-match': etag } });
    expect({ lastModified: res.headers.get('last-modified'), cacheControl: res.headers.get('cache-control'), length: res.headers.get('content-length'), disposition: res.headers.get('content-disposition') }).toEqual({
      lastModified,
      cacheControl: 'private, no-store',
      length: null,
      disposition: null,
    });
  });

  it('If-None-Match naming other tags, or malformed, is the whole file; it takes precedence over If-Modified-Since', async () => {
    const later = new Date(lastModifiedMs() + 60_000).toUTCString();
    for (const ifNoneMatch of ['"other"', 'W/"other", "another"', 'not-a-tag', etag.slice(1, -1)]) {
      expect({ ifNoneMatch, ...(await outcome({ 'if-none-match': ifNoneMatch, 'if-modified-since': later })) }).toEqual({ ifNoneMatch, ...whole() });
    }
  });

  it('If-Modified-Since: 304 at or after Last-Modified (IMF-fixdate and the two obsolete forms), the whole file before it or when it is no HTTP-date', async () => {
    const at = new Date(lastModifiedMs());
    const pad = (n: number) => String(n).padStart(2, '0');
    const days = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
    const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
    const time = `${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())}`;
    const rfc850 = `${days[at.getUTCDay()]}, ${pad(at.getUTCDate())}-${months[at.getUTCMonth()]}-${pad(at.getUTCFullYear() % 100)} ${time} GMT`;
    const asctime = `${days[at.getUTCDay()]!.slice(0, 3)} ${months[at.getUTCMonth()]} ${String(at.getUTCDate()).padStart(2, ' ')} ${time} ${at.getUTCFullYear()}`;
    for (const since of [lastModified, new Date(lastModifiedMs() + 1000).toUTCString(), rfc850, asctime]) {
      for (const method of ['GET', 'HEAD']) expect({ since, method, ...(await outcome({ 'if-modified-since': since }, method)) }).toEqual({ since, method, ...notModified() });
    }
    const earlier = new Date(lastModifiedMs() - 1000).toUTCString();
    for (const since of [earlier, 'yesterday', at.toISOString(), '']) {
      expect({ since, ...(await outcome({ 'if-modified-since': since })) }).toEqual({ since, ...whole() });
    }
  });

  it('If-Range takes an HTTP-date only (the same three forms), not any date Date.parse reads', async () => {
    const at = new Date(lastModifiedMs());
    const asctime = at.toUTCString().replace(/^(\w{3}), (\d{2}) (\w{3}) (\d{4}) (\S+) GMT$/, (_m, day: string, date: string, month: string, year: string, time: string) => `${day} ${month} ${date.replace(/^0/, ' ')} ${time} ${year}`);
    const ranged = async (ifRange: string) => {
      const res = await get(`/files/${file.id}`, { range: 'bytes=0-9', 'if-range': ifRange });
      return { ifRange, status: res.status, bytes: (await res.arrayBuffer()).byteLength };
    };
    expect(await ranged(asctime)).toEqual({ ifRange: asctime, status: 206, bytes: 10 });
    // An ISO date naming the same second is no HTTP-date: the condition fails, the whole file (Date.parse took it: 206).
    expect(await ranged(at.toISOString())).toEqual({ ifRange: at.toISOString(), status: 200, bytes: pdf.length });
  });

  it('If-Match not naming its strong ETag, or without it If-Unmodified-Since before its Last-Modified, is a JSON 412 before If-None-Match and Range; the ETag or a date at or after it is the file', async () => {
    const failed = async (headers: Record<string, string>, method = 'GET') => {
      const res = await fetch(`${base}/files/${file.id}`, { method, headers: { 'x-files-internal-token': TOKEN, ...headers } });
      const text = await res.text();
      return { status: res.status, etag: res.headers.get('etag'), type: res.headers.get('content-type'), body: text === '' ? undefined : (JSON.parse(text) as unknown) };
    };
    const ifMatchFailed = { status: 412, etag, type: 'application/json; charset=utf-8', body: { message: `If-Match: the file is not the version named; its ETag is ${etag}` } };
    // The strong comparison: a weak tag never matches (RFC 9110 13.1.1), nor another one; before, each was the file (200).
    for (const ifMatch of ['"other"', `W/${etag}`, '"other", W/"another"']) {
      expect({ ifMatch, ...(await failed({ 'if-match': ifMatch })) }).toEqual({ ifMatch, ...ifMatchFailed });
    }
    // It comes before If-None-Match and the Range (13.2.2 step 1), and If-Unmodified-Since is ignored with it.
    expect(await failed({ 'if-match': '"other"', 'if-none-match': etag, range: 'bytes=0-9', 'if-unmodified-since': new Date(Date.now() + 3_600_000).toUTCString() })).toEqual(ifMatchFailed);
    expect(await failed({ 'if-match': '"other"' }, 'HEAD')).toEqual({ ...ifMatchFailed, body: undefined });
    const earlier = new Date(lastModifiedMs() - 1000).toUTCString();
    expect(await failed({ 'if-unmodified-since': earlier })).toEqual({
      status: 412,
      etag,
      type: 'application/json; charset=utf-8',
      body: { message: `If-Unmodified-Since: the file was stored after that date; its Last-Modified is ${lastModified}` },
    });
    // Holding: its ETag (in a list too), `*`, a malformed If-Match (ignored), a date at or after Last-Modified or none.
    for (const headers of [{ 'if-match': etag }, { 'if-match': `"other", ${etag}` }, { 'if-match': '*' }, { 'if-match': 'not-a-tag' }, { 'if-unmodified-since': lastModified }, { 'if-unmodified-since': 'yesterday' }, { 'if-match': etag, 'if-unmodified-since': earlier }] as Array<Record<string, string>>) {
      expect({ headers, ...(await outcome(headers)) }).toEqual({ headers, ...whole() });
    }
    // With a Range, the part the client resumes from while the file is still the one it holds.
    const resumed = await fetch(`${base}/files/${file.id}`, { headers: { 'x-files-internal-token': TOKEN, 'if-match': etag, range: 'bytes=0-9' } });
    expect({ status: resumed.status, bytes: (await resumed.arrayBuffer()).byteLength }).toEqual({ status: 206, bytes: 10 });
  });

  it("says nothing of a file the caller may not read: someone else's private file is 404 whatever the conditions, 304 to its owner", async () => {
    for (const headers of [{ 'if-none-match': '*' }, { 'if-none-match': etag }, { 'if-modified-since': new Date(Date.now() + 3_600_000).toUTCString() }, { 'if-match': '"other"' }, { 'if-unmodified-since': 'Sun, 06 Nov 1994 08:49:37 GMT' }] as Array<Record<string, string>>) {
      for (const caller of [{}, { 'x-caller-id': newId() }] as Array<Record<string, string>>) {
        const res = await fetch(`${base}/files/${hidden.id}`, { headers: { 'x-files-internal-token': TOKEN, ...headers, ...caller } });
        expect({ headers, status: res.status, body: await res.json() }).toEqual({ headers, status: 404, body: { message: 'File not found' } });
      }
    }
    expect((await outcome({ 'if-none-match': '*', 'x-caller-id': owner }, 'GET', hidden.id)).status).toBe(304);
    expect((await outcome({ 'if-match': '"other"', 'x-caller-id': owner }, 'GET', hidden.id)).status).toBe(412);
  });
});

describe('internal download server while its token is rotated', () => {
  const CURRENT = 'the-new-shared-secret-0123456789';
  const PREVIOUS = 'the-old-shared-secret-0123456789';
  const NEXT_TO_COME = 'a-third-shared-secret-0123456789';
  let rotating: Awaited<ReturnType<typeof startInternalDownloadServer>>;
  let fileId: string;
  const download = (token?: string) =>
    fetch(`http://127.0.0.1:${rotating.port}/files/${fileId}`, { headers: token === undefined ? {} : { 'x-files-internal-token': token } });

  beforeAll(async () => {
    rotating = await startInternalDownloadServer({ host: '127.0.0.1', port: 0, acceptedTokens: [CURRENT, PREVIOUS], service, logger: createLogger('files-test', 'silent') });
    fileId = (await service.upload({ callerId: newId(), fileName: 'r.pdf', mimeType: 'application/pdf', private: false, tags: [], bytes: pdf })).id;
  });
  afterAll(() => rotating.close());

  it('serves a gateway that still sends the previous token and one that sends the current token', async () => {
    for (const token of [PREVIOUS, CURRENT]) {
      const res = await download(token);
      expect({ token, status: res.status }).toEqual({ token, status: 200 });
      expect(Buffer.from(await res.arrayBuffer()).equals(pdf)).toBe(true);
    }
  });

  it('refuses any other token and a missing one with 401 JSON', async () => {
    for (const token of [undefined, '', NEXT_TO_COME, `${CURRENT},${PREVIOUS}`, CURRENT.slice(0, -1), `${PREVIOUS}x`]) {
      const res = await download(token);
      expect({ token, status: res.status }).toEqual({ token, status: 401 });
      expect(await res.json()).toEqual({ message: 'Missing or wrong internal token' });
    }
  });
});

describe('internal download server without FILES_INTERNAL_TOKEN', () => {
  it('refuses every request, loopback or not, and says so at start naming the variable', async () => {
    const lines: string[] = [];
    const logger = createLogger('files-test', 'info', { write: (line: string) => void lines.push(line) });
    const open = await startInternalDownloadServer({ host: '127.0.0.1', port: 0, acceptedTokens: [], service, logger });
    try {
      expect(lines.join('')).toMatch(/FILES_INTERNAL_TOKEN is not set: the internal download endpoint refuses every request/);
      const owner = newId();
      const file = await service.upload({ callerId: owner, fileName: 'mine.pdf', mimeType: 'application/pdf', private: true, tags: [], bytes: pdf });
      // Any local process naming the owner in x-caller-id was served the private file before.
      const attempts: Array<Record<string, string>> = [{ 'x-caller-id': owner }, { 'x-caller-id': owner, 'x-files-internal-token': '' }, {}];
      for (const headers of attempts) {
        const res = await fetch(`http://127.0.0.1:${open.port}/files/${file.id}`, { headers });
        expect({ headers, status: res.status }).toEqual({ headers, status: 401 });
        expect(await res.json()).toEqual({ message: 'No internal token configured (FILES_INTERNAL_TOKEN): downloads are refused' });
      }
    } finally {
      await open.close();
    }
  });
});
