import { createLogger } from '@cards/platform';
import { MemoryAttemptCounter } from '../src/adapters/memory/memory-attempt-counter';
import { FailoverAttemptCounter } from '../src/application/failover-attempt-counter';
import type { AttemptCounter } from '../src/domain/attempt-counter';

/** A shared counter whose store can be taken away: failing (rejects) or hanging (never answers). */
class SwitchableCounter implements AttemptCounter {
  state: 'up' | 'failing' | 'hanging' = 'up';
  private readonly counts = new MemoryAttemptCounter();
  private answer<T>(work: () => Promise<T>): Promise<T> {
    if (this.state === 'failing') return Promise.reject(new Error('MongoDB at mongodb://db is unreachable (MONGO_URL)'));
    if (this.state === 'hanging') return new Promise<T>(() => undefined);
    return work();
  }
  record(key: string, windowMs: number) {
    return this.answer(() => this.counts.record(key, windowMs));
  }
  takeBack(key: string, windowMs: number) {
    return this.answer(() => this.counts.takeBack(key, windowMs));
  }
  forget(key: string) {
    return this.answer(() => this.counts.forget(key));
  }
}

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
});
