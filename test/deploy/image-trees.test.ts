// What each container image would run, built without a container runtime: the Dockerfile's build stage makes one
// pruned tree per target with `pnpm --filter @cards/<target> deploy --prod` and the runtime stage starts its CMD,
// `node --import <tsx's loader> src/main.ts`, in it. This suite makes the same trees, checks they carry no development
// tooling, then starts every service from its own tree as a separate process (peers on loopback, the embedded engines)
// and drives the gateway: a tree missing a production dependency, or relying on the workspace around it, fails here.
import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort, loopbackTopologyEnv } from '@cards/platform';
import { openCardsDatabase } from '../../services/cards/src/adapters/sqlite/sqlite-cards-database';
import { ROOT } from './helm';
import { spawnNodeEntry, type NodeProcess } from '../support/node-process';
import { imageCommand, localCommand } from './image-command';
import { testTempDir } from '../support/cleanup';

const SERVICES = ['identity', 'cards', 'search', 'files', 'notifications'] as const;
const TARGETS = [...SERVICES, 'gateway', 'all-in-one'] as const;
/** Services that parse HTML with the workspace package @cards/html-parsing, which must ship in their trees. */
const HTML_PARSING_USERS = ['cards', 'files', 'search'] as const;
/** Development tooling that must never reach an image. */
const DEV_ONLY = ['typescript', 'jest', '@swc/core', '@swc/jest', 'tsx', 'vite', 'ts-proto', '@bufbuild/buf', 'testcontainers', 's3rver'];

/** The pnpm that runs this suite (`pnpm test` sets npm_execpath), or one on PATH; undefined when there is none. */
function pnpmCommand(): string[] | undefined {
  const execPath = process.env.npm_execpath;
  if (execPath && /pnpm/.test(execPath)) return [process.execPath, execPath];
  try {
    execFileSync('pnpm', ['--version'], { stdio: 'ignore' });
    return ['pnpm'];
  } catch {
    return undefined;
  }
}

const pnpm = pnpmCommand();
if (!pnpm) process.stdout.write('[image-trees] skipped: no pnpm to run `pnpm deploy` with (run the suite through `pnpm test`)\n');
const describeIfPnpm = pnpm ? describe : describe.skip;

/** The image's `CMD ["node", "--import", <tsx's loader>, "src/main.ts"]` inside a tree (tsx's loader: the workspace's). */
function startFromTree(tree: string, env: Record<string, string | undefined>): NodeProcess {
  const { file, args } = localCommand(imageCommand());
  const [flag, loader, entry, ...more] = args;
  expect({ file, flag, entry, more }).toEqual({ file: process.execPath, flag: '--import', entry: 'src/main.ts', more: [] });
  return spawnNodeEntry(entry!, { cwd: tree, env: { ...env, NODE_ENV: 'production' }, loader });
}

/** This process's environment on the embedded engines (no engine or SMTP URLs from the caller's shell), on loopback. */
function embeddedEnv(extra: Record<string, string>): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...extra };
  for (const key of ['MONGO_URL', 'KAFKA_BROKERS', 'ELASTICSEARCH_URL', 'S3_ENDPOINT', 'SMTP_URL']) delete env[key];
  return env;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, logs: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms:\n${logs().slice(-4000)}`);
}

/** The value of the first sample of `name` carrying every given label, 0 when there is none. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && wanted.every((pair) => l.slice(0, l.indexOf('}')).includes(pair)));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.kill('SIGTERM');
  });
}

describeIfPnpm('image trees (`pnpm deploy --prod`, as the Dockerfile builds them)', () => {
  const out = testTempDir('image-trees-');
  const running: ChildProcess[] = [];

  beforeAll(() => {
    for (const target of TARGETS) {
      // --prefer-offline, not --offline: pnpm 9's deploy resolves the package's dependencies again, which needs the
      // registry's metadata; an install from the lockfile (as CI's and the image's) leaves none in the cache.
      try {
        execFileSync(pnpm![0]!, [...pnpm!.slice(1), '--filter', `@cards/${target}`, 'deploy', '--prod', '--prefer-offline', join(out, target)], { cwd: ROOT, stdio: 'pipe', env: { ...process.env, CI: 'true' } });
      } catch (err) {
        const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
        throw new Error(`pnpm deploy of ${target} failed:\n${String(stdout ?? '').slice(-2000)}\n${String(stderr ?? '').slice(-2000)}`);
      }
    }
  }, 240_000);

  afterAll(async () => {
    await Promise.all(running.map(stop));
    rmSync(out, { recursive: true, force: true });
  });

  it('holds the target with its production dependencies and no development tooling', () => {
    for (const target of TARGETS) {
      const tree = join(out, target);
      expect({ target, main: existsSync(join(tree, 'src/main.ts')) }).toEqual({ target, main: true });
      expect({ target, platform: existsSync(join(tree, 'node_modules/@cards/platform/src/index.ts')) }).toEqual({ target, platform: true });
      const present = DEV_ONLY.filter((pkg) => existsSync(join(tree, 'node_modules', pkg)));
      expect({ target, devTooling: present }).toEqual({ target, devTooling: [] });
      // Only sources ship ("files": ["src"]): no test suites or fixtures in an image.
      const shipped = [tree, join(tree, 'node_modules/@cards/platform'), join(tree, 'node_modules/@cards/html-parsing')].filter((dir) => existsSync(join(dir, 'test')));
      expect({ target, testDirectories: shipped }).toEqual({ target, testDirectories: [] });
    }
    for (const target of HTML_PARSING_USERS) {
      expect({ target, htmlParsing: existsSync(join(out, target, 'node_modules/@cards/html-parsing/src/index.js')) }).toEqual({ target, htmlParsing: true });
    }
  });

  it('runs every service from its own tree as separate processes, and the gateway answers through them', async () => {
    const dataDir = join(out, 'data');
    const port = await freePort();
    const env = embeddedEnv({ ...(await loopbackTopologyEnv()), DATA_DIR: dataDir, PORT: String(port) });
    const metricsPorts = new Map(await Promise.all(SERVICES.map(async (service) => [service, await freePort()] as const)));
    const started = [...SERVICES, 'gateway' as const].map((target) => {
      const metricsPort = metricsPorts.get(target as (typeof SERVICES)[number]);
      return { target, ...startFromTree(join(out, target), metricsPort ? { ...env, METRICS_PORT: String(metricsPort) } : env) };
    });
    running.push(...started.map((s) => s.child));
    const logs = () => started.map((s) => `--- ${s.target}\n${s.output()}`).join('\n');
    const base = `http://127.0.0.1:${port}`;
    // Ready means every peer answers its gRPC health check (the search service loads its word vectors first).
    await waitFor('gateway readiness', async () => ((await fetch(`${base}/healthz`)).status === 200 ? true : undefined), 90_000, logs);
    const count = await fetch(`${base}/api/card/count`);
    expect(count.status).toBe(200);
    expect(await count.json()).toEqual({ total_count: 0 });
    const search = await fetch(`${base}/api/card/search/1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'rivers and lakes' }) });
    expect({ status: search.status, body: await search.json() }).toEqual({ status: 200, body: expect.objectContaining({ score_cards: [], total_pages: 0 }) });
    // Each service started with METRICS_PORT serves its process metrics and the calls it answered.
    const served = new Map<string, string>();
    for (const [service, metricsPort] of metricsPorts) {
      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect({ service, status: res.status }).toEqual({ service, status: 200 });
      served.set(service, await res.text());
    }
    for (const [service, text] of served) {
      expect({ service, processMetrics: /^process_cpu_seconds_total /m.test(text) }).toEqual({ service, processMetrics: true });
      // The gateway's readiness asked every peer's grpc.health.v1 before /healthz answered 200.
      const healthChecks = sample(text, 'grpc_server_handled_total', { grpc_service: 'grpc.health.v1.Health', grpc_method: 'Check', grpc_code: 'OK' });
      expect({ service, answeredHealthChecks: healthChecks > 0 }).toEqual({ service, answeredHealthChecks: true });
    }
    expect(sample(served.get('cards')!, 'grpc_server_handled_total', { grpc_service: 'cards.v1.CardService', grpc_method: 'CountCards', grpc_code: 'OK' })).toBe(1);
    expect(sample(served.get('cards')!, 'grpc_server_handling_seconds_count', { grpc_service: 'cards.v1.CardService', grpc_method: 'CountCards' })).toBe(1);
    expect(sample(served.get('search')!, 'grpc_server_handled_total', { grpc_service: 'search.v1.SearchService', grpc_method: 'SemanticSearch', grpc_code: 'OK' })).toBe(1);
    for (const s of started) expect({ target: s.target, exit: await stop(s.child) }).toEqual({ target: s.target, exit: 0 });
  }, 150_000);

  it('runs the rebuild-search-index tool from the cards and all-in-one trees, as `tsx` runs it in those images', () => {
    const dataDir = join(out, 'rebuild-data');
    mkdirSync(join(dataDir, 'cards'), { recursive: true });
    openCardsDatabase(join(dataDir, 'cards', 'cards.db')).close();
    const tsxLoader = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
    const entries = { cards: 'src/cli/rebuild-search-index.ts', 'all-in-one': 'node_modules/@cards/cards/src/cli/rebuild-search-index.ts' };
    for (const [target, entry] of Object.entries(entries)) {
      const run = spawnSync(process.execPath, ['--import', tsxLoader, entry], { cwd: join(out, target), env: { ...embeddedEnv({ DATA_DIR: dataDir }), NODE_ENV: 'production' }, encoding: 'utf8', timeout: 60_000 });
      expect({ target, status: run.status, stderr: run.stderr }).toEqual({ target, status: 0, stderr: '' });
      expect(run.stdout).toContain('0 card(s) and 0 bookmark(s) queued');
    }
  }, 120_000);

  it('runs the all-in-one from its tree', async () => {
    const port = await freePort();
    // The all-in-one's five services leave METRICS_PORT alone; its gateway's /metrics, covering the process, moves there.
    const metricsPort = await freePort();
    const env = embeddedEnv({ DATA_DIR: join(out, 'all-in-one-data'), PORT: String(port), METRICS_PORT: String(metricsPort) });
    const { child, output } = startFromTree(join(out, 'all-in-one'), env);
    running.push(child);
    await waitFor('all-in-one readiness', async () => ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200 ? true : undefined), 90_000, output);
    expect((await fetch(`http://127.0.0.1:${port}/api/auth`)).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${port}/api/card/count`)).status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(sample(metrics, 'grpc_server_handled_total', { grpc_service: 'cards.v1.CardService', grpc_method: 'CountCards', grpc_code: 'OK' })).toBe(1);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
    expect(await stop(child)).toBe(0);
  }, 120_000);
});
