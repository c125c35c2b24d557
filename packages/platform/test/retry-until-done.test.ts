import { createLogger, retryUntilDone, UnavailableError } from '../src';

/** A background task run again until it succeeds: what the cards backfill and search's rebuild request rely on. */
describe('retryUntilDone', () => {
  const capture = () => {
    const lines: { level: number; msg: string }[] = [];
    return { lines, logger: createLogger('cards', 'debug', { write: (line: string) => void lines.push(JSON.parse(line)) }) };
  };

  it('runs the task again after failures until it succeeds, then no more; a peer not up yet is a debug line, anything else a warning', async () => {
    jest.useFakeTimers();
    try {
      const { lines, logger } = capture();
      const outcomes = [new UnavailableError('identity is starting'), new Error('boom')];
      let runs = 0;
      const retry = retryUntilDone(async () => {
        runs += 1;
        const outcome = outcomes.shift();
        if (outcome) throw outcome;
      }, logger, 'the backfill');
      await jest.advanceTimersByTimeAsync(1_000 + 2_000 + 60_000);
      expect(runs).toBe(3);
      expect(lines.map((l) => [l.level, l.msg])).toEqual([
        [20, 'the backfill: a peer cannot answer yet; trying again'],
        [40, 'the backfill failed; trying again'],
      ]);
      await retry.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('stop ends the retries during a pause at once', async () => {
    const { logger } = capture();
    let runs = 0;
    const retry = retryUntilDone(async () => {
      runs += 1;
      throw new Error('never');
    }, logger, 'the request', 30_000);
    await new Promise((resolve) => setImmediate(resolve));
    await retry.stop();
    const after = runs;
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(after).toBe(1);
    expect(runs).toBe(1);
  });
});
