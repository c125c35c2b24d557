import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createEventBus, createLogger, Topics, type EventBus, type Subscription } from '@cards/platform';
import { events } from '@cards/proto';
import { cardsOnEventBus } from '../../services/cards/test/cards-on-event-bus';
import { SqliteCardIndex } from '../../services/search/src/adapters/sqlite/sqlite-card-index';
import { IndexProjector } from '../../services/search/src/application/index-projector';
import { SearchService } from '../../services/search/src/application/search-service';
import type { Embedder } from '../../services/search/src/domain/ports';
import { startKafkaSync } from './kafka';
import { describeOnEngine, engineForSuite } from './suite';
import { testTempDir } from '../support/cleanup';

// A card in tens of thousands of collections: its events must still reach search, on Kafka (whose broker refuses a
// message over message.max.bytes, 1 MB by default) and on the embedded event log alike.

const logger = createLogger('popular-card-events-test', process.env.LOG_LEVEL ?? 'fatal');
const { engine: kafka, skipReason } = engineForSuite('kafka', startKafkaSync);

/** Kafka's default message.max.bytes: the largest record batch a broker accepts. */
const KAFKA_DEFAULT_MESSAGE_MAX_BYTES = 1_048_588;
const COLLECTIONS = 27_000;

/** Words hashed onto a few axes: enough for the index, no model to load. */
const hashingEmbedder: Embedder = {
  id: 'test-hashing',
  dimensions: 8,
  orderAware: false,
  ready: async () => undefined,
  duplicateThreshold: () => 0.99,
  embed: async (texts) =>
    texts.map((text) => {
      const v = new Float32Array(8);
      for (const word of text.toLowerCase().split(/\s+/u)) if (word) v[createHash('sha1').update(word).digest()[0]! % 8]! += 1;
      const norm = Math.hypot(...v);
      return norm === 0 ? v : v.map((x) => x / norm);
    }),
};

/** The cards service (SQLite, outbox relayed to the bus) and the search index fed from the bus, as one system runs them. */
async function startSystem(dir: string, bus: EventBus) {
  const { db, cardService, collectionService, relay } = cardsOnEventBus(dir, bus, logger);
  const index = new SqliteCardIndex({ path: join(dir, 'index.db'), dimensions: hashingEmbedder.dimensions, embedderId: hashingEmbedder.id });
  const projector = new IndexProjector(index, hashingEmbedder, bus, logger);
  const indexing: Subscription = await bus.subscribe({
    group: 'search-index',
    topics: [Topics.card, Topics.bookmark],
    handler: (event) => projector.handle(event),
    batchHandler: (batch) => projector.handleBatch(batch),
  });
  relay.start();
  const search = new SearchService(index, hashingEmbedder);
  return {
    cardService,
    collectionService,
    /** Card ids a full-text search finds, optionally within one collection. */
    async found(query: string, collectionId?: string): Promise<string[]> {
      const result = await search.fullTextSearch({ query, tags: [], links: [], page: 1, pageSize: 25, ...(collectionId ? { collectionId } : {}) });
      return result.hits.map((h) => h.cardId);
    },
    async stop() {
      await relay.stop();
      await indexing.close();
      await index.close();
      db.close();
    },
  };
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`search never showed ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The text of a card near the size limit (28,000 of 29,000 characters) starting with these words. */
function longText(start: string): string {
  return `${start} ${Array.from({ length: 4_000 }, (_, i) => `word${i % 97}`).join(' ')}`.slice(0, 28_000);
}

function describeOnBus(name: string, skip: string | undefined, openBus: (dir: string) => EventBus) {
  describeOnEngine(`A card in ${COLLECTIONS.toLocaleString('en')} collections, on ${name}`, skip, () => {
    let dir: string;
    let bus: EventBus;
    let sys: Awaited<ReturnType<typeof startSystem>>;
    beforeEach(async () => {
      dir = testTempDir('popular-card-');
      bus = openBus(dir);
      sys = await startSystem(dir, bus);
    });
    afterEach(async () => {
      await sys.stop();
      await bus.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('has its edit and its deletion reach search, and no later event waits behind them', async () => {
      const owner = 'author-1';
      const { card } = await sys.cardService.createCard({ callerId: owner, cardHtml: `<p>${longText('glacier moraine').slice(0, 2_000)}</p>`, link: '', private: false, tags: ['ice'] });
      const collections: string[] = [];
      for (let i = 0; i < COLLECTIONS; i++) {
        const collection = await sys.collectionService.create(`reader-${i}`, 'Kept', '', true);
        await sys.collectionService.addBookmark(`reader-${i}`, collection.id, card.id);
        collections.push(collection.id);
      }
      await until('the card in its last collection', async () => (await sys.found('glacier moraine', collections[COLLECTIONS - 1])).includes(card.id));

      // The card edited to its longest text: with the whole list of its collections, its event would not fit in one Kafka message.
      const edited = { content: longText('zanzibar quokka'), link: `https://example.org/${'a'.repeat(2_000)}` };
      const listed = events.CardEvent.encode({
        eventId: card.id,
        occurredAt: new Date(),
        kind: { $case: 'updated', value: { card: { id: card.id, authorId: owner, ...edited, tags: card.tags, private: false, collectionIds: collections }, contentChanged: true, linkChanged: true, privacyChanged: false } },
      }).finish();
      expect(listed.byteLength).toBeGreaterThan(KAFKA_DEFAULT_MESSAGE_MAX_BYTES);
      await sys.cardService.updateCard({ callerId: owner, cardId: card.id, cardHtml: `<p>${edited.content}</p>`, link: edited.link });
      await until('the edited card in its first and last collections', async () =>
        (await sys.found('zanzibar quokka', collections[0])).includes(card.id) && (await sys.found('zanzibar quokka', collections[COLLECTIONS - 1])).includes(card.id),
      );
      expect(await sys.found('glacier moraine')).toEqual([]);
      const { card: later } = await sys.cardService.createCard({ callerId: 'author-2', cardHtml: `<p>perseverance rover ${Array.from({ length: 80 }, (_, i) => `w${i}`).join(' ')}</p>`, link: '', private: false, tags: [] });
      await until('a card made after the edit', async () => (await sys.found('perseverance rover')).includes(later.id));

      await sys.cardService.deleteCard(owner, card.id);
      await until('the card gone', async () => (await sys.found('zanzibar quokka')).length === 0 && (await sys.found('zanzibar quokka', collections[0])).length === 0);
    }, 900_000);
  });
}

describeOnBus('the embedded event log', undefined, (dir) => createEventBus({ DATA_DIR: dir }, logger));
describeOnBus('Kafka', skipReason, (dir) =>
  createEventBus({ DATA_DIR: dir, KAFKA_BROKERS: kafka!.brokers, KAFKA_NAMESPACE: `popular-${randomBytes(4).toString('hex')}` }, logger),
);
