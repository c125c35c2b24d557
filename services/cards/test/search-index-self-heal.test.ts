import { ServerError, Status } from 'nice-grpc';
import { createGrpcClient, createLogger, SqliteOutboxStore, startGrpcServer, UnavailableError, type GrpcServerHandle, type Logger } from '@cards/platform';
import { search } from '@cards/proto';
import { GrpcSearchIndexStats } from '../src/adapters/grpc/grpc-search-index-stats';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteEventOutbox } from '../src/adapters/sqlite/sqlite-event-outbox';
import { rebuildSearchIndexIfEmpty } from '../src/application/search-index-republisher';
import type { SearchIndexStats } from '../src/domain/ports';
import { fingerprintOf } from '../src/domain/rules';
import { aCard } from './builders';

/**
 * The cards service's check at start that the search index was not lost (services/cards/src/main.ts): an index of 0
 * cards while the store holds some is rebuilt through the outbox; a search service without IndexStats (an older
 * version) is not checked, quietly.
 */

const silent = createLogger('test', 'silent');

function recordingLogger(): { logger: Logger; lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  const record = (level: string) => (a: unknown, b?: unknown) => lines.push({ level, msg: String(typeof a === 'string' ? a : b) });
  const logger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error'), fatal: record('fatal'), trace: record('trace') } as unknown as Logger;
  (logger as unknown as { child: () => Logger }).child = () => logger;
  return { logger, lines };
}

describe('GrpcSearchIndexStats', () => {
  let current: GrpcServerHandle;
  let older: GrpcServerHandle;
  const answer = { now: 'count' as 'count' | 'unavailable' | 'internal', cards: 7 };

  beforeAll(async () => {
    const unused = async () => {
      throw new Error('not used');
    };
    const methods = Object.fromEntries(Object.keys(search.SearchServiceDefinition.methods).map((name) => [name, unused]));
    current = await startGrpcServer({
      name: 'search-stub',
      logger: silent,
      register: (s) =>
        s.add(search.SearchServiceDefinition, {
          ...methods,
          async indexStats() {
            if (answer.now === 'unavailable') throw new ServerError(Status.UNAVAILABLE, 'not ready');
            if (answer.now === 'internal') throw new ServerError(Status.INTERNAL, 'broken');
            return { cards: answer.cards };
          },
        } as unknown as search.SearchServiceImplementation),
    });
    // A search service from before IndexStats: its definition has no such method, so the server answers UNIMPLEMENTED.
    const { indexStats: _, ...olderMethods } = search.SearchServiceDefinition.methods;
    const olderDefinition = { ...search.SearchServiceDefinition, methods: olderMethods };
    const { indexStats: __, ...olderImplementation } = methods;
    older = await startGrpcServer({ name: 'older-search-stub', logger: silent, register: (s) => s.add(olderDefinition, olderImplementation as never) });
  });

  afterAll(async () => {
    await current.shutdown();
    await older.shutdown();
  });

  it("answers the index's card count; UnavailableError while search cannot answer; other failures as they are", async () => {
    const { client, channel } = createGrpcClient(search.SearchServiceDefinition, current.address);
    try {
      const stats = new GrpcSearchIndexStats(client, silent);
      answer.now = 'count';
      await expect(stats.cardCount()).resolves.toBe(7);
      answer.now = 'unavailable';
      await expect(stats.cardCount()).rejects.toBeInstanceOf(UnavailableError);
      answer.now = 'internal';
      await expect(stats.cardCount()).rejects.toThrow(/broken/);
    } finally {
      channel.close();
    }
  });

  it('answers null, with a debug line only, when search has no IndexStats (UNIMPLEMENTED: an older version)', async () => {
    const { client, channel } = createGrpcClient(search.SearchServiceDefinition, older.address);
    try {
      const { logger, lines } = recordingLogger();
      await expect(new GrpcSearchIndexStats(client, logger).cardCount()).resolves.toBeNull();
      expect(lines.map((l) => l.level)).toEqual(['debug']);
    } finally {
      channel.close();
    }
  });
});

describe('rebuildSearchIndexIfEmpty', () => {
  const open = async (cards: number) => {
    const db = openCardsDatabase(':memory:');
    const repository = new SqliteCardRepository(db);
    for (let i = 0; i < cards; i++) {
      const card = aCard().build();
      await repository.insert(card, fingerprintOf(card.content), []);
    }
    return { db, cards: repository, collections: new SqliteCollectionRepository(db), outbox: new SqliteEventOutbox(db), relayView: new SqliteOutboxStore(db) };
  };
  const run = async (store: Awaited<ReturnType<typeof open>>, searchIndex: SearchIndexStats, logger: Logger = silent) =>
    rebuildSearchIndexIfEmpty({ searchIndex, cards: store.cards, collections: store.collections, outbox: store.outbox, batchSize: 2, maxPending: 10_000, logger });
  const holding = (count: number | null): SearchIndexStats => ({ cardCount: async () => count });

  it('rebuilds an index of 0 cards while the store holds some: every card queued, with a warning', async () => {
    const store = await open(5);
    try {
      const { logger, lines } = recordingLogger();
      await expect(run(store, holding(0), logger)).resolves.toEqual({ cards: 5, bookmarks: 0, cardsAtStart: 5 });
      expect(await store.relayView.count()).toBe(5);
      expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([expect.stringMatching(/search index holds no card/)]);
    } finally {
      store.db.close();
    }
  });

  it('leaves alone an index holding some cards (a partial index is not guessed at), an empty store, and a search that cannot tell', async () => {
    const store = await open(5);
    const empty = await open(0);
    try {
      await expect(run(store, holding(1))).resolves.toBeUndefined();
      await expect(run(empty, holding(0))).resolves.toBeUndefined();
      await expect(run(store, holding(null))).resolves.toBeUndefined();
      expect(await store.relayView.count()).toBe(0);
      expect(await empty.relayView.count()).toBe(0);
    } finally {
      store.db.close();
      empty.db.close();
    }
  });

  it('skips the check quietly when search is an older version without IndexStats', async () => {
    const store = await open(3);
    try {
      const { logger, lines } = recordingLogger();
      const unimplemented = async () => {
        throw new ServerError(Status.UNIMPLEMENTED, 'Method not found');
      };
      const server = await startGrpcServer({
        name: 'older-search',
        logger: silent,
        register: (s) => s.add(search.SearchServiceDefinition, Object.fromEntries(Object.keys(search.SearchServiceDefinition.methods).map((n) => [n, unimplemented])) as unknown as search.SearchServiceImplementation),
      });
      const { client, channel } = createGrpcClient(search.SearchServiceDefinition, server.address);
      try {
        await expect(run(store, new GrpcSearchIndexStats(client, logger), logger)).resolves.toBeUndefined();
      } finally {
        channel.close();
        await server.shutdown();
      }
      expect(await store.relayView.count()).toBe(0);
      expect(lines.map((l) => l.level)).toEqual(['debug']);
    } finally {
      store.db.close();
    }
  });
});
