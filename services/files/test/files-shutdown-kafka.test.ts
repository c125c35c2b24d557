import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, ServerError, Status } from 'nice-grpc';
import { KafkaEventBus, Topics, createLogger } from '@cards/platform';
import { cards, events } from '@cards/proto';
import { freePortsSync } from '../../../test/engines/engine-support';
import { startKafkaSync } from '../../../test/engines/kafka';
import { healthOf, kafkaRetriesRanOut, sigtermWhileKafkaRetries, startServiceProcess, waitFor, type ServiceProcess } from '../../../test/engines/service-process';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { FILE_CHANGES_GROUP } from '../src/application/file-event-subscriptions';
import { testTempDir } from '../../../test/support/cleanup';

const { engine: kafka, skipReason } = engineForSuite('kafka', startKafkaSync);

/** A cards service whose ClearFileReferences waits until released, then refuses (a failure that dead-letters the event). */
async function refusingCards(): Promise<{ address: string; calls: () => number; called: Promise<void>; release(): void; shutdown(): Promise<void> }> {
  let calls = 0;
  let calledNow: () => void = () => undefined;
  const called = new Promise<void>((r) => (calledNow = r));
  let release: () => void = () => undefined;
  const released = new Promise<void>((r) => (release = r));
  const server = createServer();
  const unimplemented = Object.fromEntries(
    Object.keys(cards.CardServiceDefinition.methods).map((name) => [name, async () => Promise.reject(new ServerError(Status.UNIMPLEMENTED, name))]),
  );
  server.add(cards.CardServiceDefinition, {
    ...unimplemented,
    clearFileReferences: async () => {
      calls++;
      calledNow();
      await released;
      throw new ServerError(Status.INVALID_ARGUMENT, 'refused by the test');
    },
  } as never);
  const port = await server.listen('127.0.0.1:0');
  return { address: `127.0.0.1:${port}`, calls: () => calls, called, release, shutdown: () => server.shutdown() };
}

// A file event whose handling fails past INGESTION_MAX_ATTEMPTS goes to the dead letters, published from inside the
// consumer's handling. kafkajs retries a send to a broker that went away for ~15-20 s and cannot be told to stop; a files
// pod being stopped must not wait that out, and the event, not committed, is dead-lettered after the next start.
describeOnEngine('files service stopped while its consumer dead-letters an event to a Kafka broker that went away', skipReason, () => {
  it('SIGTERM ends the process before kafkajs gives up the dead letter, and the next start dead-letters the event', async () => {
    const dataDir = testTempDir('files-kafka-outage-');
    const fileId = randomUUID();
    const cardsService = await refusingCards();
    const [grpcPort, httpPort] = freePortsSync(2) as [number, number];
    const env = {
      DATA_DIR: dataDir,
      KAFKA_BROKERS: kafka!.brokers,
      CARDS_SERVICE_ADDR: cardsService.address,
      INGESTION_MAX_ATTEMPTS: '1',
      FILES_GRPC_HOST: '127.0.0.1',
      FILES_GRPC_PORT: String(grpcPort),
      FILES_HTTP_PORT: String(httpPort),
    };
    const probe = healthOf(`127.0.0.1:${grpcPort}`);
    const bus = new KafkaEventBus({ brokers: [kafka!.brokers], logger: createLogger('files-kafka-test', 'silent') });
    const deadLetters: string[] = [];
    let files: ServiceProcess | undefined;
    let halted = false;
    try {
      files = startServiceProcess('files', env);
      await waitFor('files SERVING', async () => (await probe.status()) === 'SERVING', 120_000, files);
      await bus.publish([{ topic: Topics.file, key: fileId, payload: events.FileEvent.encode({ eventId: randomUUID(), occurredAt: new Date(), kind: { $case: 'deleted', value: { fileId, userId: randomUUID() } } }).finish() }]);

      // The consumer holds the event (the cards service has its call) when the broker goes away; then the call fails.
      await cardsService.called;
      await kafka!.halt();
      halted = true;
      // SIGTERM once kafkajs is retrying toward the dead letter: it has logged a refused attempt since the broker went away.
      const first = files;
      expect(await sigtermWhileKafkaRetries(first, FILE_CHANGES_GROUP, 'kafkajs retrying the dead letter', () => cardsService.release())).toBe('exited 0');
      // The dead letter was cut by the bus's close, not failed by kafkajs once its retries ran out.
      expect(kafkaRetriesRanOut(first.output(), FILE_CHANGES_GROUP)).toBe(false);
      files = undefined;
      await first.stop();

      kafka!.resume();
      halted = false;
      files = startServiceProcess('files', env);
      await bus.subscribe({
        group: `files-kafka-dead-letters-${randomUUID()}`,
        topics: [`${Topics.file}.dlq`],
        handler: async (e) => void deadLetters.push(e.key),
      });
      await waitFor('the event dead-lettered after the restart', () => deadLetters.includes(fileId), 120_000, files);
      expect(cardsService.calls()).toBe(2);
    } finally {
      cardsService.release();
      if (halted) kafka!.resume();
      await files?.stop();
      probe.channel.close();
      await bus.close();
      await cardsService.shutdown();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
});
