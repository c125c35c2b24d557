import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { KafkaEventBus, SqliteOutboxStore, Topics, appendToSqliteOutbox, createLogger, openSqlite } from '@cards/platform';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { startKafkaSync } from '../../../test/engines/kafka';
import { verificationConfigSchema } from '../src/verification/config';
import { startVerificationWorker, type VerificationWorker } from '../src/verification';
import { testTempDir } from '../../../test/support/cleanup';

const { engine: kafka, skipReason } = engineForSuite('kafka', startKafkaSync);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The worker opens its own Kafka bus (search's composition root gives it none). kafkajs retries a send to a broker that
// went away for ~15-20 s and cannot be told to stop; a search pod being stopped must not wait that out.
describeOnEngine('verification worker stopped while its Kafka broker is down', skipReason, () => {
  it('stop() does not wait out the producer retries: the unpublished results stay in the outbox and are published after the next start', async () => {
    const dataDir = testTempDir('verification-kafka-outage-');
    const lines: string[] = [];
    const logger = createLogger('verification-kafka-test', 'debug', { write: (line: string) => void lines.push(line) });
    const config = verificationConfigSchema.parse({});
    const results = new KafkaEventBus({ brokers: [kafka!.brokers], logger: createLogger('verification-kafka-test', 'silent'), heartbeatIntervalMs: 300, sessionTimeoutMs: 6000 });
    const published: string[] = [];
    const first = await startVerificationWorker({ config, dataDir, kafkaBrokers: kafka!.brokers, logger });
    let running: VerificationWorker | undefined = first;
    let stopped: Promise<string> | undefined;
    let halted = false;
    let watching = true;
    try {
      await kafka!.halt();
      halted = true;
      const refusedBefore = lines.filter((line) => line.includes('ECONNREFUSED')).length;
      // Two jobs' results, written as a finished job writes them (the relay's timer picks them up).
      const outbox = openSqlite(join(dataDir, 'search', 'verification.db'));
      appendToSqliteOutbox(outbox, [1, 2].map((n) => ({ topic: Topics.verification, key: `card-${n}`, payload: Buffer.from(`result ${n}`) })));
      // Stopped once kafkajs is retrying the relay's send: it has logged a refused attempt since the broker went away.
      while (lines.filter((line) => line.includes('ECONNREFUSED')).length === refusedBefore) await sleep(20);

      running = undefined;
      stopped = first.stop().then(() => 'stop() resolved');
      const retriesRanOut = (async () => {
        while (watching && !lines.some((line) => /NumberOfRetriesExceeded|retries exceeded/i.test(line))) await sleep(50);
        return 'kafkajs retries ran out';
      })();
      expect(await Promise.race([stopped, retriesRanOut])).toBe('stop() resolved');
      // The send was cut by the bus's close, not failed by kafkajs once its retries ran out (which names the refused connection).
      expect(lines.filter((line) => /NumberOfRetriesExceeded|retries exceeded/i.test(line))).toEqual([]);
      expect(lines.some((line) => line.includes('outbox relay could not publish') && line.includes('event bus is closed'))).toBe(true);
      expect((await new SqliteOutboxStore(outbox).pending(10)).map((e) => Buffer.from(e.payload).toString())).toEqual(['result 1', 'result 2']);
      outbox.close();

      kafka!.resume();
      halted = false;
      running = await startVerificationWorker({ config, dataDir, kafkaBrokers: kafka!.brokers, logger });
      await results.subscribe({ group: 'verification-kafka-results', topics: [Topics.verification], handler: async (e) => void published.push(Buffer.from(e.payload).toString()) });
      for (let i = 0; i < 600 && published.length < 2; i++) await sleep(100);
      expect(published.sort()).toEqual(['result 1', 'result 2']);
    } finally {
      watching = false;
      if (halted) kafka!.resume();
      await stopped?.catch(() => undefined);
      await running?.stop();
      await results.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
