import { randomBytes } from 'node:crypto';
import type { DeliveredEvent, EventBus, Subscription } from '../src/events/event-bus';
import { contractTests, describeOnEngine } from '../../../test/engines/suite';
import { eventPipelineMetrics } from '../src/events/event-metrics';
import { serviceMetrics } from '../src/service-metrics';

/** One adapter under test: a bus plus a way to open another handle on the same storage (another process). */
export interface EventBusHarness {
  bus: EventBus;
  /** A second, independent bus on the same log or cluster, as a restarted or second process would open it. */
  reopen(): EventBus;
  /** Messages this group gave up on after maxAttempts (the adapter's dead-letter store), oldest first. */
  deadLetters(group: string, topic: string): Promise<{ key: string; payload: Uint8Array }[]>;
  /** Closes everything the harness opened. */
  close(): Promise<void>;
}

export type EventBusHarnessFactory = () => Promise<EventBusHarness>;

const text = (s: string) => new TextEncoder().encode(s);
const read = (e: { payload: Uint8Array }) => new TextDecoder().decode(e.payload);

async function waitFor(what: string, predicate: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The value of one series of the process's event pipeline metrics (0 when it has none yet); `sample` picks a histogram's _count or _sum. */
export async function metricValue(name: string, labels: Record<string, string>, sample?: string): Promise<number> {
  const metric = eventPipelineMetrics.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const found = values.find((v) => (sample === undefined || (v as { metricName?: string }).metricName === `${name}${sample}`) && Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  return found?.value ?? 0;
}

/** A topic and group of its own per test, so tests on one broker never see each other's messages. */
function fresh(): { topic: string; group: string } {
  const id = randomBytes(4).toString('hex');
  return { topic: `contract.t${id}.v1`, group: `contract-g${id}` };
}

/**
 * The EventBus port's behaviour, run against every adapter: embedded SQLite log always, Kafka when a
 * broker is available. `skipReason` set means the adapter cannot run here; the suite is reported as skipped.
 */
export function describeEventBusContract(name: string, factory: EventBusHarnessFactory, skipReason?: string): void {
  describeOnEngine(`EventBus contract: ${name}`, skipReason, () => {
    const test = contractTests(`event-bus on ${name}`);
    let h: EventBusHarness;
    const opened: Subscription[] = [];
    const subscribe = async (bus: EventBus, options: Parameters<EventBus['subscribe']>[0]) => {
      const s = await bus.subscribe(options);
      opened.push(s);
      return s;
    };

    beforeEach(async () => {
      h = await factory();
    });
    afterEach(async () => {
      await Promise.allSettled(opened.splice(0).map((s) => s.close()));
      await h.close();
    });

    test('ready() resolves on a working bus', async () => {
      await expect(h.bus.ready()).resolves.toBeUndefined();
    });

    test('delivers topic, key and payload intact, including messages published before the group subscribed', async () => {
      const { topic, group } = fresh();
      await h.bus.publish([{ topic, key: 'card-1', payload: text('before') }]);
      const got: DeliveredEvent[] = [];
      await subscribe(h.bus, { group, topics: [topic], handler: async (e) => void got.push(e) });
      await h.bus.publish([{ topic, key: 'card-2', payload: new Uint8Array([0, 255, 1, 128]) }]);
      await waitFor('two messages', () => got.length >= 2);
      // Different keys may sit on different partitions: no order between them is promised.
      got.sort((x, y) => x.key.localeCompare(y.key));
      expect(got.map((e) => [e.topic, e.key])).toEqual([
        [topic, 'card-1'],
        [topic, 'card-2'],
      ]);
      expect(read(got[0]!)).toBe('before');
      expect([...got[1]!.payload]).toEqual([0, 255, 1, 128]);
      expect(got.every((e) => e.attempt === 0 && typeof e.offset === 'string')).toBe(true);
    });

    test('keeps the order of messages with the same key', async () => {
      const { topic, group } = fresh();
      const keys = ['a', 'b', 'c', 'd'];
      const seen = new Map<string, number[]>();
      await subscribe(h.bus, {
        group,
        topics: [topic],
        handler: async (e) => {
          const list = seen.get(e.key) ?? [];
          list.push(Number(read(e)));
          seen.set(e.key, list);
        },
      });
      for (let i = 0; i < 20; i++) await h.bus.publish(keys.map((key) => ({ topic, key, payload: text(String(i)) })));
      await waitFor('80 messages', () => [...seen.values()].reduce((n, l) => n + l.length, 0) >= 80);
      for (const key of keys) expect(seen.get(key)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    });

    test('publishes a batch bigger than one broker request may carry (200 events of 30 KB, 60 under one key), in key order', async () => {
      // An outbox backlog of large cards is published 200 at a time; Kafka refuses a record batch over 1 MB.
      const { topic, group } = fresh();
      const filler = 'x'.repeat(30_000);
      const events = Array.from({ length: 200 }, (_, i) => ({ topic, key: i % 10 < 3 ? 'big' : `k${i}`, payload: text(`${i} ${filler}`) }));
      const seen: number[] = [];
      await subscribe(h.bus, { group, topics: [topic], handler: async (e) => void seen.push(Number(read(e).split(' ')[0])) });
      await h.bus.publish(events);
      await waitFor('200 messages', () => seen.length >= 200, 60_000);
      expect([...seen].sort((a, b) => a - b)).toEqual(events.map((_, i) => i));
      const sameKey = events.flatMap((e, i) => (e.key === 'big' ? [i] : []));
      expect(seen.filter((i) => sameKey.includes(i))).toEqual(sameKey);
    });

    test('redelivers a message whose handler failed, before the messages after it', async () => {
      const { topic, group } = fresh();
      const log: string[] = [];
      let failures = 0;
      await subscribe(h.bus, {
        group,
        topics: [topic],
        maxAttempts: 5,
        handler: async (e) => {
          if (read(e) === 'flaky' && failures < 2) {
            failures++;
            log.push(`fail ${e.attempt}`);
            throw new Error('temporary failure');
          }
          log.push(`ok ${read(e)} ${e.attempt}`);
        },
      });
      await h.bus.publish([
        { topic, key: 'k', payload: text('flaky') },
        { topic, key: 'k', payload: text('next') },
      ]);
      await waitFor('both handled', () => log.length >= 4);
      expect(log).toEqual(['fail 0', 'fail 1', 'ok flaky 2', 'ok next 0']);
    });

    test('a consumer that stops before committing leaves the message to the next member of its group', async () => {
      const { topic, group } = fresh();
      let release: ((ok: boolean) => void) | undefined;
      const startedFirst = new Promise<void>((started) => {
        void subscribe(h.bus, {
          group,
          topics: [topic],
          handler: async () => {
            started();
            const ok = await new Promise<boolean>((r) => (release = r));
            if (!ok) throw new Error('process is going away');
          },
        });
      });
      await h.bus.publish([{ topic, key: 'k', payload: text('in flight') }]);
      await startedFirst;
      // The first consumer is shutting down while its handler is still failing: nothing may be committed.
      const closing = Promise.all(opened.splice(0).map((s) => s.close()));
      release!(false);
      await closing;
      const other = h.reopen();
      try {
        const got: DeliveredEvent[] = [];
        const s = await other.subscribe({ group, topics: [topic], handler: async (e) => void got.push(e) });
        await waitFor('redelivery to the second consumer', () => got.length >= 1);
        await s.close();
        expect(read(got[0]!)).toBe('in flight');
      } finally {
        await other.close();
      }
    });

    test('close() waits for the message in hand and commits it', async () => {
      const { topic, group } = fresh();
      const handled: string[] = [];
      let started!: () => void;
      const inHandler = new Promise<void>((r) => (started = r));
      const s = await h.bus.subscribe({
        group,
        topics: [topic],
        handler: async (e) => {
          started();
          await sleep(300);
          handled.push(read(e));
        },
      });
      await h.bus.publish([{ topic, key: 'k', payload: text('slow') }]);
      await inHandler;
      await s.close();
      expect(handled).toEqual(['slow']);
      const again: string[] = [];
      await h.bus.publish([{ topic, key: 'k', payload: text('later') }]);
      await subscribe(h.bus, { group, topics: [topic], handler: async (e) => void again.push(read(e)) });
      await waitFor('the later message', () => again.length >= 1);
      await sleep(300);
      expect(again).toEqual(['later']);
    });

    test('two consumers in one group share the stream; when one leaves the other takes over', async () => {
      const { topic, group } = fresh();
      const byA: string[] = [];
      const byB: string[] = [];
      const all = () => new Set([...byA, ...byB]);
      const batch = (name: string) => Array.from({ length: 12 }, (_, i) => ({ topic, key: `card-${i}`, payload: text(`${name}-${i}`) }));
      const a = await subscribe(h.bus, { group, topics: [topic], handler: async (e) => void byA.push(read(e)) });
      await h.bus.publish(batch('one'));
      await waitFor('first batch', () => all().size >= 12);
      const other = h.reopen();
      try {
        await other.subscribe({ group, topics: [topic], handler: async (e) => void byB.push(read(e)) });
        await h.bus.publish(batch('two'));
        await waitFor('second batch', () => all().size >= 24);
        await a.close();
        const bBefore = byB.length;
        await h.bus.publish(batch('three'));
        await waitFor('third batch', () => all().size >= 36, 30_000);
        const expected = ['one', 'two', 'three'].flatMap((n) => batch(n).map(read));
        expect([...all()].sort()).toEqual(expected.sort());
        // After the first member left, only the second one can have handled the third batch.
        expect(new Set(byB.slice(bBefore))).toEqual(new Set(batch('three').map(read)));
      } finally {
        await other.close();
      }
    }, 60_000);

    test('separate groups each receive every message', async () => {
      const { topic, group } = fresh();
      const one: string[] = [];
      const two: string[] = [];
      await subscribe(h.bus, { group: `${group}-one`, topics: [topic], handler: async (e) => void one.push(read(e)) });
      await subscribe(h.bus, { group: `${group}-two`, topics: [topic], handler: async (e) => void two.push(read(e)) });
      await h.bus.publish(['x', 'y', 'z'].map((v) => ({ topic, key: v, payload: text(v) })));
      await waitFor('both groups', () => one.length >= 3 && two.length >= 3);
      expect(one.sort()).toEqual(['x', 'y', 'z']);
      expect(two.sort()).toEqual(['x', 'y', 'z']);
    });

    test('after a restart a group resumes from its committed offset', async () => {
      const { topic, group } = fresh();
      const first: string[] = [];
      const s = await h.bus.subscribe({ group, topics: [topic], handler: async (e) => void first.push(read(e)) });
      await h.bus.publish(['1', '2', '3'].map((v) => ({ topic, key: 'k', payload: text(v) })));
      await waitFor('first three', () => first.length >= 3);
      await s.close();
      const restarted = h.reopen();
      try {
        await restarted.publish(['4', '5'].map((v) => ({ topic, key: 'k', payload: text(v) })));
        const second: string[] = [];
        const s2 = await restarted.subscribe({ group, topics: [topic], handler: async (e) => void second.push(read(e)) });
        await waitFor('the two new messages', () => second.length >= 2);
        await sleep(300);
        await s2.close();
        expect(first).toEqual(['1', '2', '3']);
        expect(second).toEqual(['4', '5']);
      } finally {
        await restarted.close();
      }
    });

    test('hasCommitted: false until the group has handled an event (subscribed, or its first event still in hand); then true, for another process too', async () => {
      const { topic, group } = fresh();
      const other = fresh();
      await h.bus.publish([{ topic, key: 'k', payload: text('1') }]);
      expect(await h.bus.hasCommitted(group, [topic])).toBe(false);
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      const got: string[] = [];
      const s = await subscribe(h.bus, {
        group,
        topics: [topic],
        handler: async (e) => {
          got.push(read(e));
          await held;
        },
      });
      await waitFor('the first event in hand', () => got.length === 1);
      expect(await h.bus.hasCommitted(group, [topic])).toBe(false);
      release();
      let committed = false;
      for (let tries = 0; tries < 200 && !(committed = await h.bus.hasCommitted(group, [topic])); tries++) await sleep(50);
      expect(committed).toBe(true);
      await s.close();
      const restarted = h.reopen();
      try {
        expect({
          group: await restarted.hasCommitted(group, [other.topic, topic]),
          otherTopicOnly: await restarted.hasCommitted(group, [other.topic]),
          otherGroup: await restarted.hasCommitted(other.group, [topic]),
          noTopics: await restarted.hasCommitted(group, []),
        }).toEqual({ group: true, otherTopicOnly: false, otherGroup: false, noTopics: false });
      } finally {
        await restarted.close();
      }
    });

    test('a batchHandler gets runs of events in key order; a failing run is offered again in parts until the failing event goes to the handler alone', async () => {
      const { topic, group } = fresh();
      const messages = Array.from({ length: 30 }, (_, i) => ({ topic, key: `k${i % 3}`, payload: text(i === 17 ? 'bad' : String(i)) }));
      // Published before the group subscribes, so the bus holds many of them at once.
      await h.bus.publish(messages);
      const runs: string[][] = [];
      const applied: DeliveredEvent[] = [];
      const oneByOne: string[] = [];
      await subscribe(h.bus, {
        group,
        topics: [topic],
        maxBatch: 8,
        batchHandler: async (events) => {
          runs.push(events.map(read));
          if (events.some((e) => read(e) === 'bad')) throw new Error('this run cannot be applied together');
          applied.push(...events);
        },
        handler: async (e) => {
          oneByOne.push(read(e));
          applied.push(e);
        },
      });
      await waitFor('all 30 applied', () => applied.length >= 30);
      await sleep(200);
      // Every event applied exactly once, each key's events in publish order.
      expect(applied).toHaveLength(30);
      for (const key of ['k0', 'k1', 'k2']) {
        expect(applied.filter((e) => e.key === key).map(read)).toEqual(messages.filter((m) => m.key === key).map(read));
      }
      expect(runs.some((r) => r.length > 1)).toBe(true);
      expect(Math.max(...runs.map((r) => r.length))).toBeLessThanOrEqual(8);
      // The bad event went to the handler alone, once; no run holding it was applied.
      expect(oneByOne.filter((p) => p === 'bad')).toHaveLength(1);
      expect(applied.filter((e) => read(e) === 'bad')).toHaveLength(1);
    });

    test('a failing run of 64 with one poison event in the middle: the others are applied in O(log n) handler calls, in order, and only the poison one is dead-lettered', async () => {
      const { topic, group } = fresh();
      const n = 64;
      // One key: one partition on Kafka, so the whole run is in hand at once.
      const messages = Array.from({ length: n }, (_, i) => ({ topic, key: 'k', payload: text(i === 37 ? 'poison' : String(i)) }));
      await h.bus.publish(messages);
      const isPoison = (e: DeliveredEvent) => read(e) === 'poison';
      let callsWithGoodEvents = 0;
      const applied: string[] = [];
      const poisonAttempts: number[] = [];
      await subscribe(h.bus, {
        group,
        topics: [topic],
        maxAttempts: 3,
        maxBatch: n,
        batchHandler: async (events) => {
          if (events.some((e) => !isPoison(e))) callsWithGoodEvents++;
          if (events.some(isPoison)) throw new Error('cannot apply the poison event');
          applied.push(...events.map(read));
        },
        handler: async (e) => {
          if (isPoison(e)) {
            poisonAttempts.push(e.attempt);
            throw new Error('cannot apply the poison event');
          }
          callsWithGoodEvents++;
          applied.push(read(e));
        },
      });
      await waitFor('every good event applied', () => applied.length >= n - 1, 60_000);
      let dead: { key: string; payload: Uint8Array }[] = [];
      for (let i = 0; i < 50 && dead.length === 0; i++) {
        dead = await h.deadLetters(group, topic);
        if (dead.length === 0) await sleep(100);
      }
      // Each good event applied once, in publish order; event by event this took n calls.
      expect(applied).toEqual(messages.map(read).filter((p) => p !== 'poison'));
      expect(callsWithGoodEvents).toBeLessThanOrEqual(2 * Math.log2(n) + 2);
      expect(poisonAttempts).toEqual([0, 1, 2]);
      expect(dead.map((d) => [d.key, read(d)])).toEqual([['k', 'poison']]);
      const handledTotal = (outcome: string) => metricValue('card_library_events_handled_total', { group, topic, outcome });
      expect({ ok: await handledTotal('ok'), deadLetter: await handledTotal('dead_letter') }).toEqual({ ok: n - 1, deadLetter: 1 });
    }, 90_000);

    /** A group (maxAttempts 3) failing on 'poison', published before 'good' on one key; resolves once 'good' is handled. */
    async function poisonThenGood() {
      const { topic, group } = fresh();
      const attempts: number[] = [];
      const handled: string[] = [];
      await subscribe(h.bus, {
        group,
        topics: [topic],
        maxAttempts: 3,
        handler: async (e) => {
          if (read(e) === 'poison') {
            attempts.push(e.attempt);
            throw new Error('cannot handle this');
          }
          handled.push(read(e));
        },
      });
      await h.bus.publish([
        { topic, key: 'p', payload: text('poison') },
        { topic, key: 'p', payload: text('good') },
      ]);
      await waitFor('the good message after the poison one', () => handled.length >= 1);
      return { topic, group, attempts, handled };
    }

    test('dead-letters a message after maxAttempts failures and moves on', async () => {
      const { topic, group, attempts, handled } = await poisonThenGood();
      expect(attempts).toEqual([0, 1, 2]);
      expect(handled).toEqual(['good']);
      let dead: { key: string; payload: Uint8Array }[] = [];
      for (let i = 0; i < 50 && dead.length === 0; i++) {
        dead = await h.deadLetters(group, topic);
        if (dead.length === 0) await sleep(100);
      }
      expect(dead.map((d) => [d.key, read(d)])).toEqual([['p', 'poison']]);
    });

    test("counts what it published, handled, retried and dead-lettered in the process's metrics", async () => {
      const { topic, group } = await poisonThenGood();
      const handledTotal = (outcome: string) => metricValue('card_library_events_handled_total', { group, topic, outcome });
      expect(await metricValue('card_library_events_published_total', { topic })).toBe(2);
      expect(await handledTotal('ok')).toBe(1);
      expect(await handledTotal('retry')).toBe(2);
      expect(await handledTotal('dead_letter')).toBe(1);
      // Every handler call is timed: three failed attempts and the good event.
      expect(await metricValue('card_library_event_handling_seconds', { group, topic }, '_count')).toBe(4);
    });

    test('/metrics shows how far a group is behind: the events it has not handled and the age of the oldest, 0 once caught up', async () => {
      const { topic, group } = fresh();
      // One key: one partition on Kafka, so its one fetch sees all three.
      await h.bus.publish([1, 2, 3].map((n) => ({ topic, key: 'card-1', payload: text(String(n)) })));
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const got: string[] = [];
      await subscribe(h.bus, {
        group,
        topics: [topic],
        handler: async (e) => {
          got.push(read(e));
          if (got.length === 1) await held;
        },
      });
      await waitFor('the first event in hand', () => got.length === 1);
      const lag = () => serviceGaugeValue('card_library_event_consumer_lag', { group, topic });
      const age = () => serviceGaugeValue('card_library_event_consumer_oldest_unhandled_seconds', { group, topic });
      expect(await lag()).toBe(3);
      await sleep(1100);
      expect(await age()).toBeGreaterThanOrEqual(1);
      release();
      await waitFor('all three handled', () => got.length === 3);
      let caughtUp = -1;
      for (let tries = 0; tries < 100 && (caughtUp = (await lag()) ?? -1) !== 0; tries++) await sleep(50);
      expect(caughtUp).toBe(0);
      expect(await age()).toBe(0);
    });
  });
}

/** A gauge of serviceMetrics as a scrape reads it (its collect() run); undefined when it has no such series. */
export async function serviceGaugeValue(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = serviceMetrics.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  return values.find((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))?.value;
}
