import { randomUUID } from 'node:crypto';
import { ServerError, Status } from 'nice-grpc';
import { createGrpcClient, createLogger, isEngineUnavailableError, RetryableUnavailableError, startGrpcServer, type GrpcServerHandle } from '@cards/platform';
import { search } from '@cards/proto';
import { GrpcNearDuplicateFinder } from '../src/adapters/grpc/grpc-near-duplicate-finder';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { CardService, OWED_LOOKUP_DELIVERIES } from '../src/application/card-service';
import { jaccard, NEAR_COPY_JACCARD, shinglesOf } from '../src/domain/rules';

/**
 * A search service over gRPC that restarts: while `state` is 'refusing' it answers UNAVAILABLE (down, or its readiness
 * gate closed), while 'loading' it holds lookups until it is 'up' (loading its index and word vectors, as a restarted
 * all-in-one does), past the finder's deadline. Up, it ranks the cards it indexed with a bag-of-words verdict: the same
 * words in another order are a copy, which only the embedding verdict finds (shingles do not).
 */
function restartingSearch() {
  const bag = (text: string) => text.split(/\W+/).filter(Boolean).sort().join(' ');
  const indexed = new Map<string, string>();
  let up = () => undefined as void;
  const state = {
    now: 'up' as 'up' | 'refusing' | 'loading',
    loaded: Promise.resolve(),
    restart(how: 'refusing' | 'loading') {
      state.now = how;
      state.loaded = new Promise<void>((resolve) => (up = resolve));
    },
    back() {
      state.now = 'up';
      up();
    },
  };
  const unused = async () => {
    throw new Error('not used');
  };
  const methods = Object.fromEntries(Object.keys(search.SearchServiceDefinition.methods).map((name) => [name, unused]));
  const implementation = {
    ...methods,
    async findNearDuplicates(req: search.FindNearDuplicatesRequest) {
      if (state.now === 'refusing') throw new ServerError(Status.UNAVAILABLE, 'not ready');
      await state.loaded;
      const candidates = [...indexed, ...req.unindexed.map((u) => [u.cardId, u.content] as const)].map(([cardId, content]) => {
        const copy = bag(content) === bag(req.content);
        return { cardId, duplicate: copy, cosine: copy ? 0.99 : 0.3 };
      });
      return { candidates };
    },
  } as unknown as search.SearchServiceImplementation;
  return { state, indexed, implementation };
}

/** The same sentences in two orders: one bag of words, shingle Jaccard far under the near-copy bar. */
function paraphrasedPair(): [string, string] {
  const sentences = Array.from({ length: 8 }, () => Array.from({ length: 12 }, () => randomUUID().slice(0, 8).replace(/\d/g, 'q')).join(' ') + '.');
  for (;;) {
    const other = [...sentences].sort(() => Math.random() - 0.5).join(' ');
    if (jaccard(shinglesOf(sentences.join(' ')), shinglesOf(other)) < NEAR_COPY_JACCARD) return [sentences.join(' '), other];
  }
}

let server: GrpcServerHandle;
let searchStub: ReturnType<typeof restartingSearch>;

beforeAll(async () => {
  searchStub = restartingSearch();
  server = await startGrpcServer({ name: 'search-stub', logger: createLogger('test', 'silent'), register: (s) => s.add(search.SearchServiceDefinition, searchStub.implementation) });
});

afterAll(async () => {
  searchStub.state.back();
  await server.shutdown();
});

/** The cards service on a real SQLite store asking the stub over gRPC, as main.ts wires it (a short deadline). */
function cardsService() {
  const db = openCardsDatabase(':memory:');
  const cards = new SqliteCardRepository(db);
  const { client, channel } = createGrpcClient(search.SearchServiceDefinition, server.address);
  const service = new CardService({
    cards,
    votes: new SqliteVoteRepository(db),
    collections: new SqliteCollectionRepository(db),
    contentLock: new InProcessContentLock(),
    nearDuplicates: new GrpcNearDuplicateFinder(client, createLogger('test', 'silent'), 300),
    files: { visibleFile: async () => ({ name: 'book.docx', private: false, ownerId: 'bob' }) },
    users: { joinDates: async () => new Map() },
    eventsWritten: () => undefined,
    logger: createLogger('cards-test', 'silent'),
  });
  return { service, cards, close: () => channel.close() };
}

const create = (service: CardService, callerId: string, content: string, extra: object = {}) =>
  service.createCard({ callerId, cardHtml: `<p>${content}</p>`, link: '', private: false, tags: [], ...extra });

describe('cards made while the search service cannot answer the near-duplicate lookup', () => {
  it('a copy by the embedding verdict alone is a collision at once while search answers', async () => {
    const { service, close } = cardsService();
    try {
      const [original, paraphrase] = paraphrasedPair();
      const root = await create(service, 'alice', original);
      searchStub.indexed.set(root.card.id, original);
      const copy = await create(service, 'bob', paraphrase);
      expect(copy.card.collisionOf).toBe(root.card.id);
    } finally {
      searchStub.indexed.clear();
      close();
    }
  });

  it.each([
    ['answers UNAVAILABLE (down, not ready)', 'refusing' as const],
    ['does not answer within the deadline (loading its index after a restart)', 'loading' as const],
  ])('owe the lookup while search %s, and become the collision of their copy once search is back and announces them', async (_, how) => {
    const { service, cards, close } = cardsService();
    try {
      const [original, paraphrase] = paraphrasedPair();
      const root = await create(service, 'alice', original);
      searchStub.indexed.set(root.card.id, original);

      // The system restarts; ingestion resumes before search answers and makes a card of an uploaded passage.
      searchStub.state.restart(how);
      const made = await create(service, 'bob', paraphrase, { fileId: randomUUID(), idempotencyKey: 'file-1:0', privacyFromFile: true });
      expect(made.card.collisionOf).toBeNull();
      expect(await cards.findWithLookAgainOwed(made.card.id)).not.toBeNull();
      // Ingestion's retry of the passage (its key) while search still cannot answer: the same card, still owing.
      expect((await create(service, 'bob', paraphrase, { idempotencyKey: 'file-1:0' })).card.id).toBe(made.card.id);
      expect(await cards.findWithLookAgainOwed(made.card.id)).not.toBeNull();

      // Search is back, indexes the new card from its event and announces it.
      searchStub.state.back();
      searchStub.indexed.set(made.card.id, paraphrase);
      await service.recordIndexed(made.card.id, `vp-${made.card.id}`);
      expect((await cards.findById(made.card.id))?.collisionOf).toBe(root.card.id);
      expect(await cards.findWithLookAgainOwed(made.card.id)).toBeNull();
      const groups = await service.getCardGroups([root.card.id], undefined);
      expect(groups.map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([[root.card.id, [made.card.id]]]);
    } finally {
      searchStub.state.back();
      searchStub.indexed.clear();
      close();
    }
  });

  it('an announcement of an owing card that search still cannot look up is delivered again, never dead-lettered; at last the card stays a root', async () => {
    const { service, cards, close } = cardsService();
    try {
      const [original, paraphrase] = paraphrasedPair();
      const root = await create(service, 'alice', original);
      searchStub.indexed.set(root.card.id, original);
      searchStub.state.restart('refusing');
      const made = await create(service, 'bob', paraphrase);
      searchStub.indexed.set(made.card.id, paraphrase);

      const failed = await service.recordIndexed(made.card.id, 'vp-1').catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(RetryableUnavailableError);
      // The bus retries an event whose handler failed so without counting the attempt (an outage never dead-letters).
      expect(isEngineUnavailableError(failed)).toBe(true);
      expect(await cards.findWithLookAgainOwed(made.card.id)).not.toBeNull();
      expect((await cards.findById(made.card.id))?.vectorPointId).toBe('vp-1');

      await expect(service.recordIndexed(made.card.id, 'vp-1', OWED_LOOKUP_DELIVERIES - 1)).resolves.toBeUndefined();
      expect(await cards.findWithLookAgainOwed(made.card.id)).toBeNull();
      expect((await cards.findById(made.card.id))?.collisionOf).toBeNull();
    } finally {
      searchStub.state.back();
      searchStub.indexed.clear();
      close();
    }
  });
});
