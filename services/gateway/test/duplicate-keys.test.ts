// An object holding one key twice is ambiguous (RFC 8259 4: its meaning is unpredictable; I-JSON, RFC 7493, forbids
// it): JSON.parse keeps the last value, so `"private":true,"private":false` made a public card (outside audit #3).
import { createServer, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { API_JSON_SHAPE, jsonScanProblem } from '../src/http/json-shape';
import { appWithoutServices, closed, listening } from './app-without-services';

const scan = (text: string) => jsonScanProblem(Buffer.from(text, 'utf8'), API_JSON_SHAPE);

describe('jsonScanProblem: duplicate keys', () => {
  it('finds a key given twice in one object, at any depth, escapes decoded as JSON.parse reads them', () => {
    expect(scan('{"private":true,"private":false}')).toEqual({ duplicateKey: 'private' });
    expect(scan('{ "a" : 1 ,\n "b":{"c":1,"c":2}}')).toEqual({ duplicateKey: 'c' });
    expect(scan('[{"x":1},{"y":[{"z":1,"z":1}]}]')).toEqual({ duplicateKey: 'z' });
    expect(scan('{"priv\\u0061te":true,"private":false}')).toEqual({ duplicateKey: 'private' });
    expect(scan('{"a\\"b":1,"a\\"b":2}')).toEqual({ duplicateKey: 'a"b' });
    expect(scan('{"__proto__":1,"__proto__":2}')).toEqual({ duplicateKey: '__proto__' });
    expect(scan('{"":1,"":2}')).toEqual({ duplicateKey: '' });
  });

  it('leaves alone one key in two objects, a value equal to a key, keys differing by escapes or case, and strings in arrays', () => {
    for (const fine of [
      '{"a":{"a":{"a":1}},"b":{"a":2}}',
      '[{"a":1},{"a":2}]',
      '{"a":"a","b":"a","c":["a","a"]}',
      '{"a":"b","b":"a"}',
      '{"A":1,"a":2,"\\u00e9":3,"e\\u0301":4}',
      '{"tag_set":["x","x"],"x":"{\\"x\\":1,\\"x\\":2}"}',
      '{"a":[{"b":1}],"b":2}',
      '{}',
      '[]',
      '"text"',
      '{"unterminated":"x',
    ]) {
      expect([fine, scan(fine)]).toEqual([fine, null]);
    }
  });

  it('still reports the shape first where the shape is what is wrong', () => {
    expect(jsonScanProblem(Buffer.from('[[[[]]]]'), { maxValues: 5, maxDepth: 3 })).toEqual({ shape: 'it nests more than 3 levels of objects and arrays' });
  });
});

describe('a JSON body holding a key twice', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    ({ server, base } = await listening(createServer(appWithoutServices())));
  });
  afterAll(() => closed(server));

  // Registration parses its body before it asks the identity service (none here), and names a missing field.
  const register = (body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${base}/api/register/00000000-0000-4000-8000-000000000000`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const answer = async (res: Response) => ({ status: res.status, body: (await res.json()) as { message: string } });

  it('is refused 400 naming the key, plain or compressed, before any field is read', async () => {
    const body = '{"password":"password1","password_confirmation":"password1","password":"other"}';
    const refused = { status: 400, body: { message: 'The request body is ambiguous: duplicate key "password" in one object (JSON readers differ on which value counts); send each key once' } };
    expect(await answer(await register(body))).toEqual(refused);
    expect(await answer(await register(gzipSync(body), { 'content-encoding': 'gzip' }))).toEqual(refused);
  });

  it('names a long key shortened, and is not taken for another body', async () => {
    const key = 'k'.repeat(150);
    const { body } = await answer(await register(`{"${key}":1,"${key}":2}`));
    expect(body.message).toBe(`The request body is ambiguous: duplicate key "${'k'.repeat(100)}…" in one object (JSON readers differ on which value counts); send each key once`);
    expect(await answer(await register('{"password":"a","nested":{"password":"b"}}'))).toEqual({ status: 400, body: { message: 'password_confirmation: is required' } });
  });

  it('shortens a long key by characters, never halving an emoji', async () => {
    const key = `k${'🎉'.repeat(120)}`;
    const { body } = await answer(await register(`{"${key}":1,"${key}":2}`));
    expect(body.message).toBe(`The request body is ambiguous: duplicate key "k${'🎉'.repeat(99)}…" in one object (JSON readers differ on which value counts); send each key once`);
    expect(body.message).not.toContain('\uFFFD');
  });
});
