import { EngineUnavailableError, enginesDisabledReason } from './engine-support';

/**
 * One line on the run's output, written directly rather than through console.log so it is shown even
 * when every test of the file is skipped (jest hides a skipped file's console output).
 */
export function report(line: string): void {
  process.stdout.write(`${line}\n`);
}

export interface SuiteEngine<T> {
  /** The started engine, or undefined when its suites are skipped. */
  engine: T | undefined;
  /** Why the engine's suites are skipped (printed as "skipped: <reason>"). */
  skipReason: string | undefined;
}

/**
 * Whether a missing engine fails the run instead of skipping: `ENGINES=required`, or on CI (CI=true)
 * unless ENGINES=off, because CI must run the Kafka and MongoDB-protocol suites every time.
 */
export function enginesRequired(): boolean {
  const value = (process.env.ENGINES ?? '').toLowerCase();
  if (value === 'required' || value === 'on') return true;
  if (enginesDisabledReason()) return false;
  return value !== 'auto' && ['1', 'true'].includes((process.env.CI ?? '').toLowerCase());
}

/**
 * Starts an engine for one jest file at collection time (synchronously, so the file can choose
 * `describe` or `describe.skip`) and stops it after the file's tests. When the engine cannot run
 * the reason is printed; with enginesRequired() it is an error instead.
 */
export function engineForSuite<T extends { stop(): Promise<void> }>(name: string, start: () => T): SuiteEngine<T> {
  let engine: T | undefined;
  let skipReason: string | undefined;
  const started = Date.now();
  try {
    engine = start();
  } catch (err) {
    if (!(err instanceof EngineUnavailableError) || (enginesRequired() && !enginesDisabledReason())) throw err;
    skipReason = err.message;
  }
  if (engine) {
    const running = engine;
    report(`[engines] ${name}: started in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    afterAll(() => running.stop(), 60_000);
  } else {
    report(`[engines] ${name}: skipped: ${skipReason}`);
  }
  return { engine, skipReason };
}

/**
 * Registers the tests of a contract suite and prints, after them, how many passed on this adapter:
 * "[contract] event-bus on kafka: ran, 9 of 9 passed". Used inside a describe block.
 */
export function contractTests(label: string): (name: string, body: () => Promise<void>, timeoutMs?: number) => void {
  let defined = 0;
  let passed = 0;
  afterAll(() => {
    report(`[contract] ${label}: ran, ${passed} of ${defined} passed`);
  });
  return (name, body, timeoutMs) => {
    defined++;
    it(
      name,
      async () => {
        await body();
        passed++;
      },
      timeoutMs,
    );
  };
}

/** describe, or describe.skip with the reason in its name, so a skipped adapter is visible in the report. */
export function describeOnEngine(title: string, skipReason: string | undefined, body: () => void): void {
  if (skipReason) {
    describe.skip(`${title} — skipped: ${skipReason.split('\n')[0]}`, body);
    report(`[contract] ${title}: skipped: ${skipReason.split('\n')[0]}`);
  } else describe(title, body);
}
