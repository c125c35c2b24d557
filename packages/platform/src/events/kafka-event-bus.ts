import { logLevel, Partitioners, type Admin, type Consumer, type IHeaders, type Kafka, type KafkaConfig, type LogEntry, type Producer } from 'kafkajs';
import type { Logger } from 'pino';
import { assertPublishable, batchLength, eventBytes, handlerFailureLog, type DeliveredEvent, type EventBus, type OutgoingEvent, type SubscribeOptions, type Subscription } from './event-bus';
import { isEngineUnavailableError } from '../readiness';
import { errorMessage } from '../errors';
import { settledWithin } from '../shutdown';
import { RETAIN_FOREVER_MS, retainForever } from './kafka-topic-retention';
import { deliverInHalves } from './deliver-in-halves';
import { consumerMetrics, countPublishedEvents, secondsSince, trackConsumerPositions, type ConsumerMetrics, type TopicPosition } from './event-metrics';
import type { KafkaSecurity } from './kafka-security';
import { busClosedError, CUT_BY_CLOSE, isCertificateError, StoppableKafkaClient, type ConnectionsSeen } from './stoppable-kafka-client';

export interface KafkaEventBusOptions {
  /** host:port of one or more brokers. */
  brokers: string[];
  /** TLS and SASL on the broker connections (kafkaSecurityOf); plaintext without. */
  security?: KafkaSecurity;
  logger: Logger;
  /** Client id shown in broker logs and metrics; the service name. */
  clientId?: string;
  /** Partitions of the topics this bus creates (KAFKA_PARTITIONS); more partitions, more parallel consumers per group. */
  partitions?: number;
  /** Replication of created topics; -1 takes the broker's default.replication.factor. */
  replicationFactor?: number;
  /** First handler retry delay; doubles per attempt, capped at 5 s. */
  retryBaseMs?: number;
  /** Consumer heartbeat; lower means faster rebalances when members join. */
  heartbeatIntervalMs?: number;
  /** How long the broker waits for a silent consumer before giving its partitions to others. */
  sessionTimeoutMs?: number;
  /** How long ready() waits for the cluster. */
  readyTimeoutMs?: number;
  /**
   * Prefix of every topic and consumer group on the cluster (KAFKA_NAMESPACE), so several deployments
   * (or test systems) can share one cluster without consuming each other's events. Handlers and
   * dead-letter headers see the topic names without it.
   */
  namespace?: string;
}

/** Handled messages between offset commits inside one fetched batch; a crash redelivers at most this many. */
const COMMIT_EVERY = 100;

/**
 * Payload bytes per produce request: a broker refuses a partition's record batch over message.max.bytes (1 MB by
 * default), so an outbox backlog of large cards is sent in several requests instead of failing again on every retry.
 * A single event may be larger, up to MAX_EVENT_BYTES (the outboxes refuse larger ones when they are written).
 */
const MAX_REQUEST_BYTES = 512 * 1024;

/** Suffix of the dead-letter topic a message goes to after maxAttempts failed deliveries. */
export const DEAD_LETTER_SUFFIX = '.dlq';

/** Headers on a dead-lettered message, naming where it came from and why it failed. */
export const DeadLetterHeaders = {
  topic: 'x-original-topic',
  partition: 'x-original-partition',
  offset: 'x-original-offset',
  group: 'x-consumer-group',
  error: 'x-error',
  attempts: 'x-attempts',
} as const;

/**
 * A dead letter an operator replays (KafkaDeadLetters) is copied, with its dead-letter headers, to the replay topic of
 * the group that failed it, `replay.<group>`: only that group's consumers read it, so the topic's other groups, which
 * handled the event, do not get it again. These headers name the dead letter the copy came from.
 */
export const ReplayHeaders = {
  deadLetterTopic: 'x-dead-letter-topic',
  deadLetterPartition: 'x-dead-letter-partition',
  deadLetterOffset: 'x-dead-letter-offset',
} as const;

/** The topic (without namespace) a consumer group reads its replayed dead letters from, beside its own topics. */
export function replayTopicOf(group: string): string {
  return `replay.${group}`;
}

/** Dead letters and their replays are kept until deleted (retention.ms -1): nothing an operator may still replay expires. */
function keepsForever(logicalTopic: string): boolean {
  return logicalTopic.endsWith(DEAD_LETTER_SUFFIX) || logicalTopic.startsWith(replayTopicOf(''));
}

const KAFKA_TO_PINO: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** kafkajs' log lines through pino, without the ones about deliberate choices or connections the bus cut at close. */
function kafkaLogCreator(logger: Logger): KafkaConfig['logCreator'] {
  return () =>
    ({ level, namespace, log }: LogEntry) => {
      const { message, ...extra } = log;
      // Finite producer retries are deliberate (see the producer below); the warning would repeat in every service.
      const quiet = typeof message === 'string' && (message.startsWith('Limiting retries for the idempotent producer') || message.includes(CUT_BY_CLOSE));
      logger[quiet ? 'debug' : (KAFKA_TO_PINO[level] ?? 'info')]({ namespace, ...extra }, message);
    };
}

/**
 * Brokers that did not answer, refused the credentials or the TLS connection, named with the variables that set them.
 * `seen` (what the connections showed while waiting) tells a broker that listens but speaks another protocol (TLS or
 * not) from one that is not there.
 */
export function kafkaUnreachableError(brokers: readonly string[], err: unknown, seen?: ConnectionsSeen): Error {
  const list = brokers.join(',');
  // Not `instanceof Error`: Node's TLS errors come from another realm under jest's VM.
  for (let cause = err as (Error & { type?: unknown }) | undefined; typeof cause === 'object' && cause !== null; cause = cause.cause as typeof cause) {
    if (cause.name === 'KafkaJSSASLAuthenticationError') {
      return new Error(`Kafka brokers ${list} refused the SASL credentials (KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD): ${errorMessage(cause)}`);
    }
    if (cause.type === 'ILLEGAL_SASL_STATE') {
      return new Error(`Kafka brokers ${list} take no SASL on that listener (KAFKA_SASL_MECHANISM is set; KAFKA_BROKERS may name a listener without SASL): ${errorMessage(cause)}`);
    }
    if (isCertificateError(cause)) return certificateError(list, cause);
  }
  if (seen?.handshakeFailure && !seen.answered) {
    return new Error(`Kafka brokers ${list} broke off the TLS handshake (KAFKA_SSL=true; KAFKA_BROKERS may name a listener without TLS): ${errorMessage(seen.handshakeFailure)}`);
  }
  if (seen?.answeredInTls && !seen.answered) {
    return new Error(`Kafka brokers ${list} answered in TLS (KAFKA_SSL=true is needed for that listener, or KAFKA_BROKERS may name the wrong one): ${errorMessage(err)}`);
  }
  if (seen?.connected && !seen.answered) {
    return new Error(`Kafka brokers ${list} accepted the connection but gave no Kafka answer (KAFKA_BROKERS): ${errorMessage(err)}`);
  }
  return new Error(`Kafka brokers ${list} are unreachable (KAFKA_BROKERS): ${errorMessage(err)}`);
}

function certificateError(list: string, cause: Error & { code: string }): Error {
  if (cause.code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return new Error(`Kafka brokers ${list} presented a TLS certificate for another name (KAFKA_BROKERS must name the brokers as their certificates do): ${cause.message}`);
  }
  return new Error(`Kafka brokers ${list} presented a TLS certificate this service does not trust (KAFKA_SSL_CA_FILE or NODE_EXTRA_CA_CERTS names the CA that signed it): ${cause.message} (${cause.code})`);
}

/** Consecutive runs of the events holding at most maxBytes of keys and payloads each (a larger event alone). */
function runsOfAtMost(events: readonly OutgoingEvent[], maxBytes: number): OutgoingEvent[][] {
  const runs: OutgoingEvent[][] = [];
  let run: OutgoingEvent[] = [];
  let bytes = 0;
  for (const e of events) {
    const size = eventBytes(e);
    if (run.length > 0 && bytes + size > maxBytes) {
      runs.push(run);
      run = [];
      bytes = 0;
    }
    run.push(e);
    bytes += size;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

function delay(ms: number, signal: { aborted: boolean; wake?: () => void }): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.wake = undefined;
      resolve();
    }
    signal.wake = done;
  });
}

/**
 * The event bus on Apache Kafka (kafkajs). Producer: idempotent, acks from all in-sync replicas,
 * one request in flight so retries keep per-key order; the key (aggregate id) picks the partition.
 * Each subscribe() is a consumer in the Kafka consumer group `group`; offsets are committed only after
 * the handler succeeded (or the message was dead-lettered to `<topic>.dlq` after maxAttempts), so a
 * consumer that dies mid-message leaves it to be redelivered to the group.
 */
export class KafkaEventBus implements EventBus {
  private readonly clientConfig: ConstructorParameters<typeof StoppableKafkaClient>[0];
  /** The admin's and producer's client; each subscription has its own, stopped when it closes. */
  private readonly client: StoppableKafkaClient;
  private readonly kafka: Kafka;
  private readonly admin: Admin;
  private readonly producer: Producer;
  private adminConnected: Promise<void> | undefined;
  private producerConnected: Promise<void> | undefined;
  private readonly knownTopics = new Map<string, Promise<void>>();
  /** Kept-forever topics whose retention this bus has checked (cluster names). */
  private readonly retentionChecked = new Set<string>();
  private readonly subscriptions = new Set<KafkaSubscription>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly options: KafkaEventBusOptions) {
    this.clientConfig = {
      clientId: options.clientId ?? 'cards',
      brokers: options.brokers,
      ...options.security,
      connectionTimeout: 3000,
      logLevel: logLevel.WARN,
      logCreator: kafkaLogCreator(options.logger.child({ component: 'kafka' })),
    };
    this.client = new StoppableKafkaClient(this.clientConfig);
    this.kafka = this.client.kafka;
    this.admin = this.kafka.admin();
    // Retries are finite so a publish to a dead cluster fails (the outbox relay retries it later)
    // instead of hanging shutdown; kafkajs warns that this weakens idempotence across those retries.
    this.producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5000 },
    });
  }

  async publish(events: OutgoingEvent[]): Promise<void> {
    if (this.closed) throw busClosedError();
    if (events.length === 0) return;
    // Refused here with the event named rather than by the broker; dead letters (publishNow) pass on what was consumed.
    assertPublishable(events);
    const task = this.publishNow(events);
    this.inFlight.add(task);
    try {
      await task;
    } catch (err) {
      // Cut short by close(), whose stopped client makes kafkajs' reconnects give up: not sent, whatever kafkajs last saw.
      throw this.closed ? busClosedError(err) : err;
    } finally {
      this.inFlight.delete(task);
    }
    countPublishedEvents(events);
  }

  /** The cluster's name for a topic or group: with the namespace prefix. */
  physicalName(name: string): string {
    return this.options.namespace ? `${this.options.namespace}.${name}` : name;
  }

  /** The application's name for a topic read from the cluster: without the namespace prefix. */
  logicalName(name: string): string {
    const prefix = this.options.namespace ? `${this.options.namespace}.` : '';
    return prefix && name.startsWith(prefix) ? name.slice(prefix.length) : name;
  }

  /** Sends events (topic names without the namespace), creating their topics first; also used for dead letters. */
  async publishNow(events: readonly OutgoingEvent[], headers?: IHeaders): Promise<void> {
    await this.ensureTopics([...new Set(events.map((e) => this.physicalName(e.topic)))]);
    await this.connectProducer();
    // Runs sent one after the other keep the order of each key.
    for (const run of runsOfAtMost(events, MAX_REQUEST_BYTES)) {
      const byTopic = new Map<string, { key: string; value: Buffer; headers?: IHeaders }[]>();
      for (const e of run) {
        const topic = this.physicalName(e.topic);
        let messages = byTopic.get(topic);
        if (!messages) byTopic.set(topic, (messages = []));
        messages.push({ key: e.key, value: Buffer.from(e.payload), headers });
      }
      await this.producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
    }
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    if (this.closed) throw busClosedError();
    const topics = [...options.topics, replayTopicOf(options.group)].map((t) => this.physicalName(t));
    // Tracked so that close() waits for it before disconnecting the admin client, which a late call would connect again.
    const prepared = (async () => {
      await this.ensureTopics(topics);
      // Dead-letter topics are only ensured when a letter goes there; check the existing ones' retention now, at start.
      await this.retainExistingForever(options.topics.map((t) => this.physicalName(`${t}${DEAD_LETTER_SUFFIX}`)));
    })();
    this.inFlight.add(prepared);
    try {
      await prepared;
    } finally {
      this.inFlight.delete(prepared);
    }
    // Checked and registered without an await between, so close() either sees this subscription or this sees it closed.
    if (this.closed) throw busClosedError();
    // A client of its own, so that closing this subscription stops its connects and cuts its connections only.
    const client = new StoppableKafkaClient(this.clientConfig);
    const consumer = client.kafka.consumer({
      groupId: this.physicalName(options.group),
      allowAutoTopicCreation: false,
      heartbeatInterval: this.options.heartbeatIntervalMs ?? 1000,
      sessionTimeout: this.options.sessionTimeoutMs ?? 10_000,
      rebalanceTimeout: 30_000,
      maxWaitTimeInMs: 500,
      // kafkajs' own restart after a retriable crash is a timer this bus could not cancel from close(); KafkaSubscription restarts every crashed consumer itself.
      retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 5000, restartOnFailure: async () => false },
    });
    const subscription = new KafkaSubscription(client, consumer, options, topics, this, this.options);
    this.subscriptions.add(subscription);
    try {
      await subscription.start();
    } catch (err) {
      this.subscriptions.delete(subscription);
      await subscription.close().catch(() => undefined);
      throw err;
    }
    // close() ran while the consumer was starting: it has stopped it.
    if (this.closed) throw busClosedError();
    return {
      close: async () => {
        this.subscriptions.delete(subscription);
        await subscription.close();
      },
    };
  }

  /** The group's committed offsets (admin fetchOffsets; -1 on a partition it never committed) on the topics that exist. */
  async hasCommitted(group: string, topics: readonly string[]): Promise<boolean> {
    if (this.closed) throw busClosedError();
    const task = (async () => {
      await this.connectAdmin();
      const existing = new Set(await this.admin.listTopics());
      const physical = topics.map((t) => this.physicalName(t)).filter((t) => existing.has(t));
      if (physical.length === 0) return false;
      // A group's coordinator may move or still be loading (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), more so for
      // a group never seen before: retriable errors are asked again for up to 10 s, as a consumer joining would.
      const deadline = Date.now() + 10_000;
      for (let pauseMs = 100; ; pauseMs = Math.min(pauseMs * 2, 1000)) {
        try {
          const offsets = await this.admin.fetchOffsets({ groupId: this.physicalName(group), topics: physical });
          return offsets.some((t) => t.partitions.some((p) => Number(p.offset) >= 0));
        } catch (err) {
          if (this.closed || !isRetriableCrash(err) || Date.now() + pauseMs > deadline) throw err;
          await new Promise((r) => setTimeout(r, pauseMs));
        }
      }
    })();
    // Tracked so that close() waits for it before disconnecting the admin client, which it may be connecting.
    this.inFlight.add(task);
    try {
      return await task;
    } catch (err) {
      throw this.closed ? busClosedError(err) : err;
    } finally {
      this.inFlight.delete(task);
    }
  }

  async ready(): Promise<void> {
    if (this.closed) throw busClosedError();
    const timeoutMs = this.options.readyTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    // A failed certificate check fails at once: kafkajs would retry it as any connection error until the timeout.
    const watch = this.client.watchConnections();
    // Tracked so that close() waits for it before disconnecting the admin client, which it may be connecting.
    const check = this.client.untilStopped(
      (async () => {
        await this.connectAdmin();
        await this.admin.describeCluster();
      })(),
    );
    this.inFlight.add(check);
    try {
      await Promise.race([check, timeout, watch.certificateRefused]);
    } catch (err) {
      throw this.closed ? busClosedError() : kafkaUnreachableError(this.options.brokers, err, watch.seen());
    } finally {
      watch.end();
      clearTimeout(timer);
      this.inFlight.delete(check);
    }
  }

  /**
   * Stops fetching and waits for the messages in hand and the publishes under way, then disconnects. Nothing waits on
   * a broker that is down: connects under way are abandoned (what waited on them, a publish included, rejects with
   * "event bus is closed", so an outbox keeps its entries) and kafkajs' connect retries end at their next attempt.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.stop();
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    this.subscriptions.clear();
    await Promise.allSettled([...this.inFlight]);
    await Promise.allSettled([this.producer.disconnect(), this.admin.disconnect()]);
  }

  /** Creates missing topics (cluster names) with the configured partition count; concurrent callers share one request. */
  async ensureTopics(topics: readonly string[]): Promise<void> {
    const missing = topics.filter((t) => !this.knownTopics.has(t));
    if (missing.length > 0) {
      const created = this.createTopics(missing);
      for (const t of missing) this.knownTopics.set(t, created);
      created.catch(() => {
        for (const t of missing) this.knownTopics.delete(t);
      });
    }
    await Promise.all(topics.map((t) => this.knownTopics.get(t)));
  }

  private async createTopics(topics: string[]): Promise<void> {
    await this.connectAdmin();
    const existing = new Set(await this.admin.listTopics());
    const toCreate = topics.filter((t) => !existing.has(t));
    if (toCreate.length > 0) {
      try {
        // kafkajs' own waitForLeaders gives up on UNKNOWN_TOPIC_OR_PARTITION while metadata settles; waitForLeaders() below retries it.
        await this.admin.createTopics({
          waitForLeaders: false,
          topics: toCreate.map((topic) => ({
            topic,
            numPartitions: this.options.partitions ?? 3,
            replicationFactor: this.options.replicationFactor ?? -1,
            configEntries: keepsForever(this.logicalName(topic)) ? [{ name: 'retention.ms', value: RETAIN_FOREVER_MS }] : undefined,
          })),
        });
      } catch (err) {
        // Another service created it between our list and create.
        if (!/already exists/i.test(errorMessage(err))) throw err;
      }
    }
    await this.waitForLeaders(topics);
    await this.retainExistingForever(topics.filter((t) => existing.has(t)));
  }

  /**
   * Brings existing dead-letter and replay topics among `topics` (cluster names; others and missing ones are passed
   * over) to retention.ms -1, once per topic and bus: ones created by a release before b39f8e7 kept the broker's
   * retention (7 days by default), so their letters expired unreplayed. Logs each change. A failure (no ALTER_CONFIGS
   * permission, say) is logged, not thrown: the bus works as before and an operator can set it by hand.
   */
  private async retainExistingForever(topics: readonly string[]): Promise<void> {
    const unchecked = topics.filter((t) => keepsForever(this.logicalName(t)) && !this.retentionChecked.has(t));
    if (unchecked.length === 0) return;
    for (const t of unchecked) this.retentionChecked.add(t);
    try {
      await this.connectAdmin();
      const existing = new Set(await this.admin.listTopics());
      for (const { topic, was } of await retainForever(this.admin, unchecked.filter((t) => existing.has(t)))) {
        this.options.logger.info({ topic: this.logicalName(topic), retentionMs: was }, 'dead-letter or replay topic had a limited retention: set retention.ms=-1');
      }
    } catch (err) {
      for (const t of unchecked) this.retentionChecked.delete(t);
      this.options.logger.warn({ err, topics: unchecked.map((t) => this.logicalName(t)) }, 'could not check or set retention.ms=-1 on dead-letter or replay topics (docs/deploy.md#replaying-dead-letters)');
    }
  }

  /**
   * A topic another service created a moment ago may not have leaders in this client's metadata yet;
   * subscribing then fails with "This server does not host this topic-partition".
   */
  private async waitForLeaders(topics: string[]): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const { topics: metadata } = await this.admin.fetchTopicMetadata({ topics });
        if (metadata.length === topics.length && metadata.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
      if (Date.now() > deadline) throw new Error(`Kafka topics ${topics.join(', ')} have no leader after 30 s`);
      if (this.closed) throw busClosedError();
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private connectAdmin(): Promise<void> {
    this.adminConnected ??= this.client.connect(this.admin).catch((err: unknown) => {
      this.adminConnected = undefined;
      throw err;
    });
    return this.adminConnected;
  }

  private connectProducer(): Promise<void> {
    this.producerConnected ??= this.client.connect(this.producer).catch((err: unknown) => {
      this.producerConnected = undefined;
      throw err;
    });
    return this.producerConnected;
  }
}

/** First wait before a crashed consumer is started again; doubles per failed start, capped at 30 s (5 s after an error kafkajs deems retriable). */
const RESTART_BASE_MS = 1000;

/** kafkajs' own test of whether a crash is worth a restart soon (a connection lost, retries used up). */
function isRetriableCrash(err: unknown): boolean {
  let cause = err as { name?: string; retriable?: boolean; cause?: unknown } | undefined;
  if (cause?.name === 'KafkaJSNumberOfRetriesExceeded') return true;
  while (cause?.cause) cause = cause.cause as typeof cause;
  return cause?.retriable === true;
}

/** How long close() lets a consumer still joining its group finish joining before it disconnects it anyway. */
const JOIN_SETTLE_MS = 5000;

class KafkaSubscription {
  private stopping = false;
  private readonly sleeper: { aborted: boolean; wake?: () => void } = { aborted: false };
  private closing: Promise<void> | undefined;
  /** The consumer's connect and subscribe, at start or restart. */
  private starting: Promise<void> | undefined;
  /** consumer.run(): settles once the consumer has joined its group (then fetches on) or crashed. */
  private running: Promise<void> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  /** Starts that failed since the consumer last joined its group (the restart backoff grows with them). */
  private failedStarts = 0;
  private readonly metrics: ConsumerMetrics;
  /**
   * Per partition this member fetched (`topic partition`): what its last fetch showed of the group's lag (high watermark
   * - 1 - the last offset handled) and the timestamp of the first message not handled yet, for /metrics.
   */
  private readonly positions = new Map<string, TopicPosition>();
  private untrack: (() => void) | undefined;

  constructor(
    private readonly client: StoppableKafkaClient,
    private readonly consumer: Consumer,
    private readonly options: SubscribeOptions,
    private readonly physicalTopics: string[],
    private readonly bus: KafkaEventBus,
    private readonly busOptions: KafkaEventBusOptions,
  ) {
    this.metrics = consumerMetrics(options.group);
  }

  async start(): Promise<void> {
    // kafkajs starts a crashed consumer again only after errors it deems retriable; after others (a group coordinator
    // still loading on a fresh cluster, a dead letter that cannot be written) it stays stopped, and the service would
    // consume nothing more until restarted. Start it again, with backoff, from its committed offsets; after every
    // crash, since kafkajs' own restarts are turned off (restartOnFailure) so that close() knows each start under way.
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      if (!this.stopping) this.restartLater(payload.error);
    });
    this.consumer.on(this.consumer.events.GROUP_JOIN, () => {
      this.failedStarts = 0;
      // A rebalance may have moved partitions away: their lag is the new holder's to report.
      this.positions.clear();
    });
    this.untrack = trackConsumerPositions(this.options.group, () => summedByTopic(this.positions.values()));
    this.starting = this.join();
    await this.starting;
  }

  private restartLater(err: unknown): void {
    const waitMs = Math.min(isRetriableCrash(err) ? 5000 : 30_000, RESTART_BASE_MS * 2 ** Math.min(this.failedStarts++, 5));
    this.busOptions.logger.error({ err, group: this.options.group, waitMs }, 'Kafka consumer stopped after an error; starting it again');
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      this.starting = this.join().catch((startErr: unknown) => {
        if (!this.stopping) this.restartLater(startErr);
      });
    }, waitMs);
  }

  /** Connects, subscribes and runs the consumer (again after a crash: it resumes from the group's committed offsets). */
  private async join(): Promise<void> {
    const { group } = this.options;
    await this.client.connect(this.consumer);
    // A new group starts at the beginning of each topic, like the embedded log: nothing published before it subscribed is missed.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.untilStopped(this.consumer.subscribe({ topics: this.physicalTopics, fromBeginning: true }));
        break;
      } catch (err) {
        // Metadata of a just-created topic can lag on the broker that answers; it settles within moments.
        if (attempt >= 20 || !(err as { retriable?: boolean }).retriable) throw err;
        await new Promise((r) => setTimeout(r, 100 * Math.min(attempt, 10)));
      }
      if (this.stopping) return;
    }
    if (this.stopping) return;
    // Joining the group is not awaited: after a crash the broker holds the rebalance until the dead
    // members' sessions expire, and a restarting service must not wait for that before it serves.
    // Nothing is missed meanwhile; the group starts from its committed offsets once joined.
    this.running = this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      // eachBatch rather than eachMessage: kafkajs drops consumer.commitOffsets() once stop() has begun,
      // which would lose the commit of the message a graceful close waited for.
      eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale }) => {
        const { topic: physicalTopic, partition } = batch;
        const topic = this.bus.logicalName(physicalTopic);
        // Replayed dead letters are delivered one by one as the event they were, and dead-lettered again where they were.
        const replays = topic === replayTopicOf(group);
        // Offsets are committed only up to messages whose handler finished (or that were dead-lettered):
        // every COMMIT_EVERY messages, at the end of the batch, and when leaving it early (close, rebalance).
        let done: string | undefined;
        let sinceCommit = 0;
        const commit = async () => {
          if (done === undefined || sinceCommit === 0) return;
          sinceCommit = 0;
          await commitOffsetsIfNecessary({ topics: [{ topic: physicalTopic, partitions: [{ partition, offset: (BigInt(done) + 1n).toString() }] }] });
        };
        const header = (message: (typeof batch.messages)[number], name: string) => message.headers?.[name]?.toString();
        const originOf = (message: (typeof batch.messages)[number]) =>
          replays
            ? {
                topic: header(message, DeadLetterHeaders.topic) ?? topic,
                partition: header(message, DeadLetterHeaders.partition) ?? String(partition),
                offset: header(message, DeadLetterHeaders.offset) ?? message.offset,
              }
            : { topic, partition: String(partition), offset: message.offset };
        const eventOf = (message: (typeof batch.messages)[number]) => {
          const origin = originOf(message);
          return {
            topic: origin.topic,
            key: message.key?.toString() ?? '',
            payload: message.value ? new Uint8Array(message.value) : new Uint8Array(),
            offset: origin.offset,
          };
        };
        type Message = (typeof batch.messages)[number];
        // The lag this fetch shows, moved on as messages are handled (kafkajs' offsetLagLow + 1 before the first).
        const positionKey = `${topic} ${partition}`;
        const lastOffset = BigInt(batch.highWatermark) - 1n;
        const indexOf = new Map(batch.messages.map((m, i) => [m.offset, i]));
        const handledUpTo = (offset: string) => {
          const next = batch.messages[(indexOf.get(offset) ?? batch.messages.length - 1) + 1];
          this.positions.set(positionKey, { topic, lag: Math.max(0, Number(lastOffset - BigInt(offset))), oldestMs: next ? Number(next.timestamp) : null });
        };
        if (batch.messages.length > 0) {
          this.positions.set(positionKey, { topic, lag: Math.max(0, Number(lastOffset - BigInt(batch.messages[0]!.offset)) + 1), oldestMs: Number(batch.messages[0]!.timestamp) });
        }
        const going = () => !this.stopping && isRunning() && !isStale();
        const applyRun = async (run: Message[]): Promise<boolean> => {
          if (!(await this.deliverRun(run.map(eventOf)))) return false;
          for (const m of run) resolveOffset(m.offset);
          done = run[run.length - 1]!.offset;
          handledUpTo(done);
          sinceCommit += run.length;
          if (sinceCommit >= COMMIT_EVERY) await commit();
          await heartbeat();
          return true;
        };
        const deliverOne = async (message: Message): Promise<boolean> => {
          const event = eventOf(message);
          const outcome = await this.deliver(event, heartbeat);
          // Closing with the handler failing: leave the offset uncommitted so the group gets the message again.
          if (outcome === 'abandoned') return false;
          if (outcome !== 'ok') {
            const origin = originOf(message);
            await this.bus.publishNow([{ topic: `${origin.topic}${DEAD_LETTER_SUFFIX}`, key: event.key, payload: event.payload }], {
              [DeadLetterHeaders.topic]: origin.topic,
              [DeadLetterHeaders.partition]: origin.partition,
              [DeadLetterHeaders.offset]: origin.offset,
              [DeadLetterHeaders.group]: group,
              [DeadLetterHeaders.error]: outcome.error.slice(0, 2000),
              [DeadLetterHeaders.attempts]: String(outcome.attempts),
            });
            this.metrics.outcome(event.topic, 'dead_letter');
            this.busOptions.logger.error(
              { group, topic: origin.topic, partition: origin.partition, offset: origin.offset, error: outcome.error, replayed: replays },
              'event moved to dead-letter topic',
            );
          } else if (replays) {
            this.busOptions.logger.info({ group, topic: event.topic, offset: event.offset }, 'dead letter replayed');
          }
          resolveOffset(message.offset);
          done = message.offset;
          handledUpTo(done);
          if (++sinceCommit >= COMMIT_EVERY) await commit();
          await heartbeat();
          return true;
        };
        try {
          // With a batchHandler, a run of messages is applied together; a run that fails is delivered again in halves.
          for (let i = 0; i < batch.messages.length; ) {
            const run = batch.messages.slice(i, i + (replays ? 1 : batchLength(this.options, batch.messages.length - i)));
            if (!(await deliverInHalves(run, { applyRun, deliverOne, running: going }))) return;
            i += run.length;
          }
        } finally {
          await commit();
        }
      },
    }).catch((err: unknown) => {
      this.busOptions.logger.error({ err, group }, 'Kafka consumer stopped with an error');
    });
  }

  /** One attempt of the batchHandler on a run of messages; false (logged) when it failed. */
  private async deliverRun(run: Omit<DeliveredEvent, 'attempt'>[]): Promise<boolean> {
    const started = performance.now();
    try {
      await this.options.batchHandler!(run.map((e) => ({ ...e, attempt: 0 })));
      this.metrics.batchRun(run, 'ok', secondsSince(started));
      return true;
    } catch (err) {
      // Its events are delivered again, in halves.
      this.metrics.batchRun(run, 'retry', secondsSince(started));
      // A run is of one partition, so of one topic.
      this.busOptions.logger.warn({ err, group: this.options.group, topic: run[0]!.topic, events: run.length }, 'event batch handler failed; delivering its events again in halves');
      return false;
    }
  }

  private async deliver(
    base: Omit<DeliveredEvent, 'attempt'>,
    heartbeat: () => Promise<void>,
  ): Promise<'ok' | 'abandoned' | { error: string; attempts: number }> {
    const maxAttempts = this.options.maxAttempts ?? 8;
    const retryBase = this.busOptions.retryBaseMs ?? 100;
    // Failures because an engine is unreachable do not count: an outage must not dead-letter events.
    let counted = 0;
    const logFailure = handlerFailureLog(this.busOptions.logger);
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      try {
        await this.options.handler({ ...base, attempt, countedFailures: counted });
        this.metrics.handled(base.topic, secondsSince(started));
        this.metrics.outcome(base.topic, 'ok');
        return 'ok';
      } catch (err) {
        this.metrics.handled(base.topic, secondsSince(started));
        const error = errorMessage(err);
        const countedNow = !isEngineUnavailableError(err);
        logFailure({ err, group: this.options.group, topic: base.topic, offset: base.offset, attempt }, countedNow);
        if (countedNow) counted++;
        // The last failure is counted as the dead letter its caller writes; one cut short by closing is delivered again.
        if (this.stopping || counted < maxAttempts) this.metrics.outcome(base.topic, 'retry');
        if (this.stopping) return 'abandoned';
        if (counted >= maxAttempts) return { error, attempts: attempt + 1 };
        await delay(Math.min(5000, retryBase * 2 ** Math.min(attempt, 16)), this.sleeper);
        if (this.stopping) return 'abandoned';
        // Waiting out a backoff must not cost this member its partitions.
        await heartbeat().catch(() => undefined);
      }
    }
  }

  /** Stops fetching, lets the message in hand finish (or abandons its retries), commits, leaves the group. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.stopping = true;
      this.untrack?.();
      // A start under way connecting to a broker that is down gives up now, and then sees `stopping` and does not run the consumer.
      this.client.stop();
      clearTimeout(this.restartTimer);
      this.sleeper.wake?.();
      await this.starting?.catch(() => undefined);
      // kafkajs' stop() does nothing to a consumer still joining its group, and one whose join completes after
      // disconnect() fetches on, reconnecting as it needs. So let the join finish first (it is then stopped and leaves
      // the group). Past JOIN_SETTLE_MS the connections are cut under it, which fails the join: disconnect() would
      // otherwise wait for the JoinGroup, which the broker holds until the group's rebalance ends.
      if (!(await settledWithin(this.running, JOIN_SETTLE_MS))) this.client.cutConnections();
      await this.consumer.disconnect();
      await this.running;
    })();
    return this.closing;
  }
}

/** The partitions' positions added up per topic: their lags summed, the oldest unhandled message of them all. */
function summedByTopic(positions: Iterable<TopicPosition>): TopicPosition[] {
  const byTopic = new Map<string, TopicPosition>();
  for (const p of positions) {
    const sum = byTopic.get(p.topic);
    if (!sum) byTopic.set(p.topic, { ...p });
    else {
      sum.lag += p.lag;
      if (p.oldestMs !== null && (sum.oldestMs === null || p.oldestMs < sum.oldestMs)) sum.oldestMs = p.oldestMs;
    }
  }
  return [...byTopic.values()];
}
