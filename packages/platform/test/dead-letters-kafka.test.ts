import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Kafka, logLevel } from 'kafkajs';
import { runDeadLettersCommand } from '../src/cli/dead-letters-command';
import { Topics } from '../src/events/event-bus';
import { KafkaDeadLetters } from '../src/events/kafka-dead-letters';
import { KafkaEventBus, replayTopicOf } from '../src/events/kafka-event-bus';
import { createLogger } from '../src/logger';
import { engineForSuite } from '../../../test/engines/suite';
import { startKafkaSync } from '../../../test/engines/kafka';
import { describeDeadLettersContract } from './dead-letters.contract';

const logger = createLogger('kafka-dead-letters-test', process.env.LOG_LEVEL ?? 'fatal');
const { engine: kafka, skipReason } = engineForSuite('kafka', startKafkaSync);
const brokers = kafka ? [kafka.brokers] : [];
const busIn = (namespace: string) =>
  new KafkaEventBus({ brokers, logger, namespace, partitions: 3, retryBaseMs: 20, heartbeatIntervalMs: 300, sessionTimeoutMs: 6000 });

// Each test a namespace of its own (KAFKA_NAMESPACE), so it uses the application's topic names on the shared broker.
describeDeadLettersContract(
  'kafka',
  async () => {
    const namespace = `dl-${randomBytes(4).toString('hex')}`;
    const bus = busIn(namespace);
    const deadLetters = new KafkaDeadLetters({ brokers, logger, namespace, partitions: 3 });
    return {
      bus,
      deadLetters,
      async close() {
        await bus.close();
        await deadLetters.close();
      },
    };
  },
  skipReason,
);

(kafka ? describe : describe.skip)(`dead letters on Kafka${skipReason ? ` — skipped: ${skipReason.split('\n')[0]}` : ''}`, () => {
  it('the command lists and replays through KAFKA_BROKERS and KAFKA_NAMESPACE; dead-letter and replay topics are kept forever', async () => {
    const namespace = `dl-${randomBytes(4).toString('hex')}`;
    const env = { KAFKA_BROKERS: brokers.join(','), KAFKA_NAMESPACE: namespace, DATA_DIR: '/nonexistent' };
    const run = async (...argv: string[]) => {
      const out: string[] = [];
      const code = await runDeadLettersCommand(argv, env, logger, { out: (l) => void out.push(l), err: (l) => void out.push(l) });
      return { code, out: out.join('\n') };
    };
    const bus = busIn(namespace);
    let broken = true;
    const handled: string[] = [];
    try {
      await bus.subscribe({
        group: 'notifications',
        topics: [Topics.verification],
        maxAttempts: 1,
        handler: async (e) => {
          if (broken) throw new Error('notification store refused');
          handled.push(e.key);
        },
      });
      await bus.publish([{ topic: Topics.verification, key: 'card-7', payload: new Uint8Array([1, 2, 3]) }]);
      let listed = await run('list', '--group', 'notifications');
      for (let i = 0; i < 200 && !listed.out.includes('card-7'); i++) listed = await run('list', '--group', 'notifications');
      expect(listed.code).toBe(0);
      expect(listed.out).toMatch(new RegExp(`^${Topics.verification}\\.dlq/\\d+/0  dead  ${Topics.verification}  notifications  card-7  -  .*attempts=1  "notification store refused"$`, 'm'));
      expect((await run('replay')).out).toContain('dry run: 1 dead letter(s)');
      broken = false;
      expect((await run('replay', '--yes')).out).toContain('1 dead letter(s) handed back');
      for (let i = 0; i < 600 && handled.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(handled).toEqual(['card-7']);
      expect((await run('replay', '--yes')).out).toContain('0 dead letter(s) handed back');

      const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        const names = [`${namespace}.${Topics.verification}.dlq`, `${namespace}.${replayTopicOf('notifications')}`];
        const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: names.map((name) => ({ type: 2, name, configNames: ['retention.ms'] })) });
        expect(resources.map((r) => [r.resourceName, r.configEntries[0]?.configValue])).toEqual(expect.arrayContaining(names.map((n) => [n, '-1'])));
      } finally {
        await admin.disconnect();
      }
    } finally {
      await bus.close();
    }
  }, 120_000);

  it('brings dead-letter and replay topics an earlier release created with the broker retention to retention.ms=-1 at subscribe, keeping their other settings, once', async () => {
    const namespace = `dl-${randomBytes(4).toString('hex')}`;
    const dlq = `${namespace}.${Topics.file}.dlq`;
    const replay = `${namespace}.${replayTopicOf('files-ingestion')}`;
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const settings = async () => {
      const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: [dlq, replay].map((name) => ({ type: 2, name, configNames: ['retention.ms', 'max.message.bytes'] })) });
      return Object.fromEntries(resources.map((r) => [r.resourceName, Object.fromEntries(r.configEntries.map((e) => [e.configName, e.configValue]))]));
    };
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => void (lines.push(chunk.toString()), done()) });
    const retentionLines = () => lines.filter((l) => l.includes('set retention.ms=-1')).map((l) => JSON.parse(l) as { topic: string; retentionMs: string });
    // A service starting: it subscribes, and is closed only once its consumer took an event (not while it joins its group).
    const subscribeOnce = async () => {
      const bus = new KafkaEventBus({ brokers, logger: createLogger('bus', 'info', sink), namespace, partitions: 3, heartbeatIntervalMs: 300, sessionTimeoutMs: 6000 });
      try {
        const key = randomBytes(4).toString('hex');
        let taken!: () => void;
        const delivered = new Promise<void>((resolve) => (taken = resolve));
        await bus.subscribe({ group: 'files-ingestion', topics: [Topics.file], handler: async (e) => void (e.key === key && taken()) });
        await bus.publish([{ topic: Topics.file, key, payload: new Uint8Array([1]) }]);
        await delivered;
      } finally {
        await bus.close();
      }
    };
    try {
      // As an earlier release left them: no retention of their own (the broker's 7 days), one with an operator's setting.
      await admin.createTopics({
        waitForLeaders: true,
        topics: [
          { topic: dlq, numPartitions: 3, configEntries: [{ name: 'max.message.bytes', value: '2000000' }] },
          { topic: replay, numPartitions: 3 },
        ],
      });
      expect(await settings()).toEqual({ [dlq]: { 'retention.ms': '604800000', 'max.message.bytes': '2000000' }, [replay]: { 'retention.ms': '604800000', 'max.message.bytes': '1048588' } });

      await subscribeOnce();
      expect(await settings()).toEqual({ [dlq]: { 'retention.ms': '-1', 'max.message.bytes': '2000000' }, [replay]: { 'retention.ms': '-1', 'max.message.bytes': '1048588' } });
      expect(retentionLines().map((l) => [l.topic, l.retentionMs]).sort()).toEqual([[`${Topics.file}.dlq`, '604800000'], [replayTopicOf('files-ingestion'), '604800000']]);

      // A restarted service finds them right and changes nothing.
      lines.length = 0;
      await subscribeOnce();
      expect(retentionLines()).toEqual([]);
      expect(await settings()).toEqual({ [dlq]: { 'retention.ms': '-1', 'max.message.bytes': '2000000' }, [replay]: { 'retention.ms': '-1', 'max.message.bytes': '1048588' } });
    } finally {
      await admin.disconnect();
    }
  }, 120_000);
});
