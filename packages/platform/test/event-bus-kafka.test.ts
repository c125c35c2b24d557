import { spawn } from 'node:child_process';
import { AssignerProtocol, Kafka, logLevel, type PartitionAssigner } from 'kafkajs';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { createEventBus } from '../src/events/create-event-bus';
import { DeadLetterHeaders, KafkaEventBus } from '../src/events/kafka-event-bus';
import { createLogger } from '../src/logger';
import { engineForSuite } from '../../../test/engines/suite';
import { startKafkaSync } from '../../../test/engines/kafka';
import { describeEventBusContract } from './event-bus.contract';
import { testTempDir } from '../../../test/support/cleanup';

const logger = createLogger('kafka-event-bus-test', process.env.LOG_LEVEL ?? 'fatal');
const { engine: kafka, skipReason } = engineForSuite('kafka', startKafkaSync);
const brokers = kafka ? [kafka.brokers] : [];
const busOn = () => new KafkaEventBus({ brokers, logger, partitions: 3, retryBaseMs: 20, heartbeatIntervalMs: 300, sessionTimeoutMs: 6000 });

/** Reads a whole dead-letter topic with a throwaway group. */
async function readDeadLetters(group: string, topic: string): Promise<{ key: string; payload: Uint8Array; headers: Record<string, string> }[]> {
  const client = new Kafka({ brokers, logLevel: logLevel.NOTHING });
  const admin = client.admin();
  await admin.connect();
  const dlq = `${topic}.dlq`;
  let end = 0;
  try {
    if ((await admin.listTopics()).includes(dlq)) end = (await admin.fetchTopicOffsets(dlq)).reduce((n, p) => n + Number(p.high), 0);
  } catch {
    // A topic created a moment ago may not have a leader in the metadata yet: the caller polls again.
  } finally {
    await admin.disconnect();
  }
  if (end === 0) return [];
  const consumer = client.consumer({ groupId: `dlq-reader-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 200 });
  const out: { key: string; payload: Uint8Array; headers: Record<string, string> }[] = [];
  await consumer.connect();
  await consumer.subscribe({ topics: [dlq], fromBeginning: true });
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
        out.push({ key: message.key?.toString() ?? '', payload: new Uint8Array(message.value ?? Buffer.alloc(0)), headers });
        if (out.length >= end) resolve();
      },
    });
  });
  await consumer.disconnect();
  return out.filter((m) => m.headers[DeadLetterHeaders.group] === group);
}

describeEventBusContract(
  'kafka',
  async () => {
    const bus = busOn();
    const others: KafkaEventBus[] = [];
    return {
      bus,
      reopen() {
        const other = busOn();
        others.push(other);
        return other;
      },
      deadLetters: readDeadLetters,
      async close() {
        await Promise.allSettled(others.map((o) => o.close()));
        await bus.close();
      },
    };
  },
  skipReason,
);

(kafka ? describe : describe.skip)(`KafkaEventBus specifics${skipReason ? ` — skipped: ${skipReason.split('\n')[0]}` : ''}`, () => {
  it('ready() fails fast with a message naming the unreachable brokers', async () => {
    const bus = new KafkaEventBus({ brokers: ['127.0.0.1:1'], logger, readyTimeoutMs: 3000 });
    await expect(bus.ready()).rejects.toThrow(/Kafka brokers 127\.0\.0\.1:1 are unreachable/);
    await bus.close();
  });

  it('creates topics with KAFKA_PARTITIONS partitions and spreads keys over them', async () => {
    const bus = createEventBus({ DATA_DIR: testTempDir('unused-'), KAFKA_BROKERS: brokers.join(','), KAFKA_PARTITIONS: '4' }, logger);
    const topic = `spec.t${randomBytes(4).toString('hex')}.v1`;
    expect(bus).toBeInstanceOf(KafkaEventBus);
    try {
      await bus.ready();
      await bus.publish(Array.from({ length: 40 }, (_, i) => ({ topic, key: `card-${i}`, payload: new Uint8Array([i]) })));
      const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      const offsets = await admin.fetchTopicOffsets(topic);
      await admin.disconnect();
      expect(offsets).toHaveLength(4);
      expect(offsets.filter((p) => Number(p.high) > 0).length).toBeGreaterThan(1);
      expect(offsets.reduce((n, p) => n + Number(p.high), 0)).toBe(40);
    } finally {
      await bus.close();
    }
  });

  it('gives both members of a group a share of the partitions', async () => {
    const topic = `spec.t${randomBytes(4).toString('hex')}.v1`;
    const group = `spec-g${randomBytes(4).toString('hex')}`;
    const a = busOn();
    const b = busOn();
    const byA = new Set<string>();
    const byB = new Set<string>();
    try {
      await a.subscribe({ group, topics: [topic], handler: async (e) => void byA.add(e.key) });
      await b.subscribe({ group, topics: [topic], handler: async (e) => void byB.add(e.key) });
      // Publish until both members have handled something: the second member's join may still be settling.
      for (let round = 0; round < 100 && (byA.size === 0 || byB.size === 0); round++) {
        await a.publish(Array.from({ length: 12 }, (_, i) => ({ topic, key: `r${round}-${i}`, payload: new Uint8Array([i]) })));
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(byA.size).toBeGreaterThan(0);
      expect(byB.size).toBeGreaterThan(0);
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
    }
  }, 60_000);

  it('a consumer process killed before committing: the group gets its message again', async () => {
    const topic = `spec.t${randomBytes(4).toString('hex')}.v1`;
    const group = `spec-g${randomBytes(4).toString('hex')}`;
    const bus = busOn();
    const root = resolve(__dirname, '../../..');
    const child = spawn(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), join(__dirname, 'fixtures/kafka-consumer-process.ts'), brokers.join(','), group, topic], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let output = '';
      child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
      await bus.publish([{ topic, key: 'card-1', payload: new TextEncoder().encode('unfinished') }]);
      for (let i = 0; i < 300 && !output.includes('handling unfinished'); i++) await new Promise((r) => setTimeout(r, 100));
      expect(output).toContain('handling unfinished');
      child.kill('SIGKILL');
      const got: string[] = [];
      await bus.subscribe({ group, topics: [topic], handler: async (e) => void got.push(new TextDecoder().decode(e.payload)) });
      // The broker hands the dead member's partitions over once its session (6 s) times out.
      for (let i = 0; i < 300 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(got).toEqual(['unfinished']);
    } finally {
      child.kill('SIGKILL');
      await bus.close();
    }
  }, 60_000);

  it.each([
    ['just after subscribe() (the consumers still connecting or joining their groups)', 'joining', 'closed'],
    ['while subscribe() is still creating topics (subscribe() then fails)', 'subscribing', 'subscribe failed: event bus is closed\nclosed'],
  ])('closed %s, the bus leaves nothing running: its process exits by itself', async (_when, mode, expected) => {
    const root = resolve(__dirname, '../../..');
    const child = spawn(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), join(__dirname, 'fixtures/kafka-close-process.ts'), brokers.join(','), mode], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // A child still running long after its bus closed is the hang itself: it is killed so that jest cannot hang with it.
    let watchdog: NodeJS.Timeout | undefined;
    const stuck = new Promise<'stuck'>((resolve) => (watchdog = setTimeout(() => resolve('stuck'), 45_000)));
    try {
      const outcome = await Promise.race([exited, stuck]);
      expect({ outcome, output }).toEqual({ outcome: 0, output: `${expected}\n` });
    } finally {
      clearTimeout(watchdog);
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('close() does not wait for a JoinGroup the broker holds until the rebalance ends: it resolves while the group still waits for its other member', async () => {
    const topic = `spec.t${randomBytes(4).toString('hex')}.v1`;
    const group = `spec-g${randomBytes(4).toString('hex')}`;
    const client = new Kafka({ brokers, logLevel: logLevel.NOTHING });
    const admin = client.admin();
    // A member busy in its handler neither heartbeats nor rejoins, so a rebalance waits for it until its session (30 s) ends.
    const busy = client.consumer({ groupId: group, sessionTimeout: 30_000, rebalanceTimeout: 60_000, heartbeatInterval: 3000 });
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let handling: () => void = () => undefined;
    const handlingStarted = new Promise<void>((resolve) => (handling = resolve));
    const bus = busOn();
    try {
      await admin.connect();
      await bus.publish([{ topic, key: 'card-1', payload: new Uint8Array([1]) }]);
      await busy.connect();
      await busy.subscribe({ topics: [topic], fromBeginning: true });
      await busy.run({
        eachMessage: async () => {
          handling();
          await released;
        },
      });
      await handlingStarted;
      const busyMember = (await admin.describeGroups([group])).groups[0]!.members.map((m) => m.memberId);
      expect(busyMember).toHaveLength(1);

      // The bus's consumer asks to join: the broker holds its JoinGroup until the busy member rejoins or expires.
      await bus.subscribe({ group, topics: [topic], handler: async () => undefined });
      while ((await admin.describeGroups([group])).groups[0]!.state !== 'PreparingRebalance') await new Promise((r) => setTimeout(r, 100));
      await bus.close();

      // Before, close() (disconnect()) waited for the join, which the broker answers only once the busy member is gone.
      const after = (await admin.describeGroups([group])).groups[0]!;
      expect({ state: after.state, members: after.members.map((m) => m.memberId).filter((id) => busyMember.includes(id)) }).toEqual({ state: 'PreparingRebalance', members: busyMember });
    } finally {
      release();
      await bus.close();
      await busy.disconnect().catch(() => undefined);
      await admin.disconnect();
    }
  }, 120_000);

  it('namespaces (KAFKA_NAMESPACE) keep systems sharing one cluster apart; handlers see plain topic names', async () => {
    const suffix = randomBytes(4).toString('hex');
    const a = createEventBus({ DATA_DIR: '/nonexistent', KAFKA_BROKERS: brokers.join(','), KAFKA_NAMESPACE: `sys-a-${suffix}` }, logger);
    const b = createEventBus({ DATA_DIR: '/nonexistent', KAFKA_BROKERS: brokers.join(','), KAFKA_NAMESPACE: `sys-b-${suffix}` }, logger);
    const byA: string[] = [];
    const byB: string[] = [];
    try {
      // Same group and topic names in both systems, as two deployments of one service would use.
      await a.subscribe({ group: 'search-index', topics: ['cards.card.v1'], handler: async (e) => void byA.push(`${e.topic} ${new TextDecoder().decode(e.payload)}`) });
      await b.subscribe({ group: 'search-index', topics: ['cards.card.v1'], handler: async (e) => void byB.push(`${e.topic} ${new TextDecoder().decode(e.payload)}`) });
      await a.publish([{ topic: 'cards.card.v1', key: 'k', payload: new TextEncoder().encode('from a') }]);
      await b.publish([{ topic: 'cards.card.v1', key: 'k', payload: new TextEncoder().encode('from b') }]);
      for (let i = 0; i < 200 && (byA.length === 0 || byB.length === 0); i++) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300));
      expect(byA).toEqual(['cards.card.v1 from a']);
      expect(byB).toEqual(['cards.card.v1 from b']);
      const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      const topics = await admin.listTopics();
      await admin.disconnect();
      expect(topics).toEqual(expect.arrayContaining([`sys-a-${suffix}.cards.card.v1`, `sys-b-${suffix}.cards.card.v1`]));
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
    }
  });

  it('a consumer kafkajs stopped for good (its group join refused) starts again and consumes once it can join', async () => {
    const topic = `spec.t${randomBytes(4).toString('hex')}.v1`;
    const group = `spec-g${randomBytes(4).toString('hex')}`;
    // A member of the group speaking another assignment protocol makes the broker refuse our consumer's join with
    // INCONSISTENT_GROUP_PROTOCOL, which kafkajs does not retry (as it does not retry "coordinator loading").
    const otherProtocol: PartitionAssigner = () => ({
      name: 'OtherAssigner',
      version: 1,
      assign: async ({ members }) => members.map((m) => ({ memberId: m.memberId, memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: {}, userData: Buffer.alloc(0) }) })),
      protocol: ({ topics }) => ({ name: 'OtherAssigner', metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }) }),
    });
    const other = new Kafka({ brokers, logLevel: logLevel.NOTHING }).consumer({ groupId: group, partitionAssigners: [otherProtocol], heartbeatInterval: 300, sessionTimeout: 6000 });
    const logged: string[] = [];
    const bus = new KafkaEventBus({ brokers, logger: createLogger('kafka-event-bus-test', 'error', { write: (line: string) => void logged.push(line) }), partitions: 3, retryBaseMs: 20, heartbeatIntervalMs: 300, sessionTimeoutMs: 6000 });
    const seen: string[] = [];
    try {
      await bus.publish([{ topic, key: 'card-1', payload: new TextEncoder().encode('waiting') }]);
      await other.connect();
      await other.subscribe({ topics: [topic], fromBeginning: true });
      const joined = new Promise((resolve) => other.on(other.events.GROUP_JOIN, resolve));
      await other.run({ autoCommit: false, eachMessage: async () => undefined });
      await joined;
      await bus.subscribe({ group, topics: [topic], handler: async (e) => void seen.push(new TextDecoder().decode(e.payload)) });
      for (let i = 0; i < 300 && !logged.some((l) => l.includes('Crash')); i++) await new Promise((r) => setTimeout(r, 100));
      expect(logged.join('')).toMatch(/Crash: .*protocol/i);
      expect(seen).toEqual([]);
      await other.disconnect();
      for (let i = 0; i < 600 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(seen).toEqual(['waiting']);
    } finally {
      await other.disconnect().catch(() => undefined);
      await bus.close();
    }
  }, 120_000);

  it('dead letters carry where they came from and why', async () => {
    const topic = `spec.t${randomBytes(4).toString('hex')}.v1`;
    const group = `spec-g${randomBytes(4).toString('hex')}`;
    const bus = busOn();
    try {
      await bus.subscribe({ group, topics: [topic], maxAttempts: 2, handler: async () => Promise.reject(new Error('broken handler')) });
      await bus.publish([{ topic, key: 'card-9', payload: new Uint8Array([9]) }]);
      let dead: Awaited<ReturnType<typeof readDeadLetters>> = [];
      for (let i = 0; i < 100 && dead.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        dead = await readDeadLetters(group, topic);
      }
      expect(dead).toHaveLength(1);
      expect(dead[0]!.headers).toMatchObject({
        [DeadLetterHeaders.topic]: topic,
        [DeadLetterHeaders.group]: group,
        [DeadLetterHeaders.error]: 'broken handler',
        [DeadLetterHeaders.attempts]: '2',
        [DeadLetterHeaders.offset]: '0',
      });
    } finally {
      await bus.close();
    }
  });
});
