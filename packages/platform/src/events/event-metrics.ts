import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { sampledGauge } from '../service-metrics';

/**
 * The event pipeline of this process (publishes, consumer outcomes and handling time, outbox backlog), served by every
 * /metrics endpoint beside the gRPC calls. Labels are topics, consumer groups and outbox names: fixed sets, never ids.
 */
export const eventPipelineMetrics = new Registry();

const PREFIX = 'card_library_';

const published = new Counter({
  name: `${PREFIX}events_published_total`,
  help: 'Events this process published to the event bus (from its outboxes), by topic',
  labelNames: ['topic'] as const,
  registers: [eventPipelineMetrics],
});

const handled = new Counter({
  name: `${PREFIX}events_handled_total`,
  help: 'Event deliveries to a consumer group by outcome: ok (handled), retry (a failed attempt that will be delivered again), dead_letter (given up on after maxAttempts)',
  labelNames: ['group', 'topic', 'outcome'] as const,
  registers: [eventPipelineMetrics],
});

const handling = new Histogram({
  name: `${PREFIX}event_handling_seconds`,
  help: "Time a consumer group's handler took per event and attempt (a batch handler's run: its time shared among its events)",
  labelNames: ['group', 'topic'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [eventPipelineMetrics],
});

const outboxPending = new Gauge({
  name: `${PREFIX}outbox_pending_entries`,
  help: 'Entries in the outbox not yet published, as the last drain of this process found and left them',
  labelNames: ['outbox'] as const,
  registers: [eventPipelineMetrics],
});

const relayFailures = new Counter({
  name: `${PREFIX}outbox_relay_failures_total`,
  help: 'Outbox drains that failed (bus or store unavailable) and will be retried',
  labelNames: ['outbox'] as const,
  registers: [eventPipelineMetrics],
});

/** Calls `visit` once per run of consecutive events of one topic, with the run's length. */
function forEachTopicRun(events: readonly { topic: string }[], visit: (topic: string, count: number) => void): void {
  let runStart = 0;
  for (let i = 1; i <= events.length; i++) {
    if (i === events.length || events[i]!.topic !== events[runStart]!.topic) {
      visit(events[runStart]!.topic, i - runStart);
      runStart = i;
    }
  }
}

/** Counts published events, one increment per run of consecutive events of one topic (a publish is usually one topic). */
export function countPublishedEvents(events: readonly { topic: string }[]): void {
  forEachTopicRun(events, (topic, count) => published.inc({ topic }, count));
}

export type HandlingOutcome = 'ok' | 'retry' | 'dead_letter';

/** What a consumer group's deliveries record; one per subscription, so the hot path builds no label objects. */
export interface ConsumerMetrics {
  /** Counts `count` events of a topic ending an attempt with `outcome`. */
  outcome(topic: string, outcome: HandlingOutcome, count?: number): void;
  /** Records one attempt's handler time for an event of a topic. */
  handled(topic: string, seconds: number): void;
  /** A batch handler's run (its events may mix topics): `outcome` for each event, the run's time shared among them. */
  batchRun(events: readonly { topic: string }[], outcome: 'ok' | 'retry', seconds: number): void;
}

interface TopicSeries {
  ok: { inc(value?: number): void };
  retry: { inc(value?: number): void };
  dead_letter: { inc(value?: number): void };
  time: { observe(value: number): void };
}

/** The series of one consumer group, made once per topic the group meets. */
export function consumerMetrics(group: string): ConsumerMetrics {
  const byTopic = new Map<string, TopicSeries>();
  const seriesOf = (topic: string): TopicSeries => {
    let series = byTopic.get(topic);
    if (!series) {
      series = {
        ok: handled.labels(group, topic, 'ok'),
        retry: handled.labels(group, topic, 'retry'),
        dead_letter: handled.labels(group, topic, 'dead_letter'),
        time: handling.labels(group, topic),
      };
      byTopic.set(topic, series);
    }
    return series;
  };
  return {
    outcome(topic, outcome, count = 1) {
      seriesOf(topic)[outcome].inc(count);
    },
    handled(topic, seconds) {
      seriesOf(topic).time.observe(seconds);
    },
    batchRun(events, outcome, seconds) {
      const each = seconds / events.length;
      forEachTopicRun(events, (topic, count) => {
        const series = seriesOf(topic);
        series[outcome].inc(count);
        for (let i = 0; i < count; i++) series.time.observe(each);
      });
    },
  };
}

/** Seconds since `startMs` (a performance.now() reading). */
export function secondsSince(startMs: number): number {
  return (performance.now() - startMs) / 1000;
}

/** What an outbox relay records, under the outbox's name. */
export interface OutboxMetrics {
  pending(entries: number): void;
  failed(): void;
}

export function outboxMetrics(outbox: string): OutboxMetrics {
  const gauge = outboxPending.labels(outbox);
  const failures = relayFailures.labels(outbox);
  gauge.set(0);
  failures.inc(0);
  return {
    pending: (entries) => gauge.set(entries),
    failed: () => failures.inc(),
  };
}

/**
 * How far each consumer group of this process is behind, per topic, read at each scrape from its subscriptions: the
 * embedded log counts the events past the group's committed offset (up to CONSUMER_LAG_COUNT_CAP); Kafka reports what
 * its last fetch of each partition showed (high watermark - 1 - the last offset handled, summed over the partitions
 * this member holds). Both adapters add the age of the oldest event the group has not handled yet (0: none).
 */
export const consumerLag = sampledGauge(
  `${PREFIX}event_consumer_lag`,
  "Events of a topic a consumer group of this process has not handled yet (embedded log: past the group's committed offset, counted up to 100000; Kafka: as its last fetch saw, summed over the partitions this member holds)",
  ['group', 'topic'] as const,
);

export const consumerOldestUnhandled = sampledGauge(
  `${PREFIX}event_consumer_oldest_unhandled_seconds`,
  'Age of the oldest event of a topic a consumer group of this process has not handled yet (0 when it is caught up)',
  ['group', 'topic'] as const,
);

/** The most events the embedded log counts for one group and topic at a scrape (the count is an index range scan). */
export const CONSUMER_LAG_COUNT_CAP = 100_000;

/** What a subscription reports at a scrape for each of its topics. */
export interface TopicPosition {
  topic: string;
  lag: number;
  /** Publication time (ms) of the oldest event not handled yet; null when caught up. */
  oldestMs: number | null;
}

/** Registers a subscription's positions with both gauges; the returned function removes them (at close). */
export function trackConsumerPositions(group: string, positions: () => TopicPosition[], now: () => number = Date.now): () => void {
  const removeLag = consumerLag.addSource(() => positions().map((p) => ({ labels: { group, topic: p.topic }, value: p.lag })));
  const removeAge = consumerOldestUnhandled.addSource(() =>
    positions().map((p) => ({ labels: { group, topic: p.topic }, value: p.oldestMs === null ? 0 : Math.max(0, (now() - p.oldestMs) / 1000) })),
  );
  return () => {
    removeLag();
    removeAge();
  };
}
