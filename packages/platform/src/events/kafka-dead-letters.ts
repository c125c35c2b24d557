import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Admin, type IHeaders } from 'kafkajs';
import type { Logger } from 'pino';
import { isSelected, type DeadLetter, type DeadLetters, type DeadLetterSelection } from './dead-letters';
import { eventIdOf } from './event-id';
import type { KafkaSecurity } from './kafka-security';
import { DEAD_LETTER_SUFFIX, DeadLetterHeaders, KafkaEventBus, kafkaUnreachableError, ReplayHeaders, replayTopicOf } from './kafka-event-bus';

export interface KafkaDeadLettersOptions {
  brokers: string[];
  /** TLS and SASL on the broker connections (kafkaSecurityOf); plaintext without. */
  security?: KafkaSecurity;
  logger: Logger;
  /** KAFKA_NAMESPACE of the deployment whose dead letters these are. */
  namespace?: string;
  /** Partitions of a replay topic this creates (KAFKA_PARTITIONS). */
  partitions?: number;
  /** How long reading the dead-letter and replay topics to their end may take. */
  readTimeoutMs?: number;
}

interface StoredMessage {
  /** Cluster name. */
  topic: string;
  partition: number;
  offset: string;
  key: string;
  value: Buffer;
  timestamp: string;
  headers: Record<string, string>;
}

function stringHeaders(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.map(String).join(',') : value.toString();
  }
  return out;
}

/**
 * Dead letters of the Kafka bus: the `<topic>.dlq` topics, each message naming its consumer group in a header. A replay
 * copies the letter to the group's replay topic (replayTopicOf), which the group's consumers read beside their topics.
 * The replay topics are also the record of what was replayed: a letter with a copy there is not copied again, and it
 * counts as replayed once the group's committed offset on its replay topic is past the copy.
 */
export class KafkaDeadLetters implements DeadLetters {
  private readonly kafka: Kafka;
  private readonly admin: Admin;
  private readonly bus: KafkaEventBus;
  private connected: Promise<void> | undefined;

  constructor(private readonly options: KafkaDeadLettersOptions) {
    this.kafka = new Kafka({ clientId: 'dead-letters', brokers: options.brokers, ...options.security, connectionTimeout: 3000, logLevel: logLevel.NOTHING });
    this.admin = this.kafka.admin();
    this.bus = new KafkaEventBus({ brokers: options.brokers, security: options.security, logger: options.logger, clientId: 'dead-letters', namespace: options.namespace, partitions: options.partitions });
  }

  async list(selection: DeadLetterSelection): Promise<DeadLetter[]> {
    return (await this.read(selection)).map(({ letter }) => letter);
  }

  async replay(selection: DeadLetterSelection): Promise<DeadLetter[]> {
    const handedBack: DeadLetter[] = [];
    for (const { letter, message } of await this.read(selection)) {
      if (letter.state !== 'dead' || letter.group === '') continue;
      await this.bus.publishNow([{ topic: replayTopicOf(letter.group), key: letter.key, payload: letter.payload }], {
        ...message.headers,
        [ReplayHeaders.deadLetterTopic]: this.bus.logicalName(message.topic),
        [ReplayHeaders.deadLetterPartition]: String(message.partition),
        [ReplayHeaders.deadLetterOffset]: message.offset,
      });
      handedBack.push({ ...letter, state: 'replay-requested' });
    }
    return handedBack;
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.bus.close(), this.admin.disconnect()]);
  }

  /** The selected letters with their state, oldest first, each with the message it was read from. */
  private async read(selection: DeadLetterSelection): Promise<{ letter: DeadLetter; message: StoredMessage }[]> {
    await this.connect();
    const existing = await this.admin.listTopics();
    const logical = (t: string) => this.bus.logicalName(t);
    const namespace = this.options.namespace;
    const ours = (t: string) => !namespace || t.startsWith(`${namespace}.`);
    const deadLetterTopics = existing.filter(
      (t) => ours(t) && logical(t).endsWith(DEAD_LETTER_SUFFIX) && (selection.topic === undefined || logical(t) === `${selection.topic}${DEAD_LETTER_SUFFIX}`),
    );
    const replayTopics = existing.filter(
      (t) => ours(t) && logical(t).startsWith(replayTopicOf('')) && (selection.group === undefined || logical(t) === replayTopicOf(selection.group)),
    );
    const messages = await this.readToEnd([...deadLetterTopics, ...replayTopics]);
    const copies = new Map<string, StoredMessage>();
    for (const m of messages.filter((m) => replayTopics.includes(m.topic))) {
      copies.set(`${m.headers[ReplayHeaders.deadLetterTopic]}/${m.headers[ReplayHeaders.deadLetterPartition]}/${m.headers[ReplayHeaders.deadLetterOffset]}`, m);
    }
    const committed = await this.committedReplayOffsets([...new Set(replayTopics.map((t) => logical(t).slice(replayTopicOf('').length)))]);
    const letters: { letter: DeadLetter; message: StoredMessage }[] = [];
    for (const message of messages.filter((m) => deadLetterTopics.includes(m.topic))) {
      const dlq = logical(message.topic);
      const topic = message.headers[DeadLetterHeaders.topic] ?? dlq.slice(0, -DEAD_LETTER_SUFFIX.length);
      const id = `${dlq}/${message.partition}/${message.offset}`;
      const group = message.headers[DeadLetterHeaders.group] ?? '';
      const copy = copies.get(id);
      const payload = new Uint8Array(message.value);
      const letter: DeadLetter = {
        id,
        topic,
        group,
        key: message.key,
        eventId: eventIdOf(topic, payload),
        payload,
        failedAt: new Date(Number(message.timestamp)),
        error: message.headers[DeadLetterHeaders.error] ?? '',
        attempts: Number(message.headers[DeadLetterHeaders.attempts] ?? 0),
        state: !copy ? 'dead' : BigInt(copy.offset) < (committed.get(`${copy.topic}/${copy.partition}`) ?? 0n) ? 'replayed' : 'replay-requested',
      };
      if (isSelected(letter, selection)) letters.push({ letter, message });
    }
    return letters.sort((a, b) => a.letter.failedAt.getTime() - b.letter.failedAt.getTime());
  }

  /** Committed offsets of each group on its replay topic, by `<cluster topic>/<partition>`. */
  private async committedReplayOffsets(groups: string[]): Promise<Map<string, bigint>> {
    const out = new Map<string, bigint>();
    for (const group of groups) {
      const topic = this.bus.physicalName(replayTopicOf(group));
      const offsets = await this.admin.fetchOffsets({ groupId: this.bus.physicalName(group), topics: [topic] });
      for (const { partitions } of offsets) for (const p of partitions) out.set(`${topic}/${p.partition}`, BigInt(p.offset));
    }
    return out;
  }

  /** Every message now on the topics (cluster names), read with a throwaway consumer group that commits nothing. */
  private async readToEnd(topics: string[]): Promise<StoredMessage[]> {
    const remaining = new Map<string, bigint>();
    for (const topic of topics) {
      for (const p of await this.offsetsOf(topic)) if (BigInt(p.high) > BigInt(p.low)) remaining.set(`${topic}/${p.partition}`, BigInt(p.high) - 1n);
    }
    if (remaining.size === 0) return [];
    const groupId = this.bus.physicalName(`dead-letters-reader-${randomBytes(4).toString('hex')}`);
    const consumer = this.kafka.consumer({ groupId, maxWaitTimeInMs: 200, allowAutoTopicCreation: false });
    const messages: StoredMessage[] = [];
    const timeoutMs = this.options.readTimeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: topics.filter((t) => [...remaining.keys()].some((k) => k.startsWith(`${t}/`))), fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`reading the dead-letter topics did not reach their end within ${timeoutMs} ms`)), timeoutMs);
        consumer
          .run({
            autoCommit: false,
            eachMessage: async ({ topic, partition, message }) => {
              const last = remaining.get(`${topic}/${partition}`);
              if (last === undefined) return;
              if (BigInt(message.offset) <= last) {
                messages.push({
                  topic,
                  partition,
                  offset: message.offset,
                  key: message.key?.toString() ?? '',
                  value: message.value ?? Buffer.alloc(0),
                  timestamp: message.timestamp,
                  headers: stringHeaders(message.headers),
                });
              }
              if (BigInt(message.offset) >= last) remaining.delete(`${topic}/${partition}`);
              if (remaining.size === 0) resolve();
            },
          })
          .catch(reject);
      });
    } finally {
      clearTimeout(timer);
      await consumer.disconnect().catch(() => undefined);
      await this.admin.deleteGroups([groupId]).catch(() => undefined);
    }
    return messages;
  }

  /** A topic a consumer created a moment ago is listed before its leaders settle ("not the leader"): asked again. */
  private async offsetsOf(topic: string): Promise<{ partition: number; high: string; low: string }[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.admin.fetchTopicOffsets(topic);
      } catch (err) {
        if (attempt >= 30 || !(err as { retriable?: boolean }).retriable) throw err;
        await new Promise((r) => setTimeout(r, 100 * Math.min(attempt, 10)));
      }
    }
  }

  private connect(): Promise<void> {
    this.connected ??= this.admin.connect().catch((err: unknown) => {
      this.connected = undefined;
      throw kafkaUnreachableError(this.options.brokers, err);
    });
    return this.connected;
  }
}
