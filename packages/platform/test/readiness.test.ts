import { Writable } from 'node:stream';
import pino from 'pino';
import { ClientError, Status } from 'nice-grpc';
import { health, identity } from '@cards/proto';
import { createChannel, createClient } from 'nice-grpc';
import { createGrpcClient } from '../src/grpc-client';
import { enableInProcessCalls } from '../src/in-process-calls';
import { startGrpcServer, type GrpcServerHandle } from '../src/grpc-server';
import { EngineReadinessMonitor, isEngineUnavailableError, readinessSettingsFrom } from '../src/readiness';
import { serviceMetrics } from '../src/service-metrics';
import { serviceWith } from './support/service-with';

/** A logger that keeps the messages it was given, to count state-change lines. */
function recordingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

/** An engine whose answer the test decides: up, down (rejects at once) or hanging (never answers). */
function controllableEngine() {
  let mode: 'up' | 'down' | 'hang' = 'up';
  let probes = 0;
  return {
    set(next: 'up' | 'down' | 'hang') {
      mode = next;
    },
    get probes() {
      return probes;
    },
    async check() {
      probes++;
      if (mode === 'down') throw new Error('connect ECONNREFUSED 127.0.0.1:1');
      if (mode === 'hang') await new Promise(() => undefined);
    },
  };
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('EngineReadinessMonitor', () => {
  it('turns not ready after the failure threshold, back on the first answer, and logs each change once', async () => {
    const { logger, lines } = recordingLogger();
    const engine = controllableEngine();
    const monitor = new EngineReadinessMonitor({ checks: [{ name: 'MongoDB (MONGO_URL)', healthName: 'engine:mongodb', check: () => engine.check() }], logger, failureThreshold: 2 });
    const changes: boolean[] = [];
    monitor.onChange(({ ready }) => changes.push(ready));
    expect(monitor.ready).toBe(true);

    engine.set('down');
    expect(await monitor.checkNow()).toBe(true); // one failure is below the threshold
    expect(await monitor.checkNow()).toBe(false);
    expect(await monitor.checkNow()).toBe(false);
    expect(monitor.unavailableReason()).toBe('MongoDB (MONGO_URL) is unreachable; try again shortly');
    expect(monitor.downEngines()).toEqual([{ name: 'MongoDB (MONGO_URL)', error: 'connect ECONNREFUSED 127.0.0.1:1' }]);

    engine.set('up');
    expect(await monitor.checkNow()).toBe(true);
    expect(await monitor.checkNow()).toBe(true);
    expect(monitor.unavailableReason()).toBeUndefined();
    expect(changes).toEqual([false, true]);
    const messages = lines.map((l) => l.msg);
    expect(messages.filter((m) => m.includes('is unreachable'))).toHaveLength(1);
    expect(messages.filter((m) => m.endsWith('answers again: ready'))).toHaveLength(1);
  });

  it('counts a probe that does not answer within the timeout as failed, without stacking probes on the engine', async () => {
    const engine = controllableEngine();
    const monitor = new EngineReadinessMonitor({ checks: [{ name: 'Kafka (KAFKA_BROKERS)', healthName: 'engine:kafka', check: () => engine.check() }], logger: pino({ level: 'silent' }), timeoutMs: 50, failureThreshold: 1 });
    engine.set('hang');
    // The probe never settles: checkNow answering at all is its timeout at work (no wall-clock bound asserted here, which
    // a test worker starved of CPU for a second on a loaded machine would miss).
    expect(await monitor.checkNow()).toBe(false);
    expect(await monitor.checkNow()).toBe(false);
    expect(engine.probes).toBe(1); // the hanging probe is awaited again, not repeated
    expect(monitor.downEngines()[0]?.error).toBe('no answer within 50 ms');
    // A probe that never settles is given up after three timeouts, so an engine that answers again is seen.
    await new Promise((r) => setTimeout(r, 160));
    engine.set('up');
    expect(await monitor.checkNow()).toBe(true);
    expect(engine.probes).toBe(2);
  });

  it('gives up a probe that never settles after three timeouts of the monotonic clock, even when the wall clock was set back an hour', async () => {
    // Fake timers step the wall clock (setSystemTime) without moving performance.now, which only timers advance.
    jest.useFakeTimers({ now: new Date('2026-11-24T12:00:00Z'), doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const engine = controllableEngine();
      const monitor = new EngineReadinessMonitor({ checks: [{ name: 'Kafka (KAFKA_BROKERS)', healthName: 'engine:kafka', check: () => engine.check() }], logger: pino({ level: 'silent' }), timeoutMs: 50, failureThreshold: 1 });
      engine.set('hang');
      const first = monitor.checkNow();
      await jest.advanceTimersByTimeAsync(50);
      expect(await first).toBe(false);
      jest.setSystemTime(Date.now() - 3_600_000);
      await jest.advanceTimersByTimeAsync(200);
      engine.set('up');
      const second = monitor.checkNow();
      await jest.advanceTimersByTimeAsync(50);
      expect(await second).toBe(true);
      expect(engine.probes).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });

  it('stays ready and refuses no call while an engine that does not gate requests is down, reporting that engine alone', async () => {
    const { logger, lines } = recordingLogger();
    const kafka = controllableEngine();
    const mongo = controllableEngine();
    const monitor = new EngineReadinessMonitor({
      checks: [
        { name: 'MongoDB (MONGO_URL)', healthName: 'engine:mongodb', check: () => mongo.check() },
        { name: 'Kafka (KAFKA_BROKERS)', healthName: 'engine:kafka', check: () => kafka.check(), gatesRequests: false },
      ],
      logger,
      failureThreshold: 1,
    });
    const changes: { ready: boolean; engines: Record<string, boolean> }[] = [];
    monitor.onChange(({ ready, engines }) => changes.push({ ready, engines: Object.fromEntries(engines) }));

    kafka.set('down');
    expect(await monitor.checkNow()).toBe(true);
    expect(monitor.ready).toBe(true);
    expect(monitor.unavailableReason()).toBeUndefined();
    expect(monitor.downEngines()).toEqual([{ name: 'Kafka (KAFKA_BROKERS)', error: 'connect ECONNREFUSED 127.0.0.1:1' }]);
    expect(Object.fromEntries(monitor.status.engines)).toEqual({ 'engine:mongodb': true, 'engine:kafka': false });

    mongo.set('down');
    expect(await monitor.checkNow()).toBe(false);
    kafka.set('up');
    mongo.set('up');
    expect(await monitor.checkNow()).toBe(true);
    expect(changes).toEqual([
      { ready: true, engines: { 'engine:mongodb': true, 'engine:kafka': false } },
      { ready: false, engines: { 'engine:mongodb': false, 'engine:kafka': false } },
      { ready: true, engines: { 'engine:mongodb': true, 'engine:kafka': true } },
    ]);
    const messages = lines.map((l) => l.msg);
    expect(messages).toContain('Kafka (KAFKA_BROKERS) is unreachable: still ready, engine:kafka NOT_SERVING until it answers again');
    expect(messages).toContain('Kafka (KAFKA_BROKERS) answers again');
    expect(messages).toContain('MongoDB (MONGO_URL) is unreachable: not ready until it answers again');
  });

  it('reports a health name shared by two engines as down while either is down', async () => {
    const queue = controllableEngine();
    const store = controllableEngine();
    const monitor = new EngineReadinessMonitor({
      checks: [
        { name: 'MongoDB (MONGO_URL)', healthName: 'engine:mongodb', check: () => store.check() },
        { name: 'MongoDB (MONGO_URL)', healthName: 'engine:mongodb', check: () => queue.check(), gatesRequests: false },
      ],
      logger: pino({ level: 'silent' }),
      failureThreshold: 1,
    });
    queue.set('down');
    expect(await monitor.checkNow()).toBe(true);
    expect(monitor.status.engines.get('engine:mongodb')).toBe(false);
  });

  it('probes on its own every interval once started, and not after stop()', async () => {
    const engine = controllableEngine();
    const monitor = new EngineReadinessMonitor({ checks: [{ name: 'S3 (S3_ENDPOINT)', healthName: 'engine:s3', check: () => engine.check() }], logger: pino({ level: 'silent' }), intervalMs: 20, failureThreshold: 1 });
    monitor.start();
    engine.set('down');
    await until(() => !monitor.ready);
    engine.set('up');
    await until(() => monitor.ready);
    monitor.stop();
    const probes = engine.probes;
    await new Promise((r) => setTimeout(r, 100));
    expect(engine.probes).toBeLessThanOrEqual(probes + 1);
  });

  it('shows each engine on /metrics while started: card_library_engine_unreachable 1 while down, 0 again once it answers', async () => {
    const samples = async () =>
      (await serviceMetrics.getSingleMetricAsString('card_library_engine_unreachable'))
        .split('\n')
        .filter((line) => line.startsWith('card_library_engine_unreachable{'))
        .sort();
    const kafka = controllableEngine();
    const store = controllableEngine();
    const monitor = new EngineReadinessMonitor({
      checks: [
        { name: 'MongoDB (MONGO_URL)', healthName: 'engine:mongodb', check: () => store.check() },
        { name: 'Kafka (KAFKA_BROKERS)', healthName: 'engine:kafka', check: () => kafka.check(), gatesRequests: false },
      ],
      logger: pino({ level: 'silent' }),
      intervalMs: 20,
      failureThreshold: 1,
    });
    expect(await samples()).toEqual([]);
    monitor.start();
    expect(await samples()).toEqual(['card_library_engine_unreachable{engine="kafka",gates_requests="false"} 0', 'card_library_engine_unreachable{engine="mongodb",gates_requests="true"} 0']);
    kafka.set('down');
    await until(() => monitor.status.engines.get('engine:kafka') === false);
    expect(await samples()).toEqual(['card_library_engine_unreachable{engine="kafka",gates_requests="false"} 1', 'card_library_engine_unreachable{engine="mongodb",gates_requests="true"} 0']);
    kafka.set('up');
    store.set('down');
    await until(() => !monitor.ready && monitor.status.engines.get('engine:kafka') === true);
    expect(await samples()).toEqual(['card_library_engine_unreachable{engine="kafka",gates_requests="false"} 0', 'card_library_engine_unreachable{engine="mongodb",gates_requests="true"} 1']);
    monitor.stop();
    expect(await samples()).toEqual([]);
  });

  it('reads its timing from READINESS_* variables and names a bad one', () => {
    expect(readinessSettingsFrom({})).toEqual({ intervalMs: 2000, timeoutMs: 5000, failureThreshold: 2 });
    // Only spaces is unset, as empty is (it read as 0 and stopped the start: 'must be at least 100').
    expect(readinessSettingsFrom({ READINESS_INTERVAL_MS: ' ', READINESS_TIMEOUT_MS: ' ', READINESS_FAILURE_THRESHOLD: ' ' })).toEqual({ intervalMs: 2000, timeoutMs: 5000, failureThreshold: 2 });
    expect(readinessSettingsFrom({ READINESS_INTERVAL_MS: '500', READINESS_TIMEOUT_MS: '400', READINESS_FAILURE_THRESHOLD: '1' })).toEqual({ intervalMs: 500, timeoutMs: 400, failureThreshold: 1 });
    expect(() => readinessSettingsFrom({ READINESS_INTERVAL_MS: 'soon' })).toThrow(/READINESS_INTERVAL_MS/);
  });

  it('tells engine-unreachable errors from other failures', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:27017'), { code: 'ECONNREFUSED' });
    expect(isEngineUnavailableError(refused)).toBe(true);
    expect(isEngineUnavailableError(Object.assign(new Error('Server selection timed out after 5000 ms'), { name: 'MongoServerSelectionError' }))).toBe(true);
    expect(isEngineUnavailableError(new Error('wrapped', { cause: refused }))).toBe(true);
    expect(isEngineUnavailableError(new Error('MongoDB at mongodb://h:1 is unreachable (MONGO_URL): x'))).toBe(true);
    expect(isEngineUnavailableError(new Error('E11000 duplicate key'))).toBe(false);
    expect(isEngineUnavailableError(undefined)).toBe(false);
  });
});

describe('gRPC health and calls follow the monitor', () => {
  const engine = controllableEngine();
  const kafka = controllableEngine();
  let down: 'no' | 'store' = 'no';
  let server: GrpcServerHandle;
  const monitor = new EngineReadinessMonitor({
    checks: [
      { name: 'MongoDB (MONGO_URL)', healthName: 'engine:mongodb', check: () => engine.check() },
      { name: 'Kafka (KAFKA_BROKERS)', healthName: 'engine:kafka', check: () => kafka.check(), gatesRequests: false },
    ],
    logger: pino({ level: 'silent' }),
    intervalMs: 30,
    failureThreshold: 1,
  });
  beforeAll(async () => {
    server = await startGrpcServer({
      name: 'identity.v1.IdentityService',
      logger: pino({ level: 'silent' }),
      readiness: monitor,
      register: (s) =>
        s.add(identity.IdentityServiceDefinition, serviceWith(identity.IdentityServiceDefinition, {
          async resolveSession() {
            // What a driver throws when its server is gone (before the monitor has noticed).
            if (down === 'store') throw Object.assign(new Error('Server selection timed out after 5000 ms'), { name: 'MongoServerSelectionError' });
            return { id: 'u1', email: 'a@b.co', visibleEmail: true };
          },
        })),
    });
  });
  afterAll(() => server.shutdown());

  /** A health client and an identity client of the server, over the network or in process. */
  function connect(inProcess: boolean) {
    enableInProcessCalls(inProcess);
    const channel = createChannel(server.address);
    const healthClient = createClient(health.HealthDefinition, channel);
    const { client, channel: serviceChannel } = createGrpcClient(identity.IdentityServiceDefinition, server.address);
    return {
      client,
      statusOf: async (service: string) => (await healthClient.check({ service })).status,
      close() {
        enableInProcessCalls(false);
        channel.close();
        serviceChannel.close();
      },
    };
  }

  it.each([
    ['over the network', false],
    ['in process', true],
  ])('is SERVING, NOT_SERVING while the engine is down (calls %s refused UNAVAILABLE at once), and SERVING again', async (_transport, inProcess) => {
    const { client, statusOf, close } = connect(inProcess);
    const { SERVING, NOT_SERVING } = health.HealthCheckResponse_ServingStatus;
    try {
      expect(await statusOf('')).toBe(SERVING);
      expect(await statusOf('identity.v1.IdentityService')).toBe(SERVING);
      expect(await statusOf('engine:mongodb')).toBe(SERVING);
      await expect(client.resolveSession({ token: 't' })).resolves.toMatchObject({ id: 'u1' });

      // Before the monitor notices, a driver's connection error is answered UNAVAILABLE, not INTERNAL.
      down = 'store';
      const early = await client.resolveSession({ token: 't' }).catch((e: unknown) => e);
      expect(early).toBeInstanceOf(ClientError);
      expect(early).toMatchObject({ code: Status.UNAVAILABLE });

      engine.set('down');
      await until(() => !monitor.ready);
      expect(await statusOf('')).toBe(NOT_SERVING);
      expect(await statusOf('identity.v1.IdentityService')).toBe(NOT_SERVING);
      expect(await statusOf('engine:mongodb')).toBe(NOT_SERVING);
      expect(await statusOf('engine:kafka')).toBe(SERVING);
      expect(await statusOf('liveness')).toBe(SERVING); // alive: an engine outage must not get the process restarted
      const refused = await client.resolveSession({ token: 't' }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: Status.UNAVAILABLE, details: 'Service temporarily unavailable: MongoDB (MONGO_URL) is unreachable; try again shortly' });

      down = 'no';
      engine.set('up');
      await until(() => monitor.ready);
      expect(await statusOf('')).toBe(SERVING);
      expect(await statusOf('identity.v1.IdentityService')).toBe(SERVING);
      expect(await statusOf('engine:mongodb')).toBe(SERVING);
      await expect(client.resolveSession({ token: 't' })).resolves.toMatchObject({ id: 'u1' });
    } finally {
      close();
    }
  });

  it.each([
    ['over the network', false],
    ['in process', true],
  ])('stays SERVING and serves calls (%s) while an engine that does not gate requests is down; only its own name turns NOT_SERVING', async (_transport, inProcess) => {
    const { client, statusOf, close } = connect(inProcess);
    const { SERVING, NOT_SERVING } = health.HealthCheckResponse_ServingStatus;
    try {
      expect(await statusOf('engine:kafka')).toBe(SERVING);
      kafka.set('down');
      await until(() => monitor.status.engines.get('engine:kafka') === false);
      expect(await statusOf('engine:kafka')).toBe(NOT_SERVING);
      // A pod whose readiness ("") turned NOT_SERVING would leave its Service's endpoints: the outbox keeps the events instead.
      expect(await statusOf('')).toBe(SERVING);
      expect(await statusOf('identity.v1.IdentityService')).toBe(SERVING);
      expect(await statusOf('liveness')).toBe(SERVING);
      await expect(client.resolveSession({ token: 't' })).resolves.toMatchObject({ id: 'u1' });

      kafka.set('up');
      await until(() => monitor.status.engines.get('engine:kafka') === true);
      expect(await statusOf('engine:kafka')).toBe(SERVING);
    } finally {
      kafka.set('up');
      close();
    }
  });
});
