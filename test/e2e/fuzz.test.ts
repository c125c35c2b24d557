import fc from 'fast-check';
import type { CardsClient } from '@cards/client';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';
import { typedClient } from './openapi-support';

// Property-based fuzzing of every operation in the OpenAPI document: bodies generated from each route's
// request schema, then broken (wrong types, huge strings, deep nesting, unicode, prototype-pollution keys,
// malformed JSON), junk path parameters and cookies. Every answer must be a 2xx-4xx with a JSON
// {"message"} on failure; never a 5xx, a hang or a crash; the service is healthy and nothing stored is lost.

const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS ?? 25);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2_147_483_647);

type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  format?: string;
  maxLength?: number;
};
interface Operation {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  params: string[];
  body?: JsonSchema;
}

let system: RunningSystem;
let mailbox: Mailbox;
let owner: TestUser;
let operations: Operation[];
const knownIds: string[] = [];
let sentinelCard: { id: string; content: string };

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  owner = await signUp(system.baseUrl, mailbox, 'fuzz');
  const api = typedClient(system.baseUrl, owner);
  // Something stored that no bad input may change: a card whose id the fuzzer never gets.
  const sentinel = await api.POST('/api/card', { body: { card_html: html(uniqueText()), link: 'https://example.com/keep', private: true } });
  sentinelCard = { id: sentinel.data!.card_metadata.id, content: sentinel.data!.card_metadata.content };
  // Ids the fuzzer may hit: a card and a collection of the owner (fair game to change or delete).
  knownIds.push((await api.POST('/api/card', { body: { card_html: html(uniqueText()), link: '', private: false } })).data!.card_metadata.id);
  const made = await api.POST('/api/card_collection', { body: { name: 'fuzz', is_public: true } });
  knownIds.push(made.response.headers.get('location')!.split('/').pop()!, owner.id);
  const doc = (await api.GET('/api/openapi.json')).data as { paths: Record<string, Record<string, { parameters?: { name: string }[]; requestBody?: { content: Record<string, { schema: JsonSchema }> } }>> };
  operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({
      method: method.toUpperCase() as Operation['method'],
      path,
      params: (op.parameters ?? []).map((p) => p.name),
      body: op.requestBody?.content['application/json']?.schema,
    })),
  );
}, 120_000);

afterAll(async () => {
  await system?.stop();
  await mailbox?.stop();
});

const VALID_CARD_HTML = html(uniqueText(80));
const hugeString = fc.integer({ min: 10_000, max: 300_000 }).map((n) => 'x'.repeat(n));
const weirdString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('', ' ', '\u0000', '\u202e', '😀'.repeat(50), '<script>alert(1)</script>', "' OR 1=1 --", '../../etc/passwd', '%00', '{{7*7}}', '${jndi:ldap://x}', '\ud800'),
);
const stringValue = fc.oneof(
  { weight: 3, arbitrary: weirdString },
  { weight: 2, arbitrary: fc.uuid() },
  { weight: 2, arbitrary: fc.constant(null).chain(() => fc.constantFrom(...knownIdsOrDummy())) },
  { weight: 1, arbitrary: fc.constant(VALID_CARD_HTML) },
  { weight: 1, arbitrary: fc.webUrl() },
  { weight: 1, arbitrary: fc.emailAddress() },
  { weight: 1, arbitrary: hugeString },
);
/** Strings that can go into a URL or a header at all (a lone surrogate cannot be percent-encoded). */
function encodable(s: string): boolean {
  try {
    encodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
}
function knownIdsOrDummy(): string[] {
  return knownIds.length > 0 ? knownIds : ['00000000-0000-4000-8000-000000000000'];
}
/** Any JSON value, including deep nesting. */
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.anything({ maxDepth: 3, withBoxedValues: false, withMap: false, withSet: false, withObjectString: false, withNullPrototype: true }).map((v) => JSON.parse(JSON.stringify(v ?? null)) as unknown),
  fc.integer({ min: 50, max: 3000 }).map((depth) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`) as unknown),
  hugeString,
  fc.constantFrom(true, false, 0, -1, 1e308, -0, null, [], {}, '1', 'true'),
);

/** Well-formed values for a JSON schema (the route's own zod schema, as the document renders it). */
function fromSchema(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return junk;
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => fromSchema(s, depth + 1)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length === 0) return junk;
  return fc.oneof(
    ...types.map((type): fc.Arbitrary<unknown> => {
      switch (type) {
        case 'string':
          return stringValue;
        case 'boolean':
          return fc.boolean();
        case 'integer':
          return fc.integer();
        case 'number':
          return fc.double({ noNaN: true });
        case 'null':
          return fc.constant(null);
        case 'array':
          return fc.array(fromSchema(schema.items, depth + 1), { maxLength: 5 });
        case 'object': {
          const props = schema.properties ?? {};
          const model = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, fromSchema(s, depth + 1)]));
          return fc.record(model, { requiredKeys: (schema.required ?? []).filter((k) => k in props) });
        }
        default:
          return junk;
      }
    }),
  );
}

const PROTO_KEYS = '"__proto__":{"polluted":"yes","private":true},"constructor":{"prototype":{"polluted":"yes"}},"prototype":{"polluted":"yes"}';

/** A request body as raw text: valid-ish, one field broken, proto keys, junk, malformed or deeply nested. */
function bodyText(schema: JsonSchema | undefined): fc.Arbitrary<string> {
  const valid = fromSchema(schema);
  const keys = Object.keys(schema?.properties ?? {});
  const broken = keys.length > 0 ? fc.tuple(valid, fc.constantFrom(...keys), junk).map(([o, k, j]) => JSON.stringify({ ...(o as object), [k]: j })) : junk.map((j) => JSON.stringify(j));
  return fc.oneof(
    { weight: 3, arbitrary: valid.map((v) => JSON.stringify(v)) },
    { weight: 4, arbitrary: broken },
    { weight: 2, arbitrary: valid.map((v) => withProtoKeys(JSON.stringify(v))) },
    { weight: 1, arbitrary: junk.map((j) => JSON.stringify(j)) },
    { weight: 1, arbitrary: valid.chain((v) => fc.nat().map((n) => JSON.stringify(v).slice(0, n % (JSON.stringify(v).length + 1)))) },
    { weight: 1, arbitrary: fc.integer({ min: 1000, max: 200_000 }).map((d) => `{"a":${'['.repeat(d)}${']'.repeat(d)}}`) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 100 }) },
  );
}

function withProtoKeys(json: string): string {
  if (!json.startsWith('{')) return `{${PROTO_KEYS}}`;
  return json === '{}' ? `{${PROTO_KEYS}}` : `{${PROTO_KEYS},${json.slice(1)}`;
}

const pathValue = (name: string) =>
  fc.oneof(
    name === 'page' ? fc.oneof(fc.integer({ min: -5, max: 100_000 }).map(String), fc.constantFrom('0', '1', '01', '1e3', '0x10', '1.5', '99999999999999999999', ' 1')) : fc.uuid(),
    fc.constantFrom(...knownIdsOrDummy()),
    weirdString.filter((s) => s.length > 0 && encodable(s)),
    fc.integer({ min: 300, max: 20_000 }).map((n) => 'a'.repeat(n)),
  );

const cookieValue = fc.oneof(
  { weight: 6, arbitrary: fc.constant('session') },
  { weight: 1, arbitrary: fc.constant('none') },
  { weight: 1, arbitrary: fc.oneof(weirdString.filter(encodable), fc.constant('eyJhbGciOiJub25lIn0.eyJqdGkiOiJ4In0.'), fc.integer({ min: 4000, max: 6000 }).map((n) => 'a'.repeat(n))) },
);

interface Sent {
  method: string;
  url: string;
  body?: string;
  cookie: string;
}

async function send(api: CardsClient, op: Operation, path: Record<string, string>, body: string | undefined): Promise<{ status: number; text: string; contentType: string | null }> {
  const init = {
    params: { path },
    ...(body !== undefined ? { body: body as never, bodySerializer: (b: unknown) => b as string, headers: { 'content-type': 'application/json' } } : {}),
    parseAs: 'text' as const,
    signal: AbortSignal.timeout(30_000),
  };
  const call = api[op.method] as unknown as (p: string, i: typeof init) => Promise<{ response: Response; data?: unknown; error?: unknown }>;
  const res = await call(op.path, init);
  // openapi-fetch hands back error bodies already parsed when they are JSON.
  const raw = res.response.ok ? res.data : res.error;
  return { status: res.response.status, text: typeof raw === 'string' ? raw : raw === undefined ? '' : JSON.stringify(raw), contentType: res.response.headers.get('content-type') };
}

function describeSent(s: Sent): string {
  return `${s.method} ${s.url.slice(0, 200)}${s.url.length > 200 ? `...(${s.url.length} chars)` : ''} cookie=${s.cookie.slice(0, 40)} body=${(s.body ?? '').slice(0, 300)}${(s.body ?? '').length > 300 ? `... (${s.body!.length} chars)` : ''}`;
}

it('every operation survives generated and broken input: no 5xx, JSON errors, no crash', async () => {
  expect(operations.length).toBeGreaterThan(40);
  const failures: string[] = [];
  const statusCounts = new Map<number, number>();
  // Never log the fuzzing session out (that would only make the rest anonymous).
  const targets = operations.filter((op) => !(op.method === 'DELETE' && op.path === '/api/auth'));
  for (const op of targets) {
    const arbitrary = fc.record({
      path: fc.record(Object.fromEntries(op.params.map((p) => [p, pathValue(p)]))),
      body: op.method === 'GET' ? fc.constant(undefined) : op.body ? bodyText(op.body) : fc.option(bodyText(undefined), { nil: undefined }),
      cookie: cookieValue,
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ path, body, cookie }) => {
        const api = typedClient(system.baseUrl);
        api.session.cookie = cookie === 'session' ? owner.client.cookie : cookie === 'none' ? undefined : `ai-editor=${encodeURIComponent(cookie)}`;
        const sent: Sent = { method: op.method, url: op.path.replace(/\{(\w+)\}/g, (_m, k: string) => encodeURIComponent(path[k] ?? '')), body, cookie: cookie };
        let answer: Awaited<ReturnType<typeof send>>;
        try {
          answer = await send(api, op, path as Record<string, string>, body);
        } catch (err) {
          failures.push(`no answer (${(err as Error).message}): ${describeSent(sent)}`);
          return false;
        }
        statusCounts.set(answer.status, (statusCounts.get(answer.status) ?? 0) + 1);
        if (answer.status >= 500) {
          failures.push(`${answer.status} ${answer.text.slice(0, 200)}: ${describeSent(sent)}`);
          return false;
        }
        if (answer.status >= 400) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(answer.text);
          } catch {
            parsed = undefined;
          }
          const keys = parsed && typeof parsed === 'object' ? Object.keys(parsed) : [];
          if (keys.length !== 1 || keys[0] !== 'message' || typeof (parsed as { message: unknown }).message !== 'string') {
            failures.push(`${answer.status} without a JSON {"message"} (${answer.text.slice(0, 120)}): ${describeSent(sent)}`);
            return false;
          }
        }
        if (answer.text.includes('polluted')) {
          failures.push(`prototype keys echoed: ${describeSent(sent)}`);
          return false;
        }
        return true;
      }),
      { numRuns: RUNS_PER_OPERATION, seed: SEED, endOnFailure: true },
    ).catch(() => undefined);
  }
  console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} reproduces), ${RUNS_PER_OPERATION} runs x ${targets.length} operations; statuses: ${[...statusCounts.entries()].sort().map(([s, n]) => `${s}x${n}`).join(' ')}`);
  expect(failures).toEqual([]);
}, 600_000);

it('unusual transport: undocumented methods, other content types, bogus encodings and charsets are 4xx JSON', async () => {
  const problems: string[] = [];
  const concrete = (path: string) => path.replace(/\{page\}/g, '1').replace(/\{email\}/g, 'a@example.com').replace(/\{\w+\}/g, knownIds[0]!);
  const requests: { method: string; path: string; headers?: Record<string, string>; body?: string | Buffer }[] = [];
  const byPath = new Map<string, Set<string>>();
  for (const op of operations) byPath.set(op.path, (byPath.get(op.path) ?? new Set()).add(op.method));
  for (const [path, methods] of byPath) {
    for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH']) if (!methods.has(method)) requests.push({ method, path: concrete(path), headers: { 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{}' });
  }
  for (const op of operations.filter((o) => o.body)) {
    const path = concrete(op.path);
    requests.push(
      { method: op.method, path, headers: { 'content-type': 'text/plain' }, body: 'card_html=x' },
      { method: op.method, path, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'card_html=x&private=true' },
      { method: op.method, path, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: '{"not":"gzip"}' },
      { method: op.method, path, headers: { 'content-type': 'application/json', 'content-encoding': 'br, zstd' }, body: '{}' },
      { method: op.method, path, headers: { 'content-type': 'application/json; charset=utf-7' }, body: '{}' },
      { method: op.method, path, headers: { 'content-type': 'application/json' }, body: Buffer.from([0xff, 0xfe, 0x00, 0x7b]) },
      { method: op.method, path, headers: { 'content-type': 'application/json' }, body: `{"a":"${'x'.repeat(2 * 1024 * 1024)}"}` },
    );
  }
  for (const r of requests) {
    const res = await fetch(`${system.baseUrl}${r.path}`, { method: r.method, headers: { ...r.headers, cookie: owner.client.cookie! }, body: r.body });
    const text = await res.text();
    let keys: string[] = [];
    try {
      keys = Object.keys(JSON.parse(text) as object);
    } catch {
      keys = [];
    }
    const bad = res.status >= 500 || (res.status >= 400 && (keys.length !== 1 || keys[0] !== 'message'));
    if (bad) problems.push(`${r.method} ${r.path} ${JSON.stringify(r.headers)} -> ${res.status} ${text.slice(0, 120)}`);
  }
  expect(requests.length).toBeGreaterThan(100);
  expect(problems).toEqual([]);
}, 300_000);

it('prototype-pollution keys change nothing: a required field hidden in __proto__ is still missing', async () => {
  const api = typedClient(system.baseUrl, owner);
  const body = `{${PROTO_KEYS},"card_html":${JSON.stringify(html(uniqueText()))},"link":""}`;
  const res = await api.POST('/api/card', { body: body as never, bodySerializer: (b: unknown) => b as string, headers: { 'content-type': 'application/json' } });
  expect(res.response.status).toBe(400);
  expect((res.error as { message: string }).message).toMatch(/private/);
  const me = await api.GET('/api/auth');
  expect(Object.keys(me.data!).sort()).toEqual(['email', 'id', 'username', 'visible_email', 'website']);
});

it('is healthy afterwards and lost nothing it had stored', async () => {
  expect(system.process.exitCode).toBeNull();
  expect((await fetch(`${system.baseUrl}/healthz`)).status).toBe(200);
  const api = typedClient(system.baseUrl, owner);
  const card = await api.GET('/api/card/{card_id}', { params: { path: { card_id: sentinelCard.id } } });
  expect(card.response.status).toBe(200);
  expect(card.data!.content).toBe(sentinelCard.content);
  expect(card.data!.link).toBe('https://example.com/keep');
  const created = await api.POST('/api/card', { body: { card_html: html(uniqueText()), link: '', private: false } });
  expect(created.response.status).toBe(200);
});
