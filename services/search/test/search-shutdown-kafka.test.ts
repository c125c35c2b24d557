import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { KafkaEventBus, Topics, createLogger } from '@cards/platform';
import { events } from '@cards/proto';
import { freePortsSync } from '../../../test/engines/engine-support';
import { startKafkaSync } from '../../../test/engines/kafka';
import { healthOf, kafkaRetriesRanOut, sigtermWhileKafkaRetries, startServiceProcess, waitFor, type ServiceProcess } from '../../../test/engines/service-process';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { fakeEmbeddingsEndpoint, searchProcessEnv } from './search-process-support';
import { testTempDir } from '../../../test/support/cleanup';

const { engine: kafka, skipReason } = engineForSuite('kafka', startKafkaSync);

// The search service announces each card it indexed (search.index.v1) from inside its consumer's handler. kafkajs retries
// a send to a broker that went away for ~15-20 s and cannot be told to stop; a search pod being stopped must not wait
// that out, and the card's event, not acknowledged, must be handled and announced again after the next start.
describeOnEngine('search service stopped while its indexing handler publishes to a Kafka broker that went away', skipReason, () => {
  it('SIGTERM ends the process before kafkajs gives up the send, and the next start announces the card', async () => {
    const dataDir = testTempDir('search-kafka-outage-');
    const marker = `held-${randomUUID()}`;
    const cardId = randomUUID();
    const embeddings = await fakeEmbeddingsEndpoint(marker);
    const [grpcPort] = freePortsSync(1) as [number];
    const env = searchProcessEnv(dataDir, kafka!.brokers, embeddings.url, grpcPort);
    const probe = healthOf(`127.0.0.1:${grpcPort}`);
    const cards = new KafkaEventBus({ brokers: [kafka!.brokers], logger: createLogger('search-kafka-test', 'silent') });
    const announced: string[] = [];
    let search: ServiceProcess | undefined;
    let halted = false;
    try {
      search = startServiceProcess('search', env);
      await waitFor('search SERVING', async () => (await probe.status()) === 'SERVING', 120_000, search);
      const snapshot = { id: cardId, authorId: 'author-1', content: `A card whose text is ${marker}.`, tags: [], link: '', private: false, createdAt: new Date(), updatedAt: new Date(), collectionIds: [] };
      await cards.publish([{ topic: Topics.card, key: cardId, payload: events.CardEvent.encode({ eventId: randomUUID(), occurredAt: new Date(), kind: { $case: 'created', value: { card: snapshot } } }).finish() }]);

      // The handler holds the card's event (its embedding is being computed) when the broker goes away.
      await embeddings.held;
      await kafka!.halt();
      halted = true;
      // SIGTERM once kafkajs is retrying the announcement: it has logged a refused attempt since the broker went away.
      const first = search;
      expect(await sigtermWhileKafkaRetries(first, 'search-index', 'kafkajs retrying the announcement', () => embeddings.release())).toBe('exited 0');
      // The announcement was cut by the bus's close, not failed by kafkajs once its retries ran out.
      expect(kafkaRetriesRanOut(first.output(), 'search-index')).toBe(false);
      expect(first.output().split('\n').some((line) => line.includes('handler failed') && line.includes('event bus is closed'))).toBe(true);
      search = undefined;
      await first.stop();

      kafka!.resume();
      halted = false;
      search = startServiceProcess('search', env);
      await cards.subscribe({
        group: `search-kafka-announcements-${randomUUID()}`,
        topics: [Topics.index],
        handler: async (e) => void announced.push(events.CardIndexed.decode(e.payload).cardId),
      });
      await waitFor('the card announced after the restart', () => announced.includes(cardId), 120_000, search);
    } finally {
      embeddings.release();
      if (halted) kafka!.resume();
      await search?.stop();
      probe.channel.close();
      await cards.close();
      embeddings.server.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
});
