import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { MAX_CONTENT_CHARS, MAX_LINK_CHARS, MAX_TAG_CHARS, MAX_TAGS } from '@cards/card-rules';
import { createEventBus, createLogger, eventBytes, MAX_EVENT_BYTES, newId, Topics, type EventBus } from '@cards/platform';
import { events } from '@cards/proto';
import { subscribeToSearchEvents } from '../src/application/event-consumers';
import { cardUpdated, MAX_LISTED_COLLECTIONS } from '../src/application/events';
import type { Card } from '../src/domain/model';
import { aCard, someContent } from './builders';
import { cardsOnEventBus } from './cards-on-event-bus';
import { testTempDir } from '../../../test/support/cleanup';

const logger = createLogger('cards-events-test', 'silent');

/** Cards and collections on SQLite, relaying their outbox to the embedded event log. */
function setup(dataDir: string, bus: EventBus) {
  const sys = cardsOnEventBus(dataDir, bus, logger);
  sys.relay.start();
  return sys;
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('cards events', () => {
  let dir: string;
  let bus: EventBus;
  let sys: ReturnType<typeof setup>;
  beforeEach(() => {
    dir = testTempDir('cards-events-');
    bus = createEventBus({ DATA_DIR: dir }, logger);
    sys = setup(dir, bus);
  });
  afterEach(async () => {
    await sys.relay.stop();
    await bus.close();
    sys.db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('publishes card created/updated/deleted and bookmark and collection events with what search and notifications need', async () => {
    const received: { topic: string; payload: Uint8Array }[] = [];
    const sub = await bus.subscribe({ group: 'test', topics: [Topics.card, Topics.bookmark, Topics.collection], handler: async (e) => void received.push(e) });
    const content = someContent();
    const { card } = await sys.cardService.createCard({ callerId: 'alice', cardHtml: `<p>${content}</p><script>x</script>`, link: 'https://a.example/', private: false, tags: ['x', 'y'] });
    const collection = await sys.collectionService.create('alice', 'Mine', '', true);
    await sys.collectionService.addBookmark('alice', collection.id, card.id);
    await sys.cardService.updateCard({ callerId: 'alice', cardId: card.id, private: true });
    const fileCollection = await sys.collectionService.createFileCollection('alice', 'file-1', 'doc.pdf', true, [card.id]);
    await sys.cardService.deleteCard('alice', card.id);
    await until(async () => (received.length >= 8 ? true : undefined));
    await sub.close();

    const cardEvents = received.filter((e) => e.topic === Topics.card).map((e) => events.CardEvent.decode(e.payload));
    expect(cardEvents.map((e) => e.kind?.$case)).toEqual(['created', 'updated', 'deleted']);
    const created = cardEvents[0]!.kind!.$case === 'created' ? cardEvents[0]!.kind!.value.card! : undefined;
    expect(created).toMatchObject({ id: card.id, authorId: 'alice', content, tags: ['x', 'y'], link: 'https://a.example/', private: false, collectionIds: [] });
    const updated = cardEvents[1]!.kind!.$case === 'updated' ? cardEvents[1]!.kind!.value : undefined;
    expect(updated).toMatchObject({ privacyChanged: true, contentChanged: false, card: { private: true, collectionIds: [collection.id] } });
    expect(new Set(cardEvents.map((e) => e.eventId)).size).toBe(3);

    const bookmarks = received.filter((e) => e.topic === Topics.bookmark).map((e) => events.BookmarkEvent.decode(e.payload));
    expect(bookmarks.slice(0, 2).map((b) => [b.collectionId, b.added])).toEqual([
      [collection.id, true],
      [fileCollection.id, true],
    ]);
    // Deleting the card takes it out of every collection (in no particular order).
    expect(bookmarks.slice(2).map((b) => [b.collectionId, b.added]).sort()).toEqual(
      [
        [collection.id, false],
        [fileCollection.id, false],
      ].sort(),
    );
    const collections = received.filter((e) => e.topic === Topics.collection).map((e) => events.CollectionEvent.decode(e.payload));
    expect(collections.map((c) => (c.kind?.$case === 'created' ? [c.kind.value.collectionId, c.kind.value.fileId ?? null] : null))).toEqual([
      [collection.id, null],
      [fileCollection.id, 'file-1'],
    ]);
  });

  it('says content changed only when the card\'s text changed: a stored HTML rewritten to the current form alone asks no new verification', async () => {
    const received: events.CardEvent[] = [];
    const sub = await bus.subscribe({ group: 'test', topics: [Topics.card], handler: async (e) => void received.push(events.CardEvent.decode(e.payload)) });
    const sentHtml = `<p>${someContent(80)}</p><table><tr><td>Name</td><td></td><td>Rate</td></tr><tr><td>Alpha</td><td> </td><td>four</td></tr></table>`;
    const { card } = await sys.cardService.createCard({
      callerId: 'alice',
      cardHtml: sentHtml,
      link: 'https://a.example/',
      private: false,
      tags: ['x'],
    });
    const stored = (await sys.cards.findById(card.id))!;
    expect(stored.cardHtml).toContain('Name | | Rate');
    // The card as a release before 2b64475 stored it: each row's separators around an empty cell doubled its spaces.
    const oldHtml = stored.cardHtml.replace('Name | | Rate', 'Name |  | Rate').replace('Alpha | | four', 'Alpha |  | four');
    expect(oldHtml).not.toBe(stored.cardHtml);
    sys.db.prepare('UPDATE cards SET card_html = ? WHERE id = ?').run(oldHtml, card.id);
    // The owner sends the HTML the card was made of again: stored in the current form, the same text.
    await sys.cardService.updateCard({ callerId: 'alice', cardId: card.id, cardHtml: sentHtml });
    expect((await sys.cards.findById(card.id))!).toMatchObject({ cardHtml: stored.cardHtml, content: stored.content });
    // An edit of the text, then of the link alone.
    await sys.cardService.updateCard({ callerId: 'alice', cardId: card.id, cardHtml: stored.cardHtml.replace('Rate', 'Price') });
    await sys.cardService.updateCard({ callerId: 'alice', cardId: card.id, link: 'https://b.example/' });
    await until(async () => (received.length >= 4 ? true : undefined));
    await sub.close();
    const changes = received.slice(1).map((e) => (e.kind?.$case === 'updated' ? [e.kind.value.contentChanged, e.kind.value.linkChanged] : e.kind?.$case));
    expect(changes).toEqual([
      [false, false],
      [true, false],
      [false, true],
    ]);
  });

  it("lists a card's collections in its events up to 20,000, for older search services; beyond, search has them from bookmark events only", () => {
    const card = aCard().build();
    const ids = Array.from({ length: 20_001 }, () => randomUUID());
    const listed = (collectionIds: string[]) => {
      const kind = events.CardEvent.decode(cardUpdated(card, collectionIds, { contentChanged: false, linkChanged: true, privacyChanged: false }).payload).kind;
      return kind?.$case === 'updated' ? kind.value.card!.collectionIds : undefined;
    };
    expect(MAX_LISTED_COLLECTIONS).toBe(20_000);
    expect(listed(ids.slice(0, 20_000))).toEqual(ids.slice(0, 20_000));
    expect(listed(ids)).toEqual([]);
  });

  it('the event of the largest card allowed, listing as many collections as it may, is one the event bus carries', () => {
    const wide = '\u{1F600}'; // 4 bytes in UTF-8, like every code point outside the BMP
    const largest: Card = {
      ...aCard().collisionOf(randomUUID()).build(),
      content: wide.repeat(MAX_CONTENT_CHARS),
      tags: Array.from({ length: MAX_TAGS }, (_, i) => `${i}`.padEnd(MAX_TAG_CHARS, wide)),
      link: `https://a.example/${'\u20AC'.repeat(MAX_LINK_CHARS - 18)}`,
    };
    const event = cardUpdated(largest, Array.from({ length: MAX_LISTED_COLLECTIONS }, () => randomUUID()), { contentChanged: true, linkChanged: true, privacyChanged: true });
    const kind = events.CardEvent.decode(event.payload).kind;
    expect(kind?.$case === 'updated' ? kind.value.card!.collectionIds.length : 0).toBe(MAX_LISTED_COLLECTIONS);
    expect(eventBytes(event)).toBeGreaterThan(900_000);
    expect(eventBytes(event)).toBeLessThanOrEqual(MAX_EVENT_BYTES);
  });

  it('takes vector_point_id and verification_score from search events, idempotently', async () => {
    const sub = await subscribeToSearchEvents(bus, sys.cardService);
    const { card } = await sys.cardService.createCard({ callerId: 'alice', cardHtml: `<p>${someContent()}</p>`, link: '', private: false, tags: [] });
    const indexed = events.CardIndexed.encode({ eventId: newId(), occurredAt: new Date(), cardId: card.id, vectorPointId: 'vp-42' }).finish();
    const verifiedAt = new Date();
    const verified = events.CardVerified.encode({ eventId: newId(), occurredAt: verifiedAt, verificationId: newId(), cardId: card.id, authorId: 'alice', score: 77, link: '', failure: '', contentSha256: '' }).finish();
    const stale = events.CardVerified.encode({ eventId: newId(), occurredAt: new Date(verifiedAt.getTime() - 60_000), verificationId: newId(), cardId: card.id, authorId: 'alice', score: 5, link: '', failure: '', contentSha256: '' }).finish();
    await bus.publish([
      { topic: Topics.index, key: card.id, payload: indexed },
      { topic: Topics.verification, key: card.id, payload: verified },
      { topic: Topics.verification, key: card.id, payload: verified },
      { topic: Topics.verification, key: card.id, payload: stale },
      { topic: Topics.index, key: 'unknown', payload: events.CardIndexed.encode({ eventId: newId(), cardId: newId(), vectorPointId: 'x' }).finish() },
    ]);
    const read = await until(async () => {
      const c = await sys.cards.findById(card.id);
      return c?.vectorPointId && c.verificationScore !== null ? c : undefined;
    });
    await new Promise((r) => setTimeout(r, 200));
    await sub.close();
    expect(read.vectorPointId).toBe('vp-42');
    expect((await sys.cards.findById(card.id))?.verificationScore).toBe(77);
  });
});
