import { createLogger, handlerFailureLog, NotDueYetError, RetryableUnavailableError, WAITING_HANDLER_WARNING_EVERY_MS } from '../src';

// One event's deliveries: counted failures are each a warning; uncounted ones (an engine or a peer not ready, retried
// up to 5 s apart for as long as that lasts) one warning a minute at most, the others debug lines.
describe('handlerFailureLog', () => {
  it('warns at the first uncounted failure, then once a minute with the failures in between; every counted one', () => {
    const lines: { level: number; msg: string; attempt: number; failuresSinceLastWarning?: number }[] = [];
    const logger = createLogger('bus-test', 'debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
    let now = 0;
    const log = handlerFailureLog(logger, () => now);
    for (let attempt = 0; attempt < 30; attempt++) {
      log({ attempt }, false);
      now += 5_000;
    }
    log({ attempt: 30 }, true);
    const warnings = lines.filter((line) => line.level === 40).map(({ attempt, failuresSinceLastWarning }) => ({ attempt, failuresSinceLastWarning }));
    // 5 s apart: attempts 0, 12 and 24 are a minute apart.
    expect(WAITING_HANDLER_WARNING_EVERY_MS).toBe(60_000);
    expect(warnings).toEqual([
      { attempt: 0, failuresSinceLastWarning: 0 },
      { attempt: 12, failuresSinceLastWarning: 11 },
      { attempt: 24, failuresSinceLastWarning: 11 },
      { attempt: 30, failuresSinceLastWarning: undefined },
    ]);
    expect(lines.filter((line) => line.level === 20)).toHaveLength(27);
    expect(new Set(lines.map((line) => line.msg))).toEqual(new Set(['event handler failed']));
  });

  it('logs an event not due yet (NotDueYetError: waiting by design, as the bytes of a deleted file kept for a grace) as debug lines only', () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = createLogger('bus-test', 'debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
    let now = 0;
    const log = handlerFailureLog(logger, () => now);
    for (let attempt = 0; attempt < 30; attempt++) {
      log({ err: new NotDueYetError('the bytes are kept until later'), attempt }, false);
      now += 5_000;
    }
    expect(lines.filter((line) => line.level !== 20)).toEqual([]);
    expect(lines).toHaveLength(30);
    // A peer not ready still warns.
    log({ err: new RetryableUnavailableError('the peer is unavailable'), attempt: 30 }, false);
    expect(lines.filter((line) => line.level === 40).map((line) => line.msg)).toEqual(['event handler failed']);
  });

  it('by default spaces its warnings by the monotonic clock: a wall clock set back an hour does not silence them for that hour', () => {
    // Fake timers step the wall clock (setSystemTime) without moving performance.now, which only timers advance.
    jest.useFakeTimers({ now: new Date('2026-11-24T12:00:00Z') });
    try {
      const lines: { level: number; attempt: number }[] = [];
      const logger = createLogger('bus-test', 'debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
      const log = handlerFailureLog(logger);
      log({ attempt: 0 }, false);
      jest.setSystemTime(Date.now() - 3_600_000);
      jest.advanceTimersByTime(WAITING_HANDLER_WARNING_EVERY_MS);
      log({ attempt: 1 }, false);
      expect(lines.filter((line) => line.level === 40).map((line) => line.attempt)).toEqual([0, 1]);
    } finally {
      jest.useRealTimers();
    }
  });
});
