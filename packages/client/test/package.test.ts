import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { testTempDir } from '../../../test/support/cleanup';

const PACKAGE = join(__dirname, '..');
const ROOT = join(PACKAGE, '../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

// The package as another team gets it: `pnpm pack` (prepack builds dist with tsc), unpacked into a project of its
// own with no workspace around it (its one dependency, openapi-fetch, linked in, as an offline install would), then
// imported by plain node as ESM and as CommonJS and type-checked by a strict consumer against the shipped .d.ts.
let project: string;
let tarball: string;

function run(command: string, args: string[], cwd: string) {
  const { NODE_OPTIONS: _ignored, ...env } = process.env;
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: 120_000 });
  return { status: result.status, output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}` };
}

function link(name: string) {
  const target = join(project, 'node_modules', name);
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(realpathSync(join(PACKAGE, 'node_modules', name)), target, 'dir');
}

beforeAll(() => {
  project = testTempDir('cards-client-pack-');
  const packed = run('pnpm', ['pack', '--pack-destination', project], PACKAGE);
  expect(packed.output).not.toMatch(/ERR_|error TS/);
  expect(packed.status).toBe(0);
  tarball = join(project, readdirSync(project).find((name) => name.endsWith('.tgz')) ?? 'missing.tgz');
  const installed = join(project, 'node_modules/@cards/client');
  mkdirSync(installed, { recursive: true });
  expect(run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1'], project).status).toBe(0);
  link('openapi-fetch');
  mkdirSync(join(project, 'node_modules/@types'), { recursive: true });
  symlinkSync(realpathSync(join(ROOT, 'node_modules/@types/node')), join(project, 'node_modules/@types/node'), 'dir');
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
}, 120_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

it('ships built JavaScript and declarations only, with exports for import and require and engines node >= 20', () => {
  const listed = run('tar', ['-tzf', tarball], project);
  const files = listed.output.split('\n').filter(Boolean).sort();
  expect(files).toEqual(
    expect.arrayContaining(['package/dist/esm/index.js', 'package/dist/esm/index.d.ts', 'package/dist/cjs/index.js', 'package/dist/cjs/index.d.ts', 'package/README.md', 'package/openapi.json']),
  );
  expect(files.filter((file) => file.startsWith('package/src/') || file.startsWith('package/scripts/') || file.startsWith('package/test/'))).toEqual([]);
  const manifest = JSON.parse(readFileSync(join(project, 'node_modules/@cards/client/package.json'), 'utf8'));
  expect(manifest.private).toBeUndefined();
  expect(manifest.engines).toEqual({ node: '>=20' });
  expect(manifest.main).toBe('./dist/cjs/index.js');
  expect(manifest.exports['.']).toEqual({
    import: { types: './dist/esm/index.d.ts', default: './dist/esm/index.js' },
    require: { types: './dist/cjs/index.d.ts', default: './dist/cjs/index.js' },
  });
});

// A fake fetch answering login with a session cookie: the client must run (openapi-fetch loaded, the jar kept).
const exercise = `
const seen = [];
const fakeFetch = async (request) => {
  seen.push(request.headers.get('cookie'));
  return new Response('{"id":"u1"}', { status: 200, headers: { 'content-type': 'application/json', 'set-cookie': 'ai-editor=abc; Path=/; HttpOnly' } });
};
const api = client.createCardsClient('http://cards.test', { fetch: fakeFetch });
await api.POST('/api/auth', { body: { email: 'a@b.test', password: 'pw' } });
const { data } = await api.GET('/api/auth');
console.log(JSON.stringify({ cookie: api.session.cookie, seen, data, cookieName: client.SESSION_COOKIE, jar: typeof client.SessionJar }));
`;
const expected = { cookie: 'ai-editor=abc', seen: [null, 'ai-editor=abc'], data: { id: 'u1' }, cookieName: 'ai-editor', jar: 'function' };

it('runs under plain node as an ES module', () => {
  writeFileSync(join(project, 'esm.mjs'), `import * as client from '@cards/client';\n${exercise}`);
  const result = run(process.execPath, ['esm.mjs'], project);
  expect(result.output).not.toMatch(/Error/);
  expect(JSON.parse(result.output)).toEqual(expected);
});

it('runs under plain node as CommonJS', () => {
  writeFileSync(join(project, 'cjs.cjs'), `const client = require('@cards/client');\n(async () => {${exercise}})().catch((err) => { console.error(err); process.exit(1); });`);
  const result = run(process.execPath, ['cjs.cjs'], project);
  expect(result.output).not.toMatch(/Error/);
  expect(JSON.parse(result.output)).toEqual(expected);
});

it('type-checks a strict consumer (ESM and CommonJS, no DOM lib) against the shipped declarations', () => {
  const tsconfig = {
    compilerOptions: {
      target: 'es2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      lib: ['es2022'],
      types: ['node'],
      strict: true,
      exactOptionalPropertyTypes: true,
      verbatimModuleSyntax: true,
      erasableSyntaxOnly: true,
      noUncheckedIndexedAccess: true,
      skipLibCheck: false,
      noEmit: true,
    },
    files: ['consumer.mts', 'consumer.cts'],
  };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig));
  const body = (exported: string) => `
${exported}async function use(api: CardsClient, cardId: string): Promise<string | undefined> {
  const { data, error, response } = await api.GET('/api/card/{card_id}', { params: { path: { card_id: cardId } } });
  if (error) return \`\${response.status} \${error.message}\`;
  const user: NonNullable<Schemas['User']> | undefined = undefined;
  void user;
  return data?.id;
}
void use;
`;
  writeFileSync(
    join(project, 'consumer.mts'),
    `import { createCardsClient, SessionJar, type CardsClient, type Schemas } from '@cards/client';\n` +
      `export const api: CardsClient = createCardsClient('http://cards.test', { cookie: undefined, headers: { origin: 'http://cards.test' } });\n` +
      `export const jar: SessionJar = api.session;\n${body('export ')}`,
  );
  writeFileSync(
    join(project, 'consumer.cts'),
    `import type { CardsClient, Schemas } from '@cards/client';\n` +
      `const client: typeof import('@cards/client') = require('@cards/client');\n` +
      `const api: CardsClient = client.createCardsClient('http://cards.test', { cookie: undefined });\nvoid api;\n${body('')}`,
  );
  const result = run(process.execPath, [TSC, '-p', join(project, 'tsconfig.json')], project);
  expect(result.output).toBe('');
  expect(result.status).toBe(0);
});
