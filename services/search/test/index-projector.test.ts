import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, SqliteEventLog, Topics, type DeliveredEvent } from '@cards/platform';
import { events } from '@cards/proto';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import { IndexProjector } from '../src/application/index-projector';
import { SearchService } from '../src/application/search-service';
import { LABELLED_CARDS } from './fixtures/labelled-cards';
import { sharedWinkEmbedder } from './shared-model';
import { testTempDir } from '../../../test/support/cleanup';

const logger = createLogger('test', 'silent');
const t = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));

function snapshot(overrides: Partial<events.CardSnapshot> = {}): events.CardSnapshot {
  return {
    id: randomUUID(),
    authorId: randomUUID(),
    content: LABELLED_CARDS[0]!.content,
    tags: [],
    link: '',
    private: false,
    createdAt: t(0),
    updatedAt: t(0),
    collectionIds: [],
    ...overrides,
  };
}

const cardEvent = (kind: events.CardEvent['kind'], minute = 0) => ({
  topic: Topics.card,
  payload: events.CardEvent.encode({ eventId: randomUUID(), occurredAt: t(minute), kind }).finish(),
});
const created = (card: events.CardSnapshot) => cardEvent({ $case: 'created', value: { card } });
const updated = (card: events.CardSnapshot, changes: Partial<events.CardUpdated> = {}) =>
  cardEvent({ $case: 'updated', value: { card, contentChanged: false, linkChanged: false, privacyChanged: false, ...changes } });
const deleted = (card: events.CardSnapshot, promotedCardId?: string, minute = 5) =>
  cardEvent({ $case: 'deleted', value: { cardId: card.id, authorId: card.authorId, promotedCardId } }, minute);
const bookmark = (collectionId: string, cardId: string, added: boolean, minute: number) => ({
  topic: Topics.bookmark,
  payload: events.BookmarkEvent.encode({ eventId: randomUUID(), occurredAt: t(minute), collectionId, cardId, added }).finish(),
});

describe('IndexProjector', () => {
  let dir: string;
  let bus: SqliteEventLog;
  let index: SqliteCardIndex;
  let projector: IndexProjector;
  let service: SearchService;
  let announced: events.CardIndexed[];

  beforeEach(async () => {
    dir = testTempDir('search-projector-');
    bus = new SqliteEventLog({ path: join(dir, 'events.db'), logger, pollIntervalMs: 20 });
    index = new SqliteCardIndex({ path: join(dir, 'index.db'), dimensions: 100 });
    projector = new IndexProjector(index, sharedWinkEmbedder(), bus, logger);
    service = new SearchService(index, sharedWinkEmbedder());
    announced = [];
    await bus.subscribe({
      group: 'test-observer',
      topics: [Topics.index],
      handler: async (e: DeliveredEvent) => void announced.push(events.CardIndexed.decode(e.payload)),
    });
  });
  afterEach(async () => {
    await bus.close();
    await index.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const waitForAnnouncements = async (count: number) => {
    for (let i = 0; i < 200 && announced.length < count; i++) await new Promise((r) => setTimeout(r, 20));
    return announced;
  };
  const search = (query: string, callerId?: string, collectionId?: string) =>
    service.semanticSearch({ query, tags: [], links: [], page: 1, pageSize: 25, ...(callerId ? { callerId } : {}), ...(collectionId ? { collectionId } : {}) });

  test('indexes a created root card, announces it with a stable vector point id, and replays change nothing', async () => {
    const card = snapshot();
    const event = created(card);
    await projector.handle(event);
    await projector.handle(event);
    await projector.handle(updated({ ...card, updatedAt: t(1), content: LABELLED_CARDS[1]!.content }, { contentChanged: true }));
    expect(await index.count()).toBe(1);
    // The snapshot's created_at is kept (it orders equal scores), through the edit too.
    expect((await index.get(card.id))!.createdAt).toEqual(t(0));
    const seen = await waitForAnnouncements(3);
    expect(seen.map((a) => a.cardId)).toEqual([card.id, card.id, card.id]);
    expect(new Set(seen.map((a) => a.vectorPointId)).size).toBe(1);
    const result = await search(LABELLED_CARDS[1]!.paraphrase);
    expect(result.hits[0]!.cardId).toBe(card.id);
    expect(result.hits[0]!.score).toBeGreaterThan(0.3);
  });

  test('privacy changes apply: a card made private leaves other users\' results', async () => {
    const card = snapshot();
    await projector.handle(created(card));
    expect((await search('espresso grind')).totalHits).toBe(1);
    await projector.handle(updated({ ...card, private: true, updatedAt: t(2) }, { privacyChanged: true }));
    expect((await search('espresso grind')).totalHits).toBe(0);
    expect((await search('espresso grind', randomUUID())).totalHits).toBe(0);
    expect((await search('espresso grind', card.authorId)).totalHits).toBe(1);
  });

  test('collisions are not indexed on their own; deleting the root promotes the collision', async () => {
    const root = snapshot();
    const collision = snapshot({ content: `${root.content} Again.`, collisionOf: root.id });
    await projector.handle(created(root));
    await projector.handle(created(collision));
    expect((await search('espresso')).hits.map((h) => h.cardId)).toEqual([root.id]);
    await projector.handle(deleted(root, collision.id));
    expect((await search('espresso')).hits.map((h) => h.cardId)).toEqual([collision.id]);
    const seen = await waitForAnnouncements(2);
    expect(seen.map((a) => a.cardId)).toEqual([root.id, collision.id]);
    // A late replay of the root's creation does not bring it back.
    await projector.handle(created(root));
    expect((await search('espresso')).hits.map((h) => h.cardId)).toEqual([collision.id]);
  });

  test('bookmark events scope collection searches; the list of collections a card event may carry is not read', async () => {
    const collection = randomUUID();
    const elsewhere = randomUUID();
    const a = snapshot();
    const b = snapshot({ content: LABELLED_CARDS[3]!.content });
    await projector.handle(bookmark(collection, a.id, true, 1));
    await projector.handle(created(a));
    await projector.handle(created(b));
    await projector.handle(bookmark(collection, b.id, true, 3));
    const inCollection = async (id = collection) => (await search('rover', undefined, id)).hits.map((h) => h.cardId).sort();
    expect(await inCollection()).toEqual([a.id, b.id].sort());
    // Edits whose events list no collections (a card in over 1,000 of them) or others (an older cards service) change no membership.
    await projector.handle(updated({ ...a, updatedAt: t(5), content: LABELLED_CARDS[1]!.content }, { contentChanged: true }));
    await projector.handle(updated({ ...b, updatedAt: t(5), collectionIds: [elsewhere] }, { linkChanged: true }));
    expect(await inCollection()).toEqual([a.id, b.id].sort());
    expect(await inCollection(elsewhere)).toEqual([]);
    await projector.handle(bookmark(collection, a.id, false, 6));
    expect(await inCollection()).toEqual([b.id]);
  });

  test('a run of events (handleBatch) ends as the same events one by one: per-card order kept, roots announced once applied', async () => {
    const collection = randomUUID();
    const root = snapshot();
    const collision = snapshot({ content: `${root.content} Again.`, collisionOf: root.id });
    const other = snapshot({ content: LABELLED_CARDS[3]!.content });
    const edited = snapshot({ content: LABELLED_CARDS[4]!.content });
    const run = [
      created(root),
      created(collision),
      created(other),
      created(edited),
      bookmark(collection, other.id, true, 3),
      updated({ ...edited, updatedAt: t(2), content: LABELLED_CARDS[1]!.content }, { contentChanged: true }),
      deleted(root, collision.id),
      bookmark(collection, other.id, false, 4),
      bookmark(collection, edited.id, true, 5),
    ];
    await projector.handleBatch(run);
    const espresso = (await search('espresso')).hits.map((h) => h.cardId);
    expect(espresso[0]).toBe(collision.id);
    expect(espresso).not.toContain(root.id);
    expect((await search(LABELLED_CARDS[1]!.paraphrase)).hits[0]!.cardId).toBe(edited.id);
    expect((await search('rover', undefined, collection)).hits.map((h) => h.cardId)).toEqual([edited.id]);
    expect(await index.count()).toBe(3);
    // Announced after the run: the cards it left as roots, each once (the removed root is not announced).
    const seen = await waitForAnnouncements(3);
    expect(seen.map((a) => a.cardId).sort()).toEqual([collision.id, other.id, edited.id].sort());
    // Replaying the whole run changes nothing.
    await projector.handleBatch(run);
    expect(await index.count()).toBe(3);
    expect((await search('rover', undefined, collection)).hits.map((h) => h.cardId)).toEqual([edited.id]);
  });

  test('near duplicates: a near copy is flagged, a distinct card on the same topic is not, private cards of others are not offered', async () => {
    const card = snapshot();
    const secret = snapshot({ content: LABELLED_CARDS[2]!.content, private: true });
    await projector.handle(created(card));
    await projector.handle(created(secret));
    const copy = await service.findNearDuplicates(`${card.content} Worth remembering.`, randomUUID(), 3);
    expect(copy[0]).toMatchObject({ cardId: card.id, duplicate: true });
    const related = await service.findNearDuplicates(LABELLED_CARDS[1]!.content, randomUUID(), 3);
    expect(related.map((c) => c.cardId)).toEqual([card.id]);
    expect(related[0]!.duplicate).toBe(false);
    const own = await service.findNearDuplicates(LABELLED_CARDS[2]!.content, secret.authorId, 3);
    expect(own[0]).toMatchObject({ cardId: secret.id, duplicate: true });
  });
});
