import { randomBytes } from 'node:crypto';
import { ChangedSinceReadError, connectMongo, createLogger, type MongoConnection } from '@cards/platform';
import { openMongoCardsStore } from '../src/adapters/mongo';
import { CardService } from '../src/application/card-service';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { someContent } from './builders';
import { uninvolvedCardServiceDeps } from './uninvolved-deps';

const logger = createLogger('cards-replicas-test', process.env.LOG_LEVEL ?? 'fatal');
// TEST_MONGO_URL points the suite at a real MongoDB; otherwise the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

/** A cards process: its own connection to the shared database and its own CardService, wired as main.ts wires them. */
async function replica(url: string, database: string): Promise<{ service: CardService; connection: MongoConnection }> {
  const connection = await connectMongo({ url, database, logger });
  const store = await openMongoCardsStore(connection);
  const service = new CardService({
    ...uninvolvedCardServiceDeps,
    cards: store.cards,
    votes: store.votes,
    collections: store.collections,
    contentLock: store.contentLock,
    eventsWritten: () => undefined,
    logger,
  });
  return { service, connection };
}

if (skipReason) {
  console.warn(`SKIPPED cards service replicas on MongoDB: ${skipReason}`);
  it.skip(`cards service replicas on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describe('two cards service replicas on one MongoDB database', () => {
    const database = `cards_test_${randomBytes(4).toString('hex')}`;
    let replicas: Awaited<ReturnType<typeof replica>>[] = [];
    beforeAll(async () => {
      replicas = [await replica(engine!.url, database), await replica(engine!.url, database)];
    });
    afterAll(async () => {
      await replicas[0]?.connection.db.dropDatabase().catch(() => undefined);
      for (const r of replicas) await r.connection.close();
    });

    it('store two cards of the same text created at the same moment as one root and a collision of it', async () => {
      for (let round = 0; round < 5; round++) {
        const text = someContent();
        const made = await Promise.all(
          replicas.map((r, i) => r.service.createCard({ callerId: `user-${i}`, cardHtml: `<p>${text}</p>`, link: '', private: false, tags: [] })),
        );
        const roots = made.filter((m) => !m.duplicate);
        expect(roots).toHaveLength(1);
        const collision = made.find((m) => m.duplicate)!;
        expect(collision.card.collisionOf).toBe(roots[0]!.card.id);
        const stored = await replicas[0]!.service.getCard(collision.card.id, undefined);
        expect(stored.collisionOf).toBe(roots[0]!.card.id);
      }
    });

    it('store near copies (not the same text) created at the same moment on both replicas as one root, the earliest, and collisions of it', async () => {
      for (let round = 0; round < 3; round++) {
        const text = someContent();
        const made = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            replicas[i % 2]!.service.createCard({ callerId: `user-${i}`, cardHtml: `<p>${text} variant${i}</p>`, link: '', private: false, tags: [] }),
          ),
        );
        const stored = await Promise.all(made.map((m) => replicas[0]!.service.getCard(m.card.id, undefined)));
        const roots = stored.filter((c) => c.collisionOf === null);
        expect(roots).toHaveLength(1);
        const earliest = [...stored].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1))[0]!;
        expect(roots[0]!.id).toBe(earliest.id);
        for (const c of stored) if (c.id !== earliest.id) expect(c.collisionOf).toBe(earliest.id);
      }
    });

    it("answer an update's version as MongoDB stored it: the other replica reads it and writes the next update on it, and refuses a stale one", async () => {
      const [one, other] = replicas as [Awaited<ReturnType<typeof replica>>, Awaited<ReturnType<typeof replica>>];
      const { card } = await one.service.createCard({ callerId: 'editor', cardHtml: `<p>${someContent()}</p>`, link: '', private: false, tags: [] });
      const first = await one.service.updateCard({ callerId: 'editor', cardId: card.id, link: 'https://example.com/first', ifUpdatedAt: card.updatedAt });
      expect((await other.service.getCard(card.id, 'editor')).updatedAt.getTime()).toBe(first.getTime());
      const second = await other.service.updateCard({ callerId: 'editor', cardId: card.id, private: true, ifUpdatedAt: first });
      expect(second.getTime()).toBeGreaterThan(first.getTime());
      await expect(one.service.updateCard({ callerId: 'editor', cardId: card.id, link: 'https://example.com/stale', ifUpdatedAt: first })).rejects.toThrow(ChangedSinceReadError);
      const stored = await one.service.getCard(card.id, 'editor');
      expect([stored.link, stored.private, stored.updatedAt.getTime()]).toEqual(['https://example.com/first', true, second.getTime()]);
    });
  });
}
