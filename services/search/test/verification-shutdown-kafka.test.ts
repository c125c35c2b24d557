import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { KafkaEventBus, Topics, createLogger, openSqlite } from '@cards/platform';
import { events } from '@cards/proto';
import { freePortsSync } from '../../../test/engines/engine-support';
import { startKafkaSync } from '../../../test/engines/kafka';
import { healthOf, kafkaRetriesRanOut, sigtermWhileKafkaRetries, startServiceProcess, waitFor, type ServiceProcess } from '../../../test/engines/service-process';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { fakeEmbeddingsEndpoint, searchProcessEnv } from './search-process-support';
import { testTempDir } from '../../../test/support/cleanup';

const { engine: kafka, skipReason } = engineForSuite('kafka', startKafkaSync);

// The verification worker's consumer dead-letters a card event whose handler failed its last attempt. With the brokers
// gone that send waits out kafkajs' retries; a search pod being stopped must not wait that out (its event, not
// committed, is handled again after the next start). The handler is made to fail by a trigger put on the queue's table
// from here, refusing each enqueue (a store held locked would not do: a busy store is waited out uncounted, never
// dead-lettered, see isStoreBusyError).
describeOnEngine('search stopped while its verification consumer dead-letters to a Kafka broker that went away', skipReason, () => {
  it('SIGTERM ends the process before kafkajs gives up the dead letter', async () => {
    const dataDir = testTempDir('verification-dlq-outage-');
    const cardId = randomUUID();
    const embeddings = await fakeEmbeddingsEndpoint();
    const [grpcPort] = freePortsSync(1) as [number];
    const env = searchProcessEnv(dataDir, kafka!.brokers, embeddings.url, grpcPort);
    const probe = healthOf(`127.0.0.1:${grpcPort}`);
    const cards = new KafkaEventBus({ brokers: [kafka!.brokers], logger: createLogger('verification-dlq-test', 'silent') });
    const announced: string[] = [];
    let search: ServiceProcess | undefined;
    let halted = false;
    let queue: ReturnType<typeof openSqlite> | undefined;
    let refusing = false;
    const unlock = () => {
      if (refusing) queue?.exec('DROP TRIGGER refuse_enqueue');
      refusing = false;
    };
    try {
      search = startServiceProcess('search', env);
      await waitFor('search SERVING', async () => (await probe.status()) === 'SERVING', 120_000, search);
      await cards.subscribe({
        group: `verification-dlq-announcements-${randomUUID()}`,
        topics: [Topics.index],
        handler: async (e) => void announced.push(events.CardIndexed.decode(e.payload).cardId),
      });
      queue = openSqlite(join(dataDir, 'search', 'verification.db'));
      queue.exec("CREATE TRIGGER refuse_enqueue BEFORE INSERT ON verification_jobs BEGIN SELECT RAISE(ABORT, 'the test refuses this enqueue'); END");
      refusing = true;
      const snapshot = { id: cardId, authorId: 'author-1', content: 'A card with a link to verify.', tags: [], link: 'https://example.com/page', private: false, createdAt: new Date(), updatedAt: new Date(), collectionIds: [] };
      await cards.publish([{ topic: Topics.card, key: cardId, payload: events.CardEvent.encode({ eventId: randomUUID(), occurredAt: new Date(), kind: { $case: 'created', value: { card: snapshot } } }).finish() }]);

      const first = search;
      // The indexing handler's announcement of the card is sent while the broker is up, so only the dead letter meets the outage.
      await waitFor('the card announced', () => announced.includes(cardId), 120_000, first);
      const handlerFailures = () => first.output().split('\n').filter((line) => line.includes('event handler failed') && line.includes('search-verification'));
      await waitFor('the verification handler failing a seventh time', () => handlerFailures().length >= 7, 240_000, first);
      await kafka!.halt();
      halted = true;
      // Its eighth failure is its last: the bus now sends the event to card.v1.dlq, retrying against brokers that are down.
      await waitFor('the last attempt failing', () => handlerFailures().length >= 8, 60_000, first);
      expect(kafkaRetriesRanOut(first.output(), 'search-verification')).toBe(false);
      expect(await sigtermWhileKafkaRetries(first, 'search-verification', 'kafkajs retrying the dead letter', unlock)).toBe('exited 0');
      expect(kafkaRetriesRanOut(first.output(), 'search-verification')).toBe(false);
      search = undefined;
      await first.stop();
    } finally {
      unlock();
      queue?.close();
      if (halted) kafka!.resume();
      await search?.stop();
      probe.channel.close();
      await cards.close();
      embeddings.server.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 420_000);
});
