import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { utf8Problem } from '../src/http/json-body';
import { appWithoutServices, listening } from './app-without-services';

const bytes = (...parts: Array<string | number[]>) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));

describe('utf8Problem', () => {
  it('passes UTF-8 (a BOM, emoji, the largest code point and U+FFFD itself included)', () => {
    for (const fine of [bytes(''), bytes('{"a":"café 😀 \u{10FFFF} \ufffd"}'), bytes([0xef, 0xbb, 0xbf], '{}')]) expect(utf8Problem(fine)).toBeNull();
  });

  it('names the first ill-formed sequence, its bytes and its offset', () => {
    expect(utf8Problem(bytes('{"name":"Caf', [0xe9], ' notes"}'))).toBe('an incomplete sequence (0xE9, then 0x20) at byte 12');
    expect(utf8Problem(bytes('ab', [0xe9]))).toBe('an incomplete sequence (0xE9, then the end of the body) at byte 2');
    expect(utf8Problem(bytes('a', [0xf0, 0x9f, 0x98], 'b'))).toBe('an incomplete sequence (0xF0 0x9F 0x98, then 0x62) at byte 1');
    expect(utf8Problem(bytes('x', [0x80]))).toBe('a continuation byte with no lead byte (0x80) at byte 1');
    expect(utf8Problem(bytes([0xff, 0xfe], '{}'))).toBe('a byte that never appears in UTF-8 (0xFF) at byte 0');
    expect(utf8Problem(bytes([0xc0, 0xaf]))).toBe('a byte that never appears in UTF-8 (0xC0) at byte 0');
    expect(utf8Problem(bytes([0xe0, 0x80, 0xaf]))).toBe('an overlong encoding (0xE0 0x80) at byte 0');
    expect(utf8Problem(bytes([0xf0, 0x80, 0x80, 0xaf]))).toBe('an overlong encoding (0xF0 0x80) at byte 0');
    expect(utf8Problem(bytes('"', [0xed, 0xa0, 0x80], '"'))).toBe('an encoded surrogate, which UTF-8 cannot hold (0xED 0xA0) at byte 1');
    expect(utf8Problem(bytes([0xf4, 0x90, 0x80, 0x80]))).toBe('a code point above U+10FFFF (0xF4 0x90) at byte 0');
    expect(utf8Problem(bytes('😀', [0xe9]))).toBe('an incomplete sequence (0xE9, then the end of the body) at byte 4');
  });
});

describe('a JSON body whose bytes are not UTF-8', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer(appWithoutServices());
    await listening(server);
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());

  // Registration parses its body before it asks the identity service (none here), and names a missing field.
  const register = (body: Buffer, headers: Record<string, string> = {}) =>
    fetch(`${base}/api/register/00000000-0000-4000-8000-000000000000`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const answer = async (res: Response) => ({ status: res.status, body: await res.json() });

  it('is refused 400 naming the bad sequence, instead of being read with U+FFFD', async () => {
    const latin1 = bytes('{"password":"Caf', [0xe9], ' notes"}');
    const message = 'The request body is not valid UTF-8: an incomplete sequence (0xE9, then 0x20) at byte 16; JSON must be sent encoded as UTF-8';
    expect(await answer(await register(latin1))).toEqual({ status: 400, body: { message } });
    expect(await answer(await register(gzipSync(latin1), { 'content-encoding': 'gzip' }))).toEqual({ status: 400, body: { message } });
    expect(await answer(await register(latin1, { 'content-type': 'application/json; charset=UTF-8' }))).toEqual({ status: 400, body: { message } });
  });

  it('leaves a UTF-8 body as it was, with or without a BOM', async () => {
    const missing = { status: 400, body: { message: 'password_confirmation: is required' } };
    expect(await answer(await register(bytes('{"password":"Café notes 😀"}')))).toEqual(missing);
    expect(await answer(await register(bytes([0xef, 0xbb, 0xbf], '{"password":"Café notes"}')))).toEqual(missing);
  });

  it('is answered as malformed JSON when it is not JSON either', async () => {
    expect(await answer(await register(bytes('{"password":', [0xe9])))).toEqual({ status: 400, body: { message: 'Malformed JSON body' } });
  });

  // It was 415 'Unsupported body encoding', naming neither the coding refused nor those taken (RFC 9110 §12.5.3: Accept-Encoding).
  it('compressed with a coding the gateway does not read is 415 naming it and the codings it reads', async () => {
    for (const coding of ['x-gzip', 'compress', 'zstd', 'gzip, gzip']) {
      const res = await register(Buffer.from('{"password":"x"}'), { 'content-encoding': coding });
      expect(res.headers.get('accept-encoding')).toBe('gzip, deflate, br');
      expect([coding, await answer(res)]).toEqual([coding, { status: 415, body: { message: `The request body's Content-Encoding "${coding}" is not supported: send it uncompressed or with gzip, deflate or br` } }]);
    }
  });

  it('with a charset other than UTF-8 declared is 415, since JSON is UTF-8', async () => {
    for (const charset of ['utf-16le', 'utf-32', 'utf-7', 'iso-8859-1', '"utf-16"']) {
      const res = await register(Buffer.from('{"password":"x"}', 'utf16le'), { 'content-type': `application/json; charset=${charset}` });
      expect([charset, await answer(res)]).toEqual([charset, { status: 415, body: { message: `The request body must be JSON encoded as UTF-8 (charset "${charset.replaceAll('"', '')}" is not accepted)` } }]);
    }
  });
});
