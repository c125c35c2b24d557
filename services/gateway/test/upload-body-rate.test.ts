import { PassThrough } from 'node:stream';
import { watchBodyRate, type SlowBody, type UploadBodyRate } from '../src/http/upload-body-rate';

const RATE: UploadBodyRate = { graceMs: 300, minBytesPerSecond: 10_000, windowMs: 400 };
/**
 * Time passes on jest's clock (setInterval, Date.now, performance.now), not the machine's: on the real clock a test
 * worker starved of CPU for 300-400 ms stalled the writer and the check alike, and the check, run first, found a steady
 * body too slow (or found a trickle late: 'after the grace' was bounded by 500 ms of the machine's time).
 */
const sleep = (ms: number) => jest.advanceTimersByTimeAsync(ms);
beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] }));
afterEach(() => jest.useRealTimers());

/** A body read as the JSON parser reads it, written `bytes` every `everyMs` until stopped; records when it is found too slow. */
function feed(bytes: number, everyMs: number, rate = RATE) {
  const body = new PassThrough();
  body.on('data', () => undefined);
  const slow: Array<SlowBody & { atMs: number }> = [];
  const started = Date.now();
  const stop = watchBodyRate(body, rate, (s) => slow.push({ ...s, atMs: Date.now() - started }));
  let sending = true;
  const writer = setInterval(() => {
    if (sending) body.write(Buffer.alloc(bytes));
  }, everyMs);
  return {
    slow,
    goQuiet: () => (sending = false),
    end: () => {
      clearInterval(writer);
      stop();
      body.destroy();
    },
  };
}

describe('watchBodyRate: an upload body below the minimum rate is found too slow after the grace', () => {
  it('finds a trickling body too slow once, after the grace', async () => {
    const body = feed(10, 50); // 200 bytes/s
    try {
      await sleep(1_200);
      expect(body.slow).toHaveLength(1);
      expect(body.slow[0]!.atMs).toBeGreaterThanOrEqual(RATE.graceMs);
      expect(body.slow[0]!.atMs).toBeLessThan(RATE.graceMs + 500);
      expect(body.slow[0]!.bytesPerSecond).toBeLessThan(RATE.minBytesPerSecond);
      expect(body.slow[0]!.receivedBytes).toBeGreaterThan(0);
    } finally {
      body.end();
    }
  });

  it('lets a steady body above the minimum go on past the grace and several windows', async () => {
    const body = feed(2_000, 50); // 40,000 bytes/s, four times the minimum
    try {
      await sleep(1_500);
      expect(body.slow).toEqual([]);
    } finally {
      body.end();
    }
  });

  it('finds a body that stops arriving (idle) too slow once the window holds too little of it', async () => {
    const body = feed(2_000, 50);
    try {
      await sleep(500);
      expect(body.slow).toEqual([]);
      body.goQuiet();
      await sleep(800);
      expect(body.slow).toHaveLength(1);
    } finally {
      body.end();
    }
  });

  it('checks nothing once stopped, nor with a minimum of 0', async () => {
    const stopped = feed(1, 50);
    stopped.end();
    const unlimited = feed(1, 50, { ...RATE, minBytesPerSecond: 0 });
    try {
      await sleep(900);
      expect(stopped.slow).toEqual([]);
      expect(unlimited.slow).toEqual([]);
    } finally {
      unlimited.end();
    }
  });
});
