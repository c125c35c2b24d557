import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { spawnNodeEntry, type NodeProcess } from '../support/node-process';
import { freePortsSync } from './engine-support';
import { startMongoSync } from './mongo';
import { FAST_READINESS, healthOf, startServiceProcess, waitFor, type ServiceProcess } from './service-process';
import { describeOnEngine, engineForSuite, report } from './suite';
import { testTempDir } from '../support/cleanup';

// A process on MongoDB that lost its server stops on SIGTERM with its normal code (0) instead of running on: before,
// the search service's verification outbox relay never finished its final flush (each drain waited out server
// selection, longer than the relay's interval, which kept asking for another), so the all-in-one and search alone
// ran until killed, and files and cards each waited out a drain stuck in server selection.
const { engine, skipReason } = engineForSuite('mongo-java-server', startMongoSync);

/** The chart leaves 5 s after the drain for closing consumers and stores; a stop with MongoDB gone takes milliseconds. */
const EXIT_BOUND_MS = 5_000;

const ROOT = resolve(__dirname, '..', '..');
// An embeddings endpoint keeps the bundled word-vector model (1 GB) from loading; nothing here is embedded.
const NO_MODEL = { EMBEDDINGS_URL: 'http://127.0.0.1:9/v1', EMBEDDINGS_DIMENSIONS: '8' };

interface Running {
  name: string;
  process: NodeProcess;
  /** Resolves once it serves on MongoDB. */
  ready(): Promise<unknown>;
  /** Resolves once it has noticed that MongoDB is gone. */
  noticedLoss(): Promise<unknown>;
  cleanUp(): Promise<void>;
}

describeOnEngine('shutdown with MongoDB gone (mongo-java-server stopped)', skipReason, () => {
  const running: Running[] = [];
  const healthChannels: { close(): void }[] = [];

  const service = (name: string, env: Record<string, string>, grpcPort: number): Running => {
    const address = `127.0.0.1:${grpcPort}`;
    const started: ServiceProcess = startServiceProcess(name, {
      MONGO_URL: engine!.url,
      MONGO_DATABASE_PREFIX: `shutdown_${name}`,
      [`${name.toUpperCase()}_GRPC_HOST`]: '127.0.0.1',
      [`${name.toUpperCase()}_GRPC_PORT`]: String(grpcPort),
      ...FAST_READINESS,
      ...env,
    });
    const probe = healthOf(address);
    healthChannels.push(probe.channel);
    return {
      name: `${name} alone`,
      process: started,
      ready: () => waitFor(`${name} SERVING`, async () => (await probe.status('engine:mongodb')) === 'SERVING', 60_000, started),
      noticedLoss: () => waitFor(`${name} engine:mongodb NOT_SERVING`, async () => (await probe.status('engine:mongodb')) === 'NOT_SERVING', 30_000, started),
      cleanUp: () => started.stop(),
    };
  };

  const allInOne = (port: number): Running => {
    const dataDir = testTempDir('cards-all-in-one-');
    const started = spawnNodeEntry(join(ROOT, 'packages/all-in-one/src/main.ts'), {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir, LOG_LEVEL: 'info', PORT: String(port), HOST: '127.0.0.1', WEB_DIST_DIR: '', MONGO_URL: engine!.url, MONGO_DATABASE_PREFIX: 'shutdown_all', ...FAST_READINESS, ...NO_MODEL },
    });
    const healthz = async () => (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined))?.status;
    const asService = { child: started.child, output: started.output } as ServiceProcess;
    return {
      name: 'all-in-one',
      process: started,
      ready: () => waitFor('all-in-one /healthz 200', async () => (await healthz()) === 200, 90_000, asService),
      // /healthz asks every service, and those that MongoDB gates turn NOT_SERVING.
      noticedLoss: () => waitFor('all-in-one /healthz 503', async () => (await healthz()) === 503, 30_000, asService),
      async cleanUp() {
        if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill('SIGKILL');
        await started.exited;
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  };

  beforeAll(async () => {
    const [gatewayPort, identity, cards, search, files, filesHttp, notifications] = freePortsSync(7) as [number, number, number, number, number, number, number];
    running.push(
      allInOne(gatewayPort),
      service('identity', { PASSWORD_HASH_COST: '1024' }, identity),
      service('cards', {}, cards),
      service('search', NO_MODEL, search),
      service('files', { FILES_HTTP_HOST: '127.0.0.1', FILES_HTTP_PORT: String(filesHttp) }, files),
      service('notifications', {}, notifications),
    );
    for (const r of running) await r.ready();
  }, 180_000);

  afterAll(async () => {
    for (const channel of healthChannels) channel.close();
    await Promise.all(running.map((r) => r.cleanUp()));
  }, 60_000);

  it('the all-in-one and each service alone exit 0 soon after SIGTERM while MongoDB is down', async () => {
    await engine!.stop();
    await Promise.all(running.map((r) => r.noticedLoss()));
    const outcomes = await Promise.all(
      running.map(async (r) => {
        const started = Date.now();
        r.process.child.kill('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const code = await Promise.race([r.process.exited, new Promise<string>((done) => (timer = setTimeout(() => done('still running'), EXIT_BOUND_MS)))]);
        clearTimeout(timer);
        report(`[shutdown without MongoDB] ${r.name}: ${code === 'still running' ? `still running ${EXIT_BOUND_MS} ms after SIGTERM` : `exited ${code} after ${Date.now() - started} ms`}`);
        return { name: r.name, code };
      }),
    );
    expect(outcomes).toEqual(running.map((r) => ({ name: r.name, code: 0 })));
  }, 120_000);
});
