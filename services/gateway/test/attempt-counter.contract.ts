import type { AttemptCounter } from '../src/domain/attempt-counter';
import { contractTests, describeOnEngine } from '../../../test/engines/suite';

export interface CounterUnderTest {
  counter: AttemptCounter;
  close(): Promise<void>;
}

const MINUTE = 60_000;

/**
 * The AttemptCounter contract, run on every adapter. `open` gets the clock the counter must read, so windows can be
 * crossed without waiting; it starts a little into a window near the real time (stores may expire by the real one).
 */
export function describeAttemptCounterContract(adapter: string, open: (now: () => number) => Promise<CounterUnderTest>, skipReason?: string): void {
  describeOnEngine(`AttemptCounter contract on ${adapter}`, skipReason, () => {
    const test = contractTests(`attempt-counter on ${adapter}`);
    let time = 0;
    let opened: CounterUnderTest;
    let counter: AttemptCounter;
    let n = 0;
    const aKey = () => `login:ip:203.0.113.${++n}:${Math.random().toString(36).slice(2)}`;

    beforeEach(async () => {
      time = Math.floor(Date.now() / MINUTE) * MINUTE + 1_000;
      opened = await open(() => time);
      counter = opened.counter;
    });
    afterEach(async () => {
      await opened.close();
    });

    test('counts each attempt of a key in its window, which ends at the next multiple of the window length', async () => {
      const key = aKey();
      const windowEnd = new Date(time - 1_000 + MINUTE);
      expect(await counter.record(key, MINUTE)).toEqual({ attempts: 1, windowEndsAt: windowEnd });
      time += 30_000;
      expect(await counter.record(key, MINUTE)).toEqual({ attempts: 2, windowEndsAt: windowEnd });
      expect(await counter.record(key, MINUTE)).toEqual({ attempts: 3, windowEndsAt: windowEnd });
    });

    test('starts a key again from zero in the next window', async () => {
      const key = aKey();
      await counter.record(key, MINUTE);
      await counter.record(key, MINUTE);
      time += MINUTE;
      expect((await counter.record(key, MINUTE)).attempts).toBe(1);
    });

    test('keeps keys apart, and a key counted in windows of another length apart', async () => {
      const [one, other] = [aKey(), aKey()];
      await counter.record(one, MINUTE);
      await counter.record(one, MINUTE);
      expect((await counter.record(other, MINUTE)).attempts).toBe(1);
      expect((await counter.record(one, 10 * MINUTE)).attempts).toBe(1);
      expect((await counter.record(one, MINUTE)).attempts).toBe(3);
    });

    test('loses none of many attempts made at once on a new key', async () => {
      const key = aKey();
      const counts = await Promise.all(Array.from({ length: 40 }, () => counter.record(key, MINUTE)));
      // Which attempt saw which count is the store's business (mongo-java-server may show two the same one); none is lost.
      for (const { attempts } of counts) expect(attempts).toBeGreaterThanOrEqual(1);
      expect(Math.max(...counts.map((c) => c.attempts))).toBe(40);
      expect((await counter.record(key, MINUTE)).attempts).toBe(41);
    });

    test('takes back an attempt, never below zero', async () => {
      const key = aKey();
      await counter.record(key, MINUTE);
      await counter.record(key, MINUTE);
      await counter.takeBack(key, MINUTE);
      expect((await counter.record(key, MINUTE)).attempts).toBe(2);
      await counter.takeBack(key, MINUTE);
      await counter.takeBack(key, MINUTE);
      await counter.takeBack(key, MINUTE);
      expect((await counter.record(key, MINUTE)).attempts).toBe(1);
      await counter.takeBack(aKey(), MINUTE);
    });

    test('forgets a key: its next attempt counts as the first', async () => {
      const [key, kept] = [aKey(), aKey()];
      await counter.record(key, MINUTE);
      await counter.record(key, MINUTE);
      await counter.record(kept, MINUTE);
      await counter.forget(key);
      expect((await counter.record(key, MINUTE)).attempts).toBe(1);
      expect((await counter.record(kept, MINUTE)).attempts).toBe(2);
    });

    // The wall clock is not a stopwatch: NTP, a VM's resume or a clock fixed by hand may set it back an hour. The window
    // in progress then starts in the "future": the limit must reset within a window, not an hour and a minute later.
    test('after the clock is set back an hour, counts in a window of the new time, which ends within one window length', async () => {
      const key = aKey();
      for (let i = 0; i < 5; i++) await counter.record(key, MINUTE);
      time -= 60 * MINUTE;
      const after = await counter.record(key, MINUTE);
      expect(after).toEqual({ attempts: 1, windowEndsAt: new Date(time - 1_000 + MINUTE) });
      await counter.takeBack(key, MINUTE);
      expect((await counter.record(key, MINUTE)).attempts).toBe(1);
    });
  });
}
