import { freePortsSync } from './engine-support';
import { startServiceProcess } from './service-process';

// Issue #8: each service started alone with a production adapter configured but its engine unreachable
// exits at start with a message naming the variable, instead of serving or hanging. No engine is needed:
// the addresses point at a loopback port nobody listens on.
describe('services started with an unreachable engine', () => {
  const [dead] = freePortsSync(1) as [number];
  const cases: { service: string; variable: string; env: Record<string, string> }[] = [
    { service: 'identity', variable: 'MONGO_URL', env: { MONGO_URL: `mongodb://127.0.0.1:${dead}` } },
    { service: 'notifications', variable: 'MONGO_URL', env: { MONGO_URL: `mongodb://127.0.0.1:${dead}` } },
    { service: 'cards', variable: 'KAFKA_BROKERS', env: { KAFKA_BROKERS: `127.0.0.1:${dead}` } },
    {
      service: 'search',
      variable: 'ELASTICSEARCH_URL',
      // An embeddings endpoint keeps the bundled word-vector model (1 GB) from loading in the background.
      env: { ELASTICSEARCH_URL: `http://127.0.0.1:${dead}`, EMBEDDINGS_URL: `http://127.0.0.1:${dead}/v1`, EMBEDDINGS_DIMENSIONS: '8' },
    },
    { service: 'files', variable: 'S3_ENDPOINT', env: { S3_ENDPOINT: `http://127.0.0.1:${dead}`, S3_ACCESS_KEY: 'key', S3_SECRET_KEY: 'secret-key' } },
  ];

  it.concurrent.each(cases)('$service with $variable unreachable exits at start naming $variable', async ({ service, variable, env }) => {
    const started = Date.now();
    const running = startServiceProcess(service, { ...env, [`${service.toUpperCase()}_GRPC_PORT`]: '0' });
    const timer = setTimeout(() => running.child.kill('SIGKILL'), 45_000);
    try {
      const code = await running.exited;
      expect(code).toBe(1);
      const fatal = running
        .output()
        .split('\n')
        .find((line) => line.includes('failed to start'));
      expect(fatal).toBeDefined();
      expect(fatal).toContain(`(${variable})`);
      expect(fatal).toContain('unreachable');
      process.stdout.write(`[start] ${service} with ${variable} unreachable exited in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    } finally {
      clearTimeout(timer);
      await running.stop();
    }
  }, 60_000);
});
