import { join } from 'node:path';
import { OutboxRelay, Topics, connectMongo, createEventBus, mongoEngineCheck, sampledGauge, settledWithin, type EngineCheck, type OutboxStore, type EventBus, type Logger, type Subscription } from '@cards/platform';
import { events } from '@cards/proto';
import { DnsHostResolver } from './adapters/dns/dns-host-resolver';
import { WorkerFuzzballScorer } from './adapters/fuzzball/fuzzball-scorer';
import { MongoVerificationStore } from './adapters/mongo/mongo-verification-store';
import { SqliteVerificationStore } from './adapters/sqlite/sqlite-verification-store';
import { UndiciPageFetcher } from './adapters/undici/undici-page-fetcher';
import { VerificationService } from './application/verification-service';
import { parseAllowedHosts } from './domain/address-policy';
import { AddressGuard } from './domain/address-guard';
import { defaultMaxPerAuthor } from './domain/fair-share';
import type { HostResolver, VerificationStore } from './domain/ports';
import type { VerificationConfig } from './config';

export const VERIFICATION_CONSUMER_GROUP = 'search-verification';

/** How long stop() lets the outbox relay publish the results of the last jobs before it closes the bus under it. */
const FINAL_FLUSH_MS = 2000;

/** The most jobs of one state /metrics counts (an index range read per scrape). */
export const QUEUE_DEPTH_COUNT_CAP = 100_000;

/** The verification queue's jobs waiting and running (the whole queue: every replica's), read at each scrape. */
const queueDepth = sampledGauge(
  'card_library_verification_jobs',
  'Verification jobs in the queue (shared by every search replica) by state: pending (waiting, retries included) and running; each counted up to 100000',
  ['state'] as const,
);

/**
 * Runs claimed jobs with at most `concurrency` in flight, shared fairly across authors (the store's claim). Woken when a
 * job is enqueued or finishes, and by a timer for retries that come due.
 */
export class VerificationRunner {
  private active = 0;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private pumping: Promise<void> | undefined;
  private again = false;
  private readonly inFlight = new Set<Promise<void>>();
  private untrackQueue: (() => void) | undefined;

  constructor(
    private readonly store: VerificationStore,
    private readonly service: VerificationService,
    private readonly concurrency: number,
    private readonly logger: Logger,
    private readonly afterJob: () => void,
    /** How long a claimed job may run before another runner may take it over (its runner is presumed dead). */
    private readonly leaseMs: number,
    /** Most jobs of one author running at once, counted over the whole queue (every runner's); see claim(). */
    private readonly maxPerAuthor = defaultMaxPerAuthor(concurrency),
    private readonly pollMs = 500,
  ) {}

  start(): void {
    this.running = true;
    this.untrackQueue = queueDepth.addSource(async () => {
      const { pending, running } = await this.store.queueDepth(QUEUE_DEPTH_COUNT_CAP);
      return [
        { labels: { state: 'pending' }, value: pending },
        { labels: { state: 'running' }, value: running },
      ];
    });
    this.timer = setInterval(() => this.kick(), this.pollMs);
    this.timer.unref();
    this.kick();
  }

  kick(): void {
    if (!this.running) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = this.pump()
      .catch((err: unknown) => this.logger.error({ err }, 'verification runner could not claim jobs'))
      .finally(() => {
        this.pumping = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Stops claiming at once (synchronously) and resolves when the jobs in flight have finished. */
  async stop(): Promise<void> {
    this.running = false;
    this.untrackQueue?.();
    if (this.timer) clearInterval(this.timer);
    while (this.pumping) await this.pumping;
    await Promise.all([...this.inFlight]);
  }

  /**
   * When this runner last requeued the jobs of runners presumed dead, by its monotonic clock (performance.now), not the
   * wall clock: set back an hour, that would stop the requeues for the hour. (The leases themselves are wall-clock
   * times, stored and compared by every replica.)
   */
  private lastRequeue: number | undefined;

  private async pump(): Promise<void> {
    const sinceRequeue = this.lastRequeue === undefined ? Infinity : performance.now() - this.lastRequeue;
    if (sinceRequeue > Math.min(this.leaseMs, 30_000)) {
      this.lastRequeue = performance.now();
      const requeued = await this.store.requeueExpired(new Date());
      if (requeued > 0) this.logger.warn({ requeued }, 'verification jobs whose runner stopped were requeued');
    }
    const free = this.concurrency - this.active;
    if (free <= 0) return;
    const now = new Date();
    const jobs = await this.store.claim(free, now, new Date(now.getTime() + this.leaseMs), this.maxPerAuthor);
    for (const job of jobs) {
      this.active++;
      const task = this.service
        .run(job)
        .then(async (result) => {
          if (result === 'interrupted' && !(await this.store.release(job))) {
            this.logger.warn({ verificationId: job.id, cardId: job.cardId }, 'stale verification run not handed back: it outlived its lease (or its card was deleted), so the job is no longer its to hand back');
          }
        })
        .catch(async (err: unknown) => {
          // Unexpected (store) failure: the job stays claimed until its lease runs out; log loudly.
          this.logger.error({ err, verificationId: job.id, cardId: job.cardId }, 'verification job failed');
        })
        .then(() => undefined)
        .finally(() => {
          this.active--;
          this.inFlight.delete(task);
          this.afterJob();
          this.kick();
        });
      this.inFlight.add(task);
    }
  }
}

export interface VerificationWorkerDeps {
  config: VerificationConfig;
  dataDir: string;
  /** The service's event bus; when absent the worker opens (and closes) its own from DATA_DIR / KAFKA_BROKERS. */
  bus?: EventBus;
  kafkaBrokers?: string;
  logger: Logger;
  /** Defaults to the operating system's resolver; tests inject one. */
  resolver?: HostResolver;
}

export interface VerificationWorker {
  /** The engine behind the job queue, for the service's readiness (none for SQLite). */
  engines: EngineCheck[];
  stop(): Promise<void>;
}

/**
 * Content verification inside the search service: consumes card events (group search-verification),
 * keeps a durable job queue in DATA_DIR/search/verification.db, fetches and scores with bounded
 * concurrency, and publishes CardVerified through that database's outbox.
 */
export async function startVerificationWorker(deps: VerificationWorkerDeps): Promise<VerificationWorker> {
  const { config } = deps;
  const logger = deps.logger.child({ module: 'verification' });
  const allowedHosts = parseAllowedHosts(config.VERIFY_ALLOW_HOSTS);
  if (config.VERIFY_ALLOW_PRIVATE) logger.warn('VERIFY_ALLOW_PRIVATE=true: verification may fetch private and loopback addresses');
  if (allowedHosts.size > 0) logger.info({ hosts: [...allowedHosts] }, 'verification may fetch these hosts whatever their address');

  const engines: EngineCheck[] = [];
  const connection = config.MONGO_URL ? await connectMongo({ url: config.MONGO_URL, database: 'search', logger }) : undefined;
  // Searches do not touch the queue, so a MongoDB outage neither refuses them nor makes the service not ready.
  if (connection) engines.push({ ...mongoEngineCheck(connection), gatesRequests: false });
  const store: VerificationStore & { outbox(): OutboxStore } = connection
    ? await MongoVerificationStore.open(connection)
    : new SqliteVerificationStore(join(deps.dataDir, 'search', 'verification.db'));
  if (!config.MONGO_URL) logger.info('MONGO_URL not set: verification queue in SQLite under DATA_DIR/search');
  const ownBus = deps.bus ? undefined : createEventBus({ DATA_DIR: deps.dataDir, KAFKA_BROKERS: deps.kafkaBrokers }, logger);
  const bus = deps.bus ?? ownBus!;
  const fetcher = new UndiciPageFetcher({
    guard: new AddressGuard(deps.resolver ?? new DnsHostResolver(), { allowPrivate: config.VERIFY_ALLOW_PRIVATE, allowedHosts }),
    timeoutMs: config.VERIFY_TIMEOUT_MS,
    maxBytes: config.VERIFY_MAX_BYTES,
  });
  // VERIFY_CONCURRENCY and VERIFY_MAX_ATTEMPTS are at least 1 here: the config's checks stop the start otherwise.
  const scorer = new WorkerFuzzballScorer(Math.min(config.VERIFY_CONCURRENCY, 2), config.VERIFY_SCORE_TIMEOUT_MS);
  const service = new VerificationService({
    store,
    fetcher,
    scorer,
    logger,
    maxAttempts: config.VERIFY_MAX_ATTEMPTS,
    retryBaseMs: config.VERIFY_RETRY_BASE_MS,
  });
  const relay = new OutboxRelay(store.outbox(), bus, logger, { name: 'verification' });
  // Longest a job can legitimately take: the fetch budget, scoring, a retry's bookkeeping.
  const leaseMs = config.VERIFY_TIMEOUT_MS + config.VERIFY_SCORE_TIMEOUT_MS + 30_000;
  const concurrency = config.VERIFY_CONCURRENCY;
  const maxPerAuthor = config.VERIFY_MAX_PER_AUTHOR > 0 ? config.VERIFY_MAX_PER_AUTHOR : defaultMaxPerAuthor(concurrency);
  const runner = new VerificationRunner(store, service, concurrency, logger, () => relay.kick(), leaseMs, maxPerAuthor);

  relay.start();
  runner.start();

  let subscription: Subscription | undefined;
  try {
    subscription = await bus.subscribe({
      group: VERIFICATION_CONSUMER_GROUP,
      topics: [Topics.card],
      handler: async (delivered) => {
        let event: events.CardEvent;
        try {
          event = events.CardEvent.decode(delivered.payload);
        } catch (err) {
          logger.error({ err, offset: delivered.offset }, 'undecodable card event skipped');
          return;
        }
        if ((await service.onCardEvent(event)) === 'enqueued') runner.kick();
      },
    });
  } catch (err) {
    await runner.stop();
    await relay.stop();
    await scorer.close();
    await fetcher.close();
    await store.close();
    await ownBus?.close();
    throw err;
  }

  return {
    engines,
    async stop() {
      // MongoDB gone: the claims, jobs and outbox drains below fail at once instead of each waiting for a server.
      await connection?.closeIfUnreachable();
      // The subscription stays open until the bus closes: closing it alone would wait for the event in hand, which may be
      // a dead letter retrying against brokers that are down. An event it enqueues meanwhile stays queued for the next start.
      // No new claims first (stop() sets that synchronously), or a released job would be claimed again
      // at once; then interrupt work in flight so shutdown never waits out a slow page or a long scoring.
      const runnerStopped = runner.stop();
      service.stop();
      await fetcher.close();
      await scorer.close();
      await runnerStopped;
      // Publishes what the jobs that just finished wrote, but waits at most FINAL_FLUSH_MS for a broker that is down;
      // then, as cards and files do, the subscription, the relay and the bus close together, which cuts a publish or a
      // dead letter still retrying: outbox entries stay for the next start (delayed, not lost), the event in hand is not
      // committed and is delivered again.
      const flushed = relay.flush();
      if (!(await settledWithin(flushed, FINAL_FLUSH_MS))) logger.warn({ waitedMs: FINAL_FLUSH_MS }, 'verification results not published in time at shutdown: closing the event bus, what it has not sent stays in the outbox for the next start');
      await Promise.all([subscription?.close(), relay.stop(), ownBus?.close()]);
      // Cut by the close when the bus is ours; the caller's bus is the caller's to close.
      if (ownBus) await flushed;
      await store.close();
    },
  };
}
