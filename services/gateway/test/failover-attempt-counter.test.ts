import { createLogger } from '@cards/platform';
import { MemoryAttemptCounter } from '../src/adapters/memory/memory-attempt-counter';
import { FailoverAttemptCounter, PROBE_KEY } from '../src/application/failover-attempt-counter';
import type { AttemptCounter } from '../src/domain/attempt-counter';

/** A shared counter whose store can be taken away: failing (rejects) or hanging (answers only when failHung() fails it). */
class SwitchableCounter implements AttemptCounter {
  state: 'up' | 'failing' | 'hanging' = 'up';
  /** Every call the store received, in order: "record k", "forget k". */
  readonly calls: string[] = [];
  private readonly counts = new MemoryAttemptCounter();
  private readonly hung: ((err: Error) => void)[] = [];
  private answer<T>(call: string, work: () => Promise<T>): Promise<T> {
    this.calls.push(call);
    if (this.state === 'failing') return Promise.reject(new Error('MongoDB at mongodb://db is unreachable (MONGO_URL)'));
    if (this.state === 'hanging') return new Promise<T>((_, reject) => this.hung.push(reject));
    return work();
  }
  /** Fails every call still waiting for the store. */
  failHung() {
    for (const reject of this.hung.splice(0)) reject(new Error('server selection timed out'));
  }
  record(key: string, windowMs: number) {
    return this.answer(`record ${key}`, () => this.counts.record(key, windowMs));
  }
  takeBack(key: string, windowMs: number) {
    return this.answer(`takeBack ${key}`, () => this.counts.takeBack(key, windowMs));
  }
  forget(key: string) {
    return this.answer(`forget ${key}`, () => this.counts.forget(key));
  }
}

/** Lets the promise callbacks queued so far run (background work that needs no timer). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function logged(): { logger: ReturnType<typeof createLogger>; lines: () => { level: number; msg: string }[] } {
  const out: string[] = [];
  const logger = createLogger('failover-test', 'info', { write: (line: string) => void out.push(line) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as { level: number; msg: string }) };
}

describe('FailoverAttemptCounter', () => {
  it('counts in the shared counter while it answers', async () => {
    const shared = new SwitchableCounter();
    const counter = new FailoverAttemptCounter(shared, new MemoryAttemptCounter(), { logger: logged().logger });
    await counter.record('k', 60_000);
    await counter.record('k', 60_000);
    expect((await shared.record('k', 60_000)).attempts).toBe(3);
  });

  it('counts in this process while the shared counter fails, warning once, and goes back to it when it answers again', async () => {
    const shared = new SwitchableCounter();
    const { logger, lines } = logged();
    const counter = new FailoverAttemptCounter(shared, new MemoryAttemptCounter(), { logger, retrySharedAfterMs: 0 });
    await counter.record('k', 60_000);
    shared.state = 'failing';
    const during = [];
    for (let i = 0; i < 4; i++) during.push((await counter.record('k', 60_000)).attempts);
    // The limits still hold, per process: attempts keep being counted.
    expect(during).toEqual([1, 2, 3, 4]);
    await expect(counter.takeBack('k', 60_000)).resolves.toBeUndefined();
    await expect(counter.forget('other')).resolves.toBeUndefined();
    expect(lines().filter((l) => l.level === 40).map((l) => l.msg)).toEqual([expect.stringContaining('counting in this process')]);
    shared.state = 'up';
    // Answered here while a probe in the background finds the shared counter answering again; then counted there.
    await counter.record('k', 60_000);
    await settle();
    expect((await counter.record('k', 60_000)).attempts).toBe(2);
    expect(lines().filter((l) => l.level === 30).map((l) => l.msg)).toEqual([expect.stringContaining('answers again')]);
  });

  it('counts in this process when the shared counter does not answer in time', async () => {
    const shared = new SwitchableCounter();
    shared.state = 'hanging';
    const counter = new FailoverAttemptCounter(shared, new MemoryAttemptCounter(), { logger: logged().logger, timeoutMs: 50 });
    expect((await counter.record('k', 60_000)).attempts).toBe(1);
    // Within the pause after a failure the shared counter is not asked, so no attempt waits for it again.
    expect((await counter.record('k', 60_000)).attempts).toBe(2);
  });

  it('after the first failure no attempt waits on the shared counter: it is only probed in the background, once per pause, until it answers', async () => {
    let clock = 1_000_000;
    const now = jest.spyOn(Date, 'now').mockImplementation(() => clock);
    const monotonic = jest.spyOn(performance, 'now').mockImplementation(() => clock);
    const shared = new SwitchableCounter();
    const { logger, lines } = logged();
    const counter = new FailoverAttemptCounter(shared, new MemoryAttemptCounter(), { logger, timeoutMs: 60_000, retrySharedAfterMs: 5000 });
    try {
      shared.state = 'hanging';
      // The attempt that finds the store failing is the one that waits for it.
      const first = counter.record('k', 60_000);
      await settle();
      shared.failHung();
      expect((await first).attempts).toBe(1);
      clock += 1000;
      expect((await counter.record('k', 60_000)).attempts).toBe(2);

      // The pause is over and the store still does not answer: the attempt is counted here at once, the store probed beside it.
      clock += 5000;
      const third = counter.record('k', 60_000);
      await settle();
      expect(shared.calls).toEqual(['record k', `forget ${PROBE_KEY}`]);
      expect((await third).attempts).toBe(3);
      // While that probe waits, attempts neither wait on the store nor probe it again.
      await counter.takeBack('k', 60_000);
      await counter.forget('other');
      expect((await counter.record('k', 60_000)).attempts).toBe(3);
      expect(shared.calls).toEqual(['record k', `forget ${PROBE_KEY}`]);

      // The probe fails: a new pause; the next probe comes only after it.
      shared.failHung();
      await settle();
      clock += 1000;
      expect((await counter.record('k', 60_000)).attempts).toBe(4);
      expect(shared.calls).toEqual(['record k', `forget ${PROBE_KEY}`]);

      // The store is back: the next probe finds it answering, and attempts are counted there again.
      shared.state = 'up';
      clock += 5000;
      expect((await counter.record('k', 60_000)).attempts).toBe(5);
      await settle();
      expect(shared.calls).toEqual(['record k', `forget ${PROBE_KEY}`, `forget ${PROBE_KEY}`]);
      expect(lines().filter((l) => l.level === 30).map((l) => l.msg)).toEqual([expect.stringContaining('answers again')]);
      expect((await counter.record('k', 60_000)).attempts).toBe(1);
      expect(shared.calls.at(-1)).toBe('record k');
    } finally {
      shared.failHung();
      now.mockRestore();
      monotonic.mockRestore();
    }
  });

  it('probes the shared counter again after the pause even when the wall clock was set back an hour meanwhile', async () => {
    // Fake timers fake the wall clock (setSystemTime steps it) and performance.now (only advanced by timers) apart.
    jest.useFakeTimers({ now: new Date('2026-11-24T12:00:30Z'), doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const shared = new SwitchableCounter();
    const counter = new FailoverAttemptCounter(shared, new MemoryAttemptCounter(), { logger: logged().logger, retrySharedAfterMs: 5000 });
    try {
      shared.state = 'failing';
      expect((await counter.record('k', 60_000)).attempts).toBe(1);
      shared.state = 'up';
      jest.setSystemTime(Date.now() - 3_600_000);
      jest.advanceTimersByTime(5000);
      await counter.record('k', 60_000);
      await settle();
      expect(shared.calls).toEqual(['record k', `forget ${PROBE_KEY}`]);
      expect((await counter.record('k', 60_000)).attempts).toBe(1);
      expect(shared.calls.at(-1)).toBe('record k');
    } finally {
      jest.useRealTimers();
    }
  });
});
