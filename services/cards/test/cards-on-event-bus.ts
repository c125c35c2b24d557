import { join } from 'node:path';
import { OutboxRelay, SqliteOutboxStore, type EventBus, type Logger } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { CardService } from '../src/application/card-service';
import { CollectionService } from '../src/application/collection-service';
import { uninvolvedCardServiceDeps } from './uninvolved-deps';

/**
 * The cards and collections services on SQLite (`<dataDir>/cards.db`), their outbox relayed to `bus` as a cards
 * process relays it, with no near-duplicate lookup, file names or join dates (the collections' files service finds every
 * file, public and its caller's own). The relay is not started.
 */
export function cardsOnEventBus(dataDir: string, bus: EventBus, logger: Logger) {
  const db = openCardsDatabase(join(dataDir, 'cards.db'));
  const cards = new SqliteCardRepository(db);
  const collections = new SqliteCollectionRepository(db);
  const relay = new OutboxRelay(new SqliteOutboxStore(db), bus, logger, { name: 'cards', intervalMs: 50 });
  const cardService = new CardService({
    ...uninvolvedCardServiceDeps,
    cards,
    votes: new SqliteVoteRepository(db),
    collections,
    contentLock: new InProcessContentLock(),
    eventsWritten: () => relay.kick(),
    logger,
  });
  // Every file is its caller's own public one, so a file's collection can be made.
  const files = { visibleFile: async (_fileId: string, callerId: string) => ({ name: 'file', private: false, ownerId: callerId }) };
  const collectionService = new CollectionService({ collections, cards, cardService, files, eventsWritten: () => relay.kick() });
  return { db, cards, collections, cardService, collectionService, relay };
}
