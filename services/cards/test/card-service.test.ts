import { createHash, randomUUID } from 'node:crypto';
import { changedSinceReadMessage } from '@cards/card-rules';
import { events } from '@cards/proto';
import { AlreadyExistsError, ChangedSinceReadError, createLogger, Topics, IdempotencyKeyReusedError, InvalidArgumentError, keptKeyExpiry, NotFoundError, PermissionDeniedError, SqliteOutboxStore, type KeptKeyExpiry } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { CardService } from '../src/application/card-service';
import { isOlder } from '../src/application/card-service';
import type { NearDuplicateCandidate, NearDuplicateFinder } from '../src/domain/ports';
import { fingerprintOf, jaccard, legacyContentHash, legacySketch, NEAR_COPY_JACCARD, shinglesOf } from '../src/domain/rules';
import { aCard, aCollection, someContent } from './builders';

/** The service on a real SQLite store, with the peers it asks (search, files, identity) answering as told. */
function setup(nearDuplicates?: NearDuplicateFinder, keyExpiry?: KeptKeyExpiry) {
  const db = openCardsDatabase(':memory:');
  const cards = new SqliteCardRepository(db, keyExpiry);
  const peers = { candidates: [] as NearDuplicateCandidate[], files: new Map<string, string>(), privateFiles: new Set<string>(), events: 0 };
  const deps: ConstructorParameters<typeof CardService>[0] = {
    cards,
    votes: new SqliteVoteRepository(db),
    collections: new SqliteCollectionRepository(db, keyExpiry),
    contentLock: new InProcessContentLock(),
    nearDuplicates: nearDuplicates ?? { find: async () => peers.candidates },
    files: { visibleFile: async (id) => (peers.files.has(id) ? { name: peers.files.get(id)!, private: peers.privateFiles.has(id) } : null) },
    users: { joinDates: async () => new Map() },
    eventsWritten: () => void peers.events++,
    logger: createLogger('cards-test', 'silent'),
  };
  const service = new CardService(deps);
  /** Another replica (or this one restarted) on the same store. */
  const replica = () => new CardService(deps);
  return { service, replica, cards, peers, db };
}

/** Search's announcement of a verification of the card's page at `link` (against `content`, when named). */
const verifiedEvent = (cardId: string, score: number, link: string, at = new Date(), content?: string): events.CardVerified => ({
  eventId: randomUUID(),
  occurredAt: at,
  verificationId: randomUUID(),
  cardId,
  authorId: 'alice',
  score,
  link,
  failure: '',
  contentSha256: content === undefined ? '' : createHash('sha256').update(content).digest('hex'),
});

/** The results cards kept and announced on cards.verification.v1 (what notifications turns into notices), oldest first. */
async function keptVerifications(db: ReturnType<typeof openCardsDatabase>): Promise<events.CardVerified[]> {
  const pending = await new SqliteOutboxStore(db).pending(1000);
  return pending.filter((e) => e.topic === Topics.keptVerification).map((e) => events.CardVerified.decode(e.payload));
}

const create = (service: CardService, callerId: string, content = someContent(), extra: object = {}) =>
  service.createCard({ callerId, cardHtml: `<p>${content}</p>`, link: '', private: false, tags: [], ...extra });

describe('CardService', () => {
  describe('Hindi cards (vowel signs are combining marks)', () => {
    const story =
      'राम ने बाज़ार से एक नई किताब खरीदी और शाम को उसे पढ़ी। उसकी बहन ने भी वह किताब पढ़ी और कहा कि कहानी बहुत अच्छी थी। ' +
      'गाँव के लोग सुबह जल्दी उठते हैं और खेतों में काम करने जाते हैं। बच्चे स्कूल जाते हैं और दोपहर को घर लौटते हैं। ' +
      'शाम को सब मिलकर खाना खाते हैं और बातें करते हैं। त्योहारों पर पूरा गाँव सजाया जाता है और लोग एक दूसरे के घर जाते हैं।';
    // Other words with the same letters: every ी and ई vowel made ा and ए (खरीदी/खरीदा, अच्छी/अच्छा, नई/नए, ...).
    const otherVowels = story.replaceAll('ी', 'ा').replaceAll('ई', 'ए');

    it('are no duplicates of each other when only their vowel signs differ, while an exact copy is one', async () => {
      const { service } = setup();
      const first = await create(service, 'alice', story);
      const other = await create(service, 'bob', otherVowels);
      expect({ duplicate: other.duplicate, collisionOf: other.card.collisionOf }).toEqual({ duplicate: false, collisionOf: null });
      const copy = await create(service, 'carol', story);
      expect({ duplicate: copy.duplicate, collisionOf: copy.card.collisionOf }).toEqual({ duplicate: true, collisionOf: first.card.id });
    });

    it('stored under the hash that made marks spaces: an exact copy is still found, another text with the same letters is not', async () => {
      const { service, db } = setup();
      const first = await create(service, 'alice', story);
      db.prepare('UPDATE cards SET content_hash = ? WHERE id = ?').run(legacyContentHash(first.card.content)!, first.card.id);
      db.prepare('DELETE FROM card_sketch WHERE card_id = ?').run(first.card.id);
      const other = await create(service, 'bob', otherVowels);
      expect(other.duplicate).toBe(false);
      const copy = await create(service, 'carol', story);
      expect({ duplicate: copy.duplicate, collisionOf: copy.card.collisionOf }).toEqual({ duplicate: true, collisionOf: first.card.id });
    });

    it('stored with the sketch of words cut at every mark (before marks counted): a near copy is still found', async () => {
      const { service, db } = setup();
      const first = await create(service, 'alice', story);
      db.prepare('UPDATE cards SET content_hash = ? WHERE id = ?').run(legacyContentHash(first.card.content)!, first.card.id);
      db.prepare('DELETE FROM card_sketch WHERE card_id = ?').run(first.card.id);
      for (const hash of legacySketch(first.card.content)!) db.prepare('INSERT INTO card_sketch (hash, card_id) VALUES (?, ?)').run(hash, first.card.id);
      // One word changed, as the release before stored it a near copy of the first (audit: upgraded data dir).
      const near = await create(service, 'bob', story.replace('बहुत अच्छी', 'काफ़ी अच्छी'));
      expect({ duplicate: near.duplicate, collisionOf: near.card.collisionOf }).toEqual({ duplicate: true, collisionOf: first.card.id });
    });
  });

  it("takes the search index's embedding verdict for a visible root", async () => {
    const { service, peers } = setup();
    const root = await create(service, 'alice');
    peers.candidates = [{ cardId: root.card.id, duplicate: true, cosine: 0.97 }];
    const dup = await create(service, 'bob');
    expect(dup.duplicate).toBe(true);
    expect(dup.card.collisionOf).toBe(root.card.id);
    peers.candidates = [{ cardId: root.card.id, duplicate: false, cosine: 0.8 }];
    expect((await create(service, 'bob')).duplicate).toBe(false);
  });

  it('never attaches a public card to a private root', async () => {
    const { service, peers } = setup();
    const text = someContent();
    const root = await create(service, 'alice', text, { private: true });
    peers.candidates = [{ cardId: root.card.id, duplicate: true, cosine: 1 }];
    expect((await create(service, 'alice', text)).duplicate).toBe(false);
    expect((await create(service, 'alice', text, { private: true })).duplicate).toBe(true);
  });

  it('copies of one text sent at the same moment make one root and collisions of it', async () => {
    const { service } = setup();
    const text = someContent();
    const made = await Promise.all(['alice', 'bob', 'carol', 'dave', 'erin'].map((user) => create(service, user, text)));
    const roots = made.filter((m) => !m.duplicate);
    expect(roots).toHaveLength(1);
    for (const m of made) if (m.duplicate) expect(m.card.collisionOf).toBe(roots[0]!.card.id);
  });

  it('near copies of one text (not the same text) sent at the same moment make one root, the earliest, and collisions of it', async () => {
    for (let round = 0; round < 5; round++) {
      const { service, cards } = setup();
      const text = someContent();
      const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi'];
      const made = await Promise.all(users.map((user, i) => create(service, user, `${text} variant${i}`)));
      const stored = await cards.findByIds(made.map((m) => m.card.id));
      const roots = stored.filter((c) => c.collisionOf === null);
      expect(roots).toHaveLength(1);
      const earliest = [...stored].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id))[0]!;
      expect(roots[0]!.id).toBe(earliest.id);
      for (const c of stored) if (c.id !== earliest.id) expect(c.collisionOf).toBe(earliest.id);
      const groups = await service.getCardGroups(made.map((m) => m.card.id), undefined);
      expect(groups.map((g) => [g.root.id, g.collisions.length])).toEqual([[earliest.id, users.length - 1]]);
    }
  });

  it('near copies whose creates were cut off after the insert (process killed) end as one root once search announces them', async () => {
    const { service, cards } = setup();
    const killed = new Error('process killed after the insert');
    const insert = cards.insert.bind(cards);
    cards.insert = async (...args) => {
      await insert(...args);
      throw killed;
    };
    const text = someContent();
    const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
    const cut = await Promise.allSettled(users.map((user, i) => create(service, user, `${text} variant${i}`)));
    expect(cut.every((r) => r.status === 'rejected' && r.reason === killed)).toBe(true);
    cards.insert = insert;
    const stored = () => cards.findBySketch(fingerprintOf(`${text} variant0`).sketch, 1, 50);
    expect((await stored()).filter((c) => c.collisionOf === null).length).toBeGreaterThan(1);
    // After the restart search indexes the roots it was told of and announces them, in any order.
    for (const card of [...(await stored())].reverse()) if (card.collisionOf === null) await service.recordIndexed(card.id, `vp-${card.id}`);
    const after = await stored();
    const earliest = [...after].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id))[0]!;
    expect(after.map((c) => (c.id === earliest.id ? null : earliest.id))).toEqual(after.map((c) => c.collisionOf));
    const groups = await service.getCardGroups(after.map((c) => c.id), undefined);
    expect(groups.map((g) => [g.root.id, g.collisions.length])).toEqual([[earliest.id, users.length - 1]]);
  });

  // Search keeps a card's snapshot with the latest updated_at and drops older ones: an edit made on a replica whose clock
  // is a few seconds behind the one that made the edit before (or after a clock set back and a restart) must still be
  // later, or search would keep showing the text before it.
  it("stamps an edit later than the card's last change even on a replica whose clock is behind", async () => {
    const { service, replica, cards } = setup();
    const made = await create(service, 'alice');
    const ahead = jest.spyOn(Date, 'now').mockReturnValue(made.card.updatedAt.getTime() + 60_000);
    try {
      await service.updateCard({ callerId: 'alice', cardId: made.card.id, cardHtml: `<p>${someContent()}</p>` });
      const first = (await cards.findById(made.card.id))!.updatedAt;
      ahead.mockReturnValue(made.card.updatedAt.getTime() + 1_000);
      await replica().updateCard({ callerId: 'alice', cardId: made.card.id, cardHtml: `<p>${someContent()}</p>` });
      expect((await cards.findById(made.card.id))!.updatedAt.getTime()).toBeGreaterThan(first.getTime());
    } finally {
      ahead.mockRestore();
    }
  });

  describe("an update on the version the caller read (ifUpdatedAt, the gateway's If-Match)", () => {
    it('is refused when the card changed since, and written when it did not', async () => {
      const { service, cards } = setup();
      const made = await create(service, 'alice');
      const read = made.card.updatedAt;
      await service.updateCard({ callerId: 'alice', cardId: made.card.id, link: 'https://example.com/other-tab' });
      const refused = service.updateCard({ callerId: 'alice', cardId: made.card.id, private: true, ifUpdatedAt: read });
      await expect(refused).rejects.toThrow(ChangedSinceReadError);
      // The text the gateway's own 412 says too (a tag naming no version), from the one shared place.
      await expect(refused).rejects.toThrow(changedSinceReadMessage('card'));
      const now = (await cards.findById(made.card.id))!;
      expect([now.link, now.private]).toEqual(['https://example.com/other-tab', false]);
      await service.updateCard({ callerId: 'alice', cardId: made.card.id, private: true, ifUpdatedAt: new Date(now.updatedAt.getTime()) });
      expect((await cards.findById(made.card.id))!.private).toBe(true);
    });

    it('is refused when another save lands between its read and its write, which is kept', async () => {
      const { service, replica, cards } = setup();
      const made = await create(service, 'alice');
      const write = cards.update.bind(cards);
      let landed = false;
      jest.spyOn(cards, 'update').mockImplementation(async (...args) => {
        if (!landed) {
          landed = true;
          await replica().updateCard({ callerId: 'alice', cardId: made.card.id, link: 'https://example.com/landed-between' });
        }
        return write(...args);
      });
      await expect(service.updateCard({ callerId: 'alice', cardId: made.card.id, link: 'https://example.com/mine', ifUpdatedAt: made.card.updatedAt })).rejects.toThrow(
        ChangedSinceReadError,
      );
      expect((await cards.findById(made.card.id))!.link).toBe('https://example.com/landed-between');
    });

    it('answers the version it wrote, on which the next update is written without reading the card again', async () => {
      const { service, cards } = setup();
      const made = await create(service, 'alice');
      const first = await service.updateCard({ callerId: 'alice', cardId: made.card.id, link: 'https://example.com/first', ifUpdatedAt: made.card.updatedAt });
      expect(first.getTime()).toBeGreaterThan(made.card.updatedAt.getTime());
      expect((await cards.findById(made.card.id))!.updatedAt.getTime()).toBe(first.getTime());
      const second = await service.updateCard({ callerId: 'alice', cardId: made.card.id, private: true, ifUpdatedAt: first });
      expect(second.getTime()).toBeGreaterThan(first.getTime());
      // Nothing to change: the version it found, which the card still has.
      expect((await service.updateCard({ callerId: 'alice', cardId: made.card.id, private: true, ifUpdatedAt: second })).getTime()).toBe(second.getTime());
      const now = (await cards.findById(made.card.id))!;
      expect([now.link, now.private, now.updatedAt.getTime()]).toEqual(['https://example.com/first', true, second.getTime()]);
    });

    it("answers its own write's version, not that of a save landing right after it, which the next update on it does not replace", async () => {
      const { service, replica, cards } = setup();
      const made = await create(service, 'alice');
      const write = cards.update.bind(cards);
      let landed = false;
      jest.spyOn(cards, 'update').mockImplementation(async (...args) => {
        await write(...args);
        if (!landed) {
          landed = true;
          await replica().updateCard({ callerId: 'alice', cardId: made.card.id, link: 'https://example.com/landed-after' });
        }
      });
      const mine = await service.updateCard({ callerId: 'alice', cardId: made.card.id, link: 'https://example.com/mine', ifUpdatedAt: made.card.updatedAt });
      const now = (await cards.findById(made.card.id))!;
      expect(now.link).toBe('https://example.com/landed-after');
      expect(mine.getTime()).toBeLessThan(now.updatedAt.getTime());
      await expect(service.updateCard({ callerId: 'alice', cardId: made.card.id, link: 'https://example.com/mine-again', ifUpdatedAt: mine })).rejects.toThrow(ChangedSinceReadError);
      expect((await cards.findById(made.card.id))!.link).toBe('https://example.com/landed-after');
    });
  });

  it('an edited root announced by search stays a root beside a near copy of its new text', async () => {
    const { service, cards } = setup();
    const text = someContent();
    const first = await create(service, 'alice', text);
    const other = await create(service, 'bob');
    await service.updateCard({ callerId: 'bob', cardId: other.card.id, cardHtml: `<p>${text} edited</p>` });
    await service.recordIndexed(other.card.id, `vp-${other.card.id}`);
    expect((await cards.findById(other.card.id))!.collisionOf).toBeNull();
    expect((await cards.findById(first.card.id))!.collisionOf).toBeNull();
  });

  describe('copies by the embedding verdict alone, sent at the same moment', () => {
    /** Search with a bag-of-words verdict (the same words are a copy) that answers after every create has asked it. */
    function bagOfWordsSearch() {
      const bag = (text: string) => text.split(/\W+/).filter(Boolean).sort().join(' ');
      const calls: number[] = [];
      const finder: NearDuplicateFinder = {
        find: async (content, _callerId, _limit, unindexed = []) => {
          calls.push(unindexed.length);
          await new Promise(setImmediate);
          return unindexed.map((u) => ({ cardId: u.cardId, duplicate: bag(u.content) === bag(content), cosine: bag(u.content) === bag(content) ? 1 : 0.5 }));
        },
      };
      return { finder, calls };
    }
    /** The same sentences in a different order each: one bag of words, shingle Jaccard far under the near-copy bar. */
    function reorderedCopies(n: number): string[] {
      const sentences = Array.from({ length: 8 }, () => Array.from({ length: 12 }, () => randomUUID().slice(0, 8).replace(/\d/g, 'q')).join(' ') + '.');
      const texts: string[] = [];
      while (texts.length < n) {
        const text = [...sentences].sort(() => Math.random() - 0.5).join(' ');
        if (texts.every((t) => jaccard(shinglesOf(t), shinglesOf(text)) < NEAR_COPY_JACCARD)) texts.push(text);
      }
      return texts;
    }
    const byCreation = <T extends { createdAt: Date; id: string }>(list: T[]) => [...list].sort((a, b) => (isOlder(a, b) ? -1 : 1));

    it('make one root, the earliest, and collisions of it', async () => {
      for (let round = 0; round < 5; round++) {
        const search = bagOfWordsSearch();
        const { service, cards } = setup(search.finder);
        const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
        const texts = reorderedCopies(users.length);
        const made = await Promise.all(users.map((user, i) => create(service, user, texts[i])));
        const stored = byCreation(await cards.findByIds(made.map((m) => m.card.id)));
        expect(stored.map((c) => c.collisionOf)).toEqual([null, ...stored.slice(1).map(() => stored[0]!.id)]);
        const groups = await service.getCardGroups(made.map((m) => m.card.id), undefined);
        expect(groups.map((g) => [g.root.id, g.collisions.length])).toEqual([[stored[0]!.id, users.length - 1]]);
      }
    });

    it('make one root, the earliest, also when the index gets each card before the others look again', async () => {
      for (let round = 0; round < 5; round++) {
        const search = bagOfWordsSearch();
        const { service, cards } = setup(search.finder);
        // Search announces a root as indexed as soon as it is stored: it is never among the roots not indexed yet.
        const insert = cards.insert.bind(cards);
        cards.insert = async (card, fingerprint, events) => {
          await insert(card, fingerprint, events);
          if (!card.collisionOf) await cards.setVectorPointId(card.id, `vp-${card.id}`);
        };
        const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
        const texts = reorderedCopies(users.length);
        const made = await Promise.all(users.map((user, i) => create(service, user, texts[i])));
        const stored = byCreation(await cards.findByIds(made.map((m) => m.card.id)));
        expect(stored.map((c) => c.collisionOf)).toEqual([null, ...stored.slice(1).map(() => stored[0]!.id)]);
      }
    });

    it('settle by the creation rule: a public copy never goes under a private card, a private copy goes under an earlier public one', async () => {
      for (let round = 0; round < 5; round++) {
        const { service, cards } = setup(bagOfWordsSearch().finder);
        const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
        const texts = reorderedCopies(users.length);
        const made = await Promise.all(users.map((user, i) => create(service, user, texts[i], { private: i % 2 === 0 })));
        const stored = byCreation(await cards.findByIds(made.map((m) => m.card.id)));
        const firstPublic = stored.find((c) => !c.private)!;
        // Every author differs: a private card older than the first public one has no root it may join.
        const expected = stored.map((c) => (c.id === firstPublic.id || (c.private && isOlder(c, firstPublic)) ? null : firstPublic.id));
        expect(stored.map((c) => c.collisionOf)).toEqual(expected);
      }
    });

    it('ask search a second time only when a root that could settle with the card was stored during its check', async () => {
      const search = bagOfWordsSearch();
      const { service } = setup(search.finder);
      const [first, second] = reorderedCopies(2);
      await create(service, 'alice', first);
      const copy = await create(service, 'bob', second);
      expect(copy.duplicate).toBe(true);
      await create(service, 'carol', someContent());
      expect(search.calls).toEqual([0, 1, 1]);
      search.calls.length = 0;
      const [a, b] = reorderedCopies(2);
      const pair = await Promise.all([create(service, 'dave', a), create(service, 'erin', b)]);
      expect(pair.filter((m) => m.duplicate)).toHaveLength(1);
      // Both checks compared the two roots stored before; after its insert a card asks about the other alone, when it sees it.
      expect(search.calls.slice(0, 2)).toEqual([2, 2]);
      expect(search.calls.slice(2).length).toBeGreaterThanOrEqual(1);
      expect(search.calls.slice(2).every((n) => n === 1)).toBe(true);
      expect(search.calls.length).toBeLessThanOrEqual(4);
    });

    /** Every insert stores its card and then fails, as when the process is killed right after it. */
    function cutAfterInsert(cards: SqliteCardRepository) {
      const killed = new Error('process killed after the insert');
      const insert = cards.insert.bind(cards);
      cards.insert = async (...args) => {
        await insert(...args);
        throw killed;
      };
      return { killed, restart: () => void (cards.insert = insert) };
    }

    it('whose creates were cut off after the insert end as one root, the earliest, once search announces them', async () => {
      const search = bagOfWordsSearch();
      const { service, cards } = setup(search.finder);
      const cut = cutAfterInsert(cards);
      const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
      const texts = reorderedCopies(users.length);
      const results = await Promise.allSettled(users.map((user, i) => create(service, user, texts[i])));
      expect(results.every((r) => r.status === 'rejected' && r.reason === cut.killed)).toBe(true);
      cut.restart();
      const stored = async () => byCreation((await Promise.all(users.map((user) => cards.listByAuthor(user, true, 0, 10)))).flat());
      expect((await stored()).filter((c) => c.collisionOf === null).length).toBeGreaterThan(1);
      // After the restart search indexes the roots it was told of and announces them, in any order.
      for (const card of [...(await stored())].reverse()) if (card.collisionOf === null) await service.recordIndexed(card.id, `vp-${card.id}`);
      const after = await stored();
      expect(after.map((c) => c.collisionOf)).toEqual([null, ...after.slice(1).map(() => after[0]!.id)]);
      const groups = await service.getCardGroups(after.map((c) => c.id), undefined);
      expect(groups.map((g) => [g.root.id, g.collisions.length])).toEqual([[after[0]!.id, users.length - 1]]);
    });

    it('whose creates were cut off after the insert end as one root when ingestion retries them with their idempotency keys', async () => {
      const search = bagOfWordsSearch();
      const { service, cards } = setup(search.finder);
      const cut = cutAfterInsert(cards);
      const texts = reorderedCopies(5);
      const key = (i: number) => `file-1:${i}`;
      await Promise.allSettled(texts.map((text, i) => create(service, 'ingest-user', text, { idempotencyKey: key(i) })));
      cut.restart();
      const stored = async () => byCreation(await cards.listByAuthor('ingest-user', true, 0, 10));
      const before = await stored();
      expect(before).toHaveLength(texts.length);
      expect(before.filter((c) => c.collisionOf === null).length).toBeGreaterThan(1);
      const retried = [];
      for (let i = texts.length - 1; i >= 0; i--) retried.unshift(await create(service, 'ingest-user', texts[i], { idempotencyKey: key(i) }));
      const after = await stored();
      expect(after.map((c) => c.id).sort()).toEqual(before.map((c) => c.id).sort());
      expect(after.map((c) => c.collisionOf)).toEqual([null, ...after.slice(1).map(() => after[0]!.id)]);
      const byId = new Map(after.map((c) => [c.id, c]));
      expect(retried.map((r) => [r.card.collisionOf, r.duplicate])).toEqual(retried.map((r) => [byId.get(r.card.id)!.collisionOf, byId.get(r.card.id)!.collisionOf !== null]));
      // Done once: a further retry and the announcements read nothing to settle.
      search.calls.length = 0;
      await create(service, 'ingest-user', texts[0], { idempotencyKey: key(0) });
      await service.recordIndexed(after[0]!.id, 'vp-root');
      expect(search.calls).toEqual([]);
    });

    it('whose creates finished their look-again are announced by search without anything read to settle them', async () => {
      const search = bagOfWordsSearch();
      const { service, cards } = setup(search.finder);
      const [first, second] = reorderedCopies(2);
      const root = await create(service, 'alice', first);
      expect((await create(service, 'bob', second)).duplicate).toBe(true);
      const other = await create(service, 'carol', someContent());
      search.calls.length = 0;
      const reads = (['findById', 'findByIds', 'findByContentHash', 'findBySketch', 'findRootsCreatedSince', 'findUnindexedRoots', 'findCollisions'] as const).map((m) => [m, jest.spyOn(cards, m)] as const);
      for (const card of [root.card, other.card]) await service.recordIndexed(card.id, `vp-${card.id}`);
      expect(reads.filter(([, spy]) => spy.mock.calls.length > 0).map(([method]) => method)).toEqual([]);
      expect(search.calls).toEqual([]);
      for (const [, spy] of reads) spy.mockRestore();
      expect((await cards.findById(root.card.id))?.vectorPointId).toBe(`vp-${root.card.id}`);
    });
  });

  it('a collision whose create was cut off after its root was deleted becomes a root of its own when the service starts again', async () => {
    const { service, cards, peers } = setup();
    const [gone, kept, paraphrased, paraphrase] = [someContent(), someContent(), someContent(), someContent()];
    const goneRoot = await create(service, 'alice', gone);
    const keptRoot = await create(service, 'alice', kept);
    const paraphrasedRoot = await create(service, 'alice', paraphrased);
    const killed = new Error('process killed after the insert');
    const insert = cards.insert.bind(cards);
    cards.insert = async (card, ...rest) => {
      // The root is deleted while the copy is being made: its deletion looks for collisions before the copy is stored.
      if (card.collisionOf === goneRoot.card.id) await service.deleteCard('alice', goneRoot.card.id);
      await insert(card, ...rest);
      throw killed;
    };
    await expect(create(service, 'bob', gone)).rejects.toBe(killed);
    await expect(create(service, 'bob', kept)).rejects.toBe(killed);
    // A copy by the embedding verdict alone, of a root created a moment before it (and unchanged since).
    peers.candidates = [{ cardId: paraphrasedRoot.card.id, duplicate: true, cosine: 0.97 }];
    await expect(create(service, 'bob', paraphrase)).rejects.toBe(killed);
    cards.insert = insert;
    const bobs = async (content: string) => (await cards.listByAuthor('bob', true, 0, 10)).find((c) => c.content === content);
    const [orphan, copy, paraphraseCopy] = [await bobs(gone), await bobs(kept), await bobs(paraphrase)];
    expect([orphan!.collisionOf, copy!.collisionOf, paraphraseCopy!.collisionOf]).toEqual([goneRoot.card.id, keptRoot.card.id, paraphrasedRoot.card.id]);
    expect(await service.getCardGroups([orphan!.id], undefined)).toEqual([]);

    expect(await service.recheckCutOffCollisions()).toBe(3);
    expect((await cards.findById(orphan!.id))?.collisionOf).toBeNull();
    expect((await cards.findById(copy!.id))?.collisionOf).toBe(keptRoot.card.id);
    expect((await cards.findById(paraphraseCopy!.id))?.collisionOf).toBe(paraphrasedRoot.card.id);
    expect((await service.getCardGroups([orphan!.id], undefined)).map((g) => g.root.id)).toEqual([orphan!.id]);
    // Now a root, it settles with its near copies once search announces it (from its detach's event); then nothing is owed.
    await service.recordIndexed(orphan!.id, `vp-${orphan!.id}`);
    expect(await cards.findWithLookAgainOwed(orphan!.id)).toBeNull();
    expect(await service.recheckCutOffCollisions()).toBe(0);
  });

  it('returns the same card for a retried idempotency key', async () => {
    const { service, cards } = setup();
    const first = await create(service, 'ingest-user', someContent(), { idempotencyKey: 'file-1#0' });
    const again = await create(service, 'ingest-user', someContent(), { idempotencyKey: 'file-1#0' });
    expect(again.card.id).toBe(first.card.id);
    expect(await cards.count()).toBe(1);
  });

  it("refuses a client's key sent again with another request, and after its card was deleted; ingestion's keys as before", async () => {
    const { service, cards } = setup();
    const text = someContent();
    const client = { idempotencyKey: 'http:k', requestFingerprint: 'fp-1' };
    const first = await create(service, 'alice', text, client);
    expect((await create(service, 'alice', text, client)).card.id).toBe(first.card.id);
    await expect(create(service, 'alice', someContent(), { ...client, requestFingerprint: 'fp-2' })).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    await service.deleteCard('alice', first.card.id);
    await expect(create(service, 'alice', text, client)).rejects.toBeInstanceOf(AlreadyExistsError);
    await expect(create(service, 'alice', text, { ...client, requestFingerprint: 'fp-2' })).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    expect(await cards.count()).toBe(0);
    // Ingestion sends no fingerprint: a retry after its card was deleted makes it again, whatever it sends.
    const ingested = await create(service, 'alice', someContent(), { idempotencyKey: 'file-1:0' });
    await service.deleteCard('alice', ingested.card.id);
    const again = await create(service, 'alice', someContent(), { idempotencyKey: 'file-1:0' });
    expect(again.card.id).not.toBe(ingested.card.id);
    expect((await create(service, 'alice', someContent(), { idempotencyKey: 'file-1:0' })).card.id).toBe(again.card.id);
  });

  it("makes the card again for a deleted card's key once IDEMPOTENCY_KEY_TTL_HOURS have passed since the deletion", async () => {
    let now = Date.now();
    const { service } = setup(undefined, keptKeyExpiry(24, () => new Date(now)));
    const text = someContent();
    const client = { idempotencyKey: 'http:k', requestFingerprint: 'fp-1' };
    const first = await create(service, 'alice', text, client);
    await service.deleteCard('alice', first.card.id);
    now += 24 * 3_600_000 - 1;
    await expect(create(service, 'alice', text, client)).rejects.toBeInstanceOf(AlreadyExistsError);
    now += 1;
    const again = await create(service, 'alice', text, client);
    expect(again.card.id).not.toBe(first.card.id);
    expect((await create(service, 'alice', text, client)).card.id).toBe(again.card.id);
  });

  it('answers a key stored before request fingerprints whatever request comes with it', async () => {
    const { service, cards } = setup();
    const older = aCard().by('alice').withIdempotencyKey('http:old').build();
    await cards.insert(older, fingerprintOf(older.content), []);
    expect((await create(service, 'alice', someContent(), { idempotencyKey: 'http:old', requestFingerprint: 'any' })).card.id).toBe(older.id);
  });

  it('fills file_name for a visible file and refuses an unknown one', async () => {
    const { service, peers } = setup();
    const fileId = randomUUID();
    peers.files.set(fileId, 'paper.pdf');
    expect((await create(service, 'alice', someContent(), { fileId })).card).toMatchObject({ fileId, fileName: 'paper.pdf' });
    await expect(create(service, 'alice', someContent(), { fileId: randomUUID() })).rejects.toThrow(InvalidArgumentError);
  });

  it('promotes the oldest public collision when a root is deleted', async () => {
    const { service, cards } = setup();
    const text = someContent();
    const root = await create(service, 'alice', text);
    const privateCopy = await create(service, 'bob', text, { private: true });
    const publicCopy = await create(service, 'carol', text);
    await service.deleteCard('alice', root.card.id);
    expect((await cards.findById(publicCopy.card.id))?.collisionOf).toBeNull();
    expect((await cards.findById(privateCopy.card.id))?.collisionOf).toBe(publicCopy.card.id);
    const groups = await service.getCardGroups([privateCopy.card.id], 'bob');
    expect(groups.map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([[publicCopy.card.id, [privateCopy.card.id]]]);
    expect((await service.getCardGroups([publicCopy.card.id], 'dave'))[0]!.collisions).toEqual([]);
  });

  it('makes a public duplicate of a private root (own or another author\'s) a root of its own', async () => {
    const { service, peers } = setup();
    const text = someContent();
    const root = await create(service, 'alice', text, { private: true });
    peers.candidates = [{ cardId: root.card.id, duplicate: true, cosine: 1 }];
    const otherPrivate = await create(service, 'bob', text, { private: true });
    const own = await create(service, 'alice', `${text}!`);
    for (const c of [otherPrivate, own]) expect({ duplicate: c.duplicate, collisionOf: c.card.collisionOf }).toEqual({ duplicate: false, collisionOf: null });
    // A later copy finds the public one, the first root it may attach to.
    const other = await create(service, 'bob', text);
    expect(other.card.collisionOf).toBe(own.card.id);
    expect((await service.getCardGroups([own.card.id], 'carol')).map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([[own.card.id, [other.card.id]]]);
  });

  it('a root made private hands its public collisions to the oldest public one, keeps its own private ones, and all stay findable', async () => {
    const { service, cards, peers } = setup();
    const text = someContent();
    const root = await create(service, 'alice', text);
    const alicePrivate = await create(service, 'alice', text, { private: true });
    const bobPrivate = await create(service, 'bob', text, { private: true });
    const bobPublic = await create(service, 'bob', text);
    const carolPublic = await create(service, 'carol', text);
    for (const c of [alicePrivate, bobPrivate, bobPublic, carolPublic]) expect(c.card.collisionOf).toBe(root.card.id);
    const before = peers.events;

    await service.updateCard({ callerId: 'alice', cardId: root.card.id, private: true });
    expect(peers.events).toBe(before + 1);
    const collisionOf = async (id: string) => (await cards.findById(id))?.collisionOf;
    expect(await collisionOf(bobPublic.card.id)).toBeNull();
    expect(await collisionOf(carolPublic.card.id)).toBe(bobPublic.card.id);
    expect(await collisionOf(bobPrivate.card.id)).toBe(bobPublic.card.id);
    expect(await collisionOf(alicePrivate.card.id)).toBe(root.card.id);
    // Others find the public copies; nobody else sees the private root; the owner still sees her group.
    const seenByDave = await service.getCardGroups([root.card.id, bobPublic.card.id, carolPublic.card.id], 'dave');
    expect(seenByDave.map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([[bobPublic.card.id, [carolPublic.card.id]]]);
    const seenByBob = await service.getCardGroups([bobPrivate.card.id], 'bob');
    expect(seenByBob.map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([[bobPublic.card.id, [bobPrivate.card.id, carolPublic.card.id]]]);
    const seenByAlice = await service.getCardGroups([root.card.id], 'alice');
    expect(seenByAlice.map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([[root.card.id, [alicePrivate.card.id]]]);

    // Public again: it is a root of its own again (its former collisions stay where they went), and may be voted on.
    await service.updateCard({ callerId: 'alice', cardId: root.card.id, private: false });
    expect(await collisionOf(root.card.id)).toBeNull();
    expect(await collisionOf(carolPublic.card.id)).toBe(bobPublic.card.id);
    await expect(service.castVote('dave', root.card.id, true)).resolves.toMatchObject({ value: true });
  });

  it('a deleted root with only private collisions of several authors leaves each author\'s oldest as a root they still find', async () => {
    const { service, cards } = setup();
    const text = someContent();
    const root = await create(service, 'alice', text);
    const bob1 = await create(service, 'bob', text, { private: true });
    const carol = await create(service, 'carol', text, { private: true });
    const bob2 = await create(service, 'bob', text, { private: true });
    await service.deleteCard('alice', root.card.id);
    expect((await cards.findById(bob1.card.id))?.collisionOf).toBeNull();
    expect((await cards.findById(carol.card.id))?.collisionOf).toBeNull();
    expect((await cards.findById(bob2.card.id))?.collisionOf).toBe(bob1.card.id);
    expect((await service.getCardGroups([carol.card.id], 'carol')).map((g) => g.root.id)).toEqual([carol.card.id]);
    expect((await service.getCardGroups([bob2.card.id], 'bob')).map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([[bob1.card.id, [bob2.card.id]]]);
  });

  it('a copy made while its root is made private or deleted (neither sees the other) ends up a root of its own', async () => {
    for (const change of ['private', 'delete'] as const) {
      const { service, cards } = setup();
      const text = someContent();
      const root = await create(service, 'alice', text);
      // The root changes after the copy chose it and before the copy is stored.
      const insert = cards.insert.bind(cards);
      cards.insert = async (...args) => {
        cards.insert = insert;
        if (change === 'private') await service.updateCard({ callerId: 'alice', cardId: root.card.id, private: true });
        else await service.deleteCard('alice', root.card.id);
        return insert(...args);
      };
      const copy = await create(service, 'bob', text);
      expect({ change, duplicate: copy.duplicate, collisionOf: copy.card.collisionOf }).toEqual({ change, duplicate: false, collisionOf: null });
      expect((await cards.findById(copy.card.id))?.collisionOf).toBeNull();
      expect((await service.getCardGroups([copy.card.id], 'carol')).map((g) => g.root.id)).toEqual([copy.card.id]);
    }
  });

  it('a copy stored while its root is being made private, deleted or edited into other text, after the root looked for its collisions, leaves it', async () => {
    for (const change of ['private', 'delete', 'edit'] as const) {
      const { service, cards } = setup();
      const text = someContent();
      const root = await create(service, 'alice', text);
      // The root looks for its collisions, then the copy is stored, then the root changes.
      const findCollisions = cards.findCollisions.bind(cards);
      let copyId = '';
      cards.findCollisions = async (ids) => {
        cards.findCollisions = findCollisions;
        const found = await findCollisions(ids);
        copyId = (await create(service, 'bob', text)).card.id;
        return found;
      };
      if (change === 'private') await service.updateCard({ callerId: 'alice', cardId: root.card.id, private: true });
      else if (change === 'edit') await service.updateCard({ callerId: 'alice', cardId: root.card.id, cardHtml: `<p>${someContent()}</p>` });
      else await service.deleteCard('alice', root.card.id);
      expect({ change, collisionOf: (await cards.findById(copyId))?.collisionOf }).toEqual({ change, collisionOf: null });
      expect((await service.getCardGroups([copyId], 'carol')).map((g) => g.root.id)).toEqual([copyId]);
    }
  });

  it('a collision edited into other text becomes a root of its own; a small edit keeps it under its root', async () => {
    const { service, cards } = setup();
    const text = someContent(120);
    const root = await create(service, 'alice', text);
    const copy = await create(service, 'bob', text);
    const privateCopy = await create(service, 'bob', text, { private: true });
    const words = text.split(' ');
    words[60] = 'edited';
    await service.updateCard({ callerId: 'bob', cardId: copy.card.id, cardHtml: `<p>${words.join(' ')}</p>` });
    expect((await cards.findById(copy.card.id))?.collisionOf).toBe(root.card.id);

    const other = someContent();
    await service.updateCard({ callerId: 'bob', cardId: copy.card.id, cardHtml: `<p>${other}</p>` });
    expect(await cards.findById(copy.card.id)).toMatchObject({ content: other, collisionOf: null, vectorPointId: null });
    expect((await service.getCardGroups([copy.card.id], 'carol')).map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([[copy.card.id, []]]);
    // No longer a private duplicate: it may be made public in the same edit.
    await expect(service.updateCard({ callerId: 'bob', cardId: privateCopy.card.id, private: false })).rejects.toThrow(InvalidArgumentError);
    await service.updateCard({ callerId: 'bob', cardId: privateCopy.card.id, cardHtml: `<p>${someContent()}</p>`, private: false });
    expect(await cards.findById(privateCopy.card.id)).toMatchObject({ private: false, collisionOf: null });
  });

  it('a root edited into other text lets go of the copies of its old text: the oldest public one becomes their root', async () => {
    const { service, cards } = setup();
    const text = someContent(120);
    const root = await create(service, 'alice', text);
    const bobPrivate = await create(service, 'bob', text, { private: true });
    const carolPublic = await create(service, 'carol', text);
    const davePublic = await create(service, 'dave', text);
    const edited = text.split(' ');
    edited[60] = 'edited';
    await service.updateCard({ callerId: 'alice', cardId: root.card.id, cardHtml: `<p>${edited.join(' ')}</p>` });
    for (const c of [bobPrivate, carolPublic, davePublic]) expect((await cards.findById(c.card.id))?.collisionOf).toBe(root.card.id);

    await service.updateCard({ callerId: 'alice', cardId: root.card.id, cardHtml: `<p>${someContent()}</p>` });
    const collisionOf = async (id: string) => (await cards.findById(id))?.collisionOf;
    expect(await collisionOf(carolPublic.card.id)).toBeNull();
    expect(await collisionOf(davePublic.card.id)).toBe(carolPublic.card.id);
    expect(await collisionOf(bobPrivate.card.id)).toBe(carolPublic.card.id);
    expect(await cards.findCollisions([root.card.id])).toEqual([]);
  });

  it('an edit racing a privacy change never writes the old privacy back', async () => {
    const { service, cards } = setup();
    const card = await create(service, 'alice');
    // The link edit reads the card, then the card is made private, then the edit writes.
    const update = cards.update.bind(cards);
    cards.update = async (...args) => {
      cards.update = update;
      await service.updateCard({ callerId: 'alice', cardId: card.card.id, private: true });
      return update(...args);
    };
    await service.updateCard({ callerId: 'alice', cardId: card.card.id, link: 'https://example.com/edited' });
    expect(await cards.findById(card.card.id)).toMatchObject({ private: true, link: 'https://example.com/edited' });
    await expect(service.getCard(card.card.id, 'bob')).rejects.toThrow(NotFoundError);
  });

  it("a file's privacy reaches its owner's cards from it and its collection; others' cards drop a file made private", async () => {
    const { service, cards, peers, db } = setup();
    const collections = new SqliteCollectionRepository(db);
    const fileId = randomUUID();
    peers.files.set(fileId, 'notes.odt');
    const fromFile = [await create(service, 'alice', someContent(), { fileId }), await create(service, 'alice', someContent(), { fileId })];
    // A private copy of bob's public card: a private duplicate, which may not be made public.
    const bobs = await create(service, 'bob');
    const privateCopy = await create(service, 'alice', bobs.card.content, { fileId, private: true });
    expect(privateCopy.duplicate).toBe(true);
    const citing = await create(service, 'bob', someContent(), { fileId });
    const collection = aCollection().by('alice').forFile(fileId).build();
    await collections.insert(collection, []);
    const state = async () => ({
      privacy: await Promise.all([...fromFile, privateCopy].map(async (m) => (await cards.findById(m.card.id))!.private)),
      citedFile: (await cards.findById(citing.card.id))!.fileId,
      collectionPublic: (await collections.findById(collection.id))!.isPublic,
    });

    await service.applyFilePrivacy(fileId, 'alice', true);
    expect(await state()).toEqual({ privacy: [true, true, true], citedFile: null, collectionPublic: false });
    await expect(service.getCard(fromFile[0]!.card.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);

    await service.applyFilePrivacy(fileId, 'alice', false);
    expect(await state()).toEqual({ privacy: [false, false, true], citedFile: null, collectionPublic: true });
    await service.applyFilePrivacy(fileId, 'alice', false);
    expect(await state()).toEqual({ privacy: [false, false, true], citedFile: null, collectionPublic: true });
  });

  it('a file made private then public again gives back only the cards it hid: its owner\'s own privacy choices win', async () => {
    const { service, cards, peers } = setup();
    const fileId = randomUUID();
    peers.files.set(fileId, 'notes.odt');
    const [a, b, x, y] = [await create(service, 'alice', someContent(), { fileId }), await create(service, 'alice', someContent(), { fileId }), await create(service, 'alice', someContent(), { fileId }), await create(service, 'alice', someContent(), { fileId })];
    // Made from the file while it was private (ingestion says so): the file hid it.
    const ingested = await create(service, 'alice', someContent(), { fileId, private: true, hiddenByFile: true, idempotencyKey: `${fileId}:0` });
    await service.updateCard({ callerId: 'alice', cardId: x.card.id, private: true });
    const state = async () => {
      const stored = await Promise.all([a, b, x, y, ingested].map(async (m) => (await cards.findById(m.card.id))!));
      return { private: stored.map((c) => c.private), hiddenByFile: stored.map((c) => c.hiddenByFile) };
    };
    expect(await state()).toEqual({ private: [false, false, true, false, true], hiddenByFile: [false, false, false, false, true] });

    await service.applyFilePrivacy(fileId, 'alice', true);
    expect(await state()).toEqual({ private: [true, true, true, true, true], hiddenByFile: [true, true, false, true, true] });
    // While the file is private its owner publishes y (her choice: allowed) and sends b's privacy as it is (her choice too).
    await service.updateCard({ callerId: 'alice', cardId: y.card.id, private: false });
    await service.updateCard({ callerId: 'alice', cardId: b.card.id, private: true });
    await expect(service.getCard(y.card.id, 'bob')).resolves.toMatchObject({ id: y.card.id });
    expect(await state()).toEqual({ private: [true, true, true, false, true], hiddenByFile: [true, false, false, false, true] });

    await service.applyFilePrivacy(fileId, 'alice', false);
    expect(await state()).toEqual({ private: [false, true, true, false, false], hiddenByFile: [false, false, false, false, false] });
    await expect(service.getCard(x.card.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
    await expect(service.getCard(b.card.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);

    await service.applyFilePrivacy(fileId, 'alice', true);
    await service.applyFilePrivacy(fileId, 'alice', true);
    await service.applyFilePrivacy(fileId, 'alice', false);
    expect(await state()).toEqual({ private: [false, true, true, false, false], hiddenByFile: [false, false, false, false, false] });
  });

  it("an ingested card takes its file's privacy as the file directory answers it when the card is made, not as the ingestion read it at its start", async () => {
    const { service, cards, peers } = setup();
    const fileId = randomUUID();
    peers.files.set(fileId, 'plan.docx');
    // The ingestion started while the file was public; the owner made it private since: the next card is hidden by it.
    peers.privateFiles.add(fileId);
    const afterPrivate = await create(service, 'alice', someContent(), { fileId, private: false, hiddenByFile: false, privacyFromFile: true, idempotencyKey: `${fileId}:0` });
    expect(await cards.findById(afterPrivate.card.id)).toMatchObject({ private: true, hiddenByFile: true, filePrivate: true });
    await expect(service.getCard(afterPrivate.card.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
    await expect(service.getCard(afterPrivate.card.id, undefined)).rejects.toBeInstanceOf(NotFoundError);
    // And the other way: started private, made public since.
    peers.privateFiles.delete(fileId);
    const afterPublic = await create(service, 'alice', someContent(), { fileId, private: true, hiddenByFile: true, privacyFromFile: true, idempotencyKey: `${fileId}:1` });
    expect(await cards.findById(afterPublic.card.id)).toMatchObject({ private: false, hiddenByFile: false, filePrivate: false });
    await expect(service.getCard(afterPublic.card.id, 'bob')).resolves.toMatchObject({ fileId, fileName: 'plan.docx' });
    // A card sent by its owner keeps the privacy she chose.
    expect(await cards.findById((await create(service, 'alice', someContent(), { fileId, private: true })).card.id)).toMatchObject({ private: true, hiddenByFile: false });
  });

  it("a private file's id and name show on its owner's public cards to the owner only, in every read, until the file is made public", async () => {
    const { service, peers } = setup();
    const fileId = randomUUID();
    peers.files.set(fileId, 'secret-merger-plan.docx');
    peers.privateFiles.add(fileId);
    // Public by the owner's choice: sent public, or made from the file while private and published since.
    const sent = await create(service, 'alice', someContent(), { fileId });
    const ingested = await create(service, 'alice', someContent(), { fileId, private: true, hiddenByFile: true, idempotencyKey: `${fileId}:0` });
    await service.updateCard({ callerId: 'alice', cardId: ingested.card.id, private: false });
    const ids = [sent.card.id, ingested.card.id];
    const seenBy = async (viewer: string | undefined) => {
      const reads = [
        ...(await Promise.all(ids.map((id) => service.getCard(id, viewer)))),
        ...(await service.listUserCards('alice', viewer, 1)).cards,
        ...(await service.getCardGroups(ids, viewer)).map((g) => g.root),
      ];
      return [...new Set(reads.map((c) => JSON.stringify([c.fileId, c.fileName])))];
    };
    expect(sent.card).toMatchObject({ fileId, fileName: 'secret-merger-plan.docx' });
    expect(await seenBy('alice')).toEqual([JSON.stringify([fileId, 'secret-merger-plan.docx'])]);
    for (const other of ['bob', undefined]) expect(await seenBy(other)).toEqual([JSON.stringify([null, null])]);

    peers.privateFiles.delete(fileId);
    await service.applyFilePrivacy(fileId, 'alice', false);
    for (const viewer of ['alice', 'bob', undefined]) expect(await seenBy(viewer)).toEqual([JSON.stringify([fileId, 'secret-merger-plan.docx'])]);
    // Made private again, the file hides both; the one she publishes again shows it to her alone.
    await service.applyFilePrivacy(fileId, 'alice', true);
    await service.updateCard({ callerId: 'alice', cardId: sent.card.id, private: false });
    expect(await service.getCard(sent.card.id, 'bob')).toMatchObject({ fileId: null, fileName: null });
    expect(await service.getCard(sent.card.id, 'alice')).toMatchObject({ fileId, fileName: 'secret-merger-plan.docx' });
  });

  it('a public duplicate hidden by its file comes back public under its root when the file is made public again; one made private by hand stays so until an edit makes it no copy', async () => {
    const { service, cards, peers } = setup();
    const fileId = randomUUID();
    peers.files.set(fileId, 'notes.odt');
    const bobs = await create(service, 'bob');
    const copy = await create(service, 'alice', bobs.card.content, { fileId });
    expect(copy.duplicate).toBe(true);
    await service.applyFilePrivacy(fileId, 'alice', true);
    expect(await cards.findById(copy.card.id)).toMatchObject({ private: true, hiddenByFile: true, collisionOf: bobs.card.id });
    await expect(service.updateCard({ callerId: 'alice', cardId: copy.card.id, private: false })).rejects.toThrow('private: a private duplicate cannot be made public');
    await service.applyFilePrivacy(fileId, 'alice', false);
    expect(await cards.findById(copy.card.id)).toMatchObject({ private: false, hiddenByFile: false, collisionOf: bobs.card.id });
    expect((await service.getCardGroups([bobs.card.id], undefined))[0]!.collisions.map((c) => c.id)).toEqual([copy.card.id]);
    await service.updateCard({ callerId: 'alice', cardId: copy.card.id, private: true });
    await service.applyFilePrivacy(fileId, 'alice', true);
    await service.applyFilePrivacy(fileId, 'alice', false);
    expect(await cards.findById(copy.card.id)).toMatchObject({ private: true, collisionOf: bobs.card.id });
    await expect(service.updateCard({ callerId: 'alice', cardId: copy.card.id, private: false })).rejects.toThrow('private: a private duplicate cannot be made public');
    await service.updateCard({ callerId: 'alice', cardId: copy.card.id, cardHtml: `<p>${someContent()}</p>`, private: false });
    expect(await cards.findById(copy.card.id)).toMatchObject({ private: false, collisionOf: null });
  });

  it('a card stored when punctuation counted as words opens, lists, changes link and privacy and deletes; an edit of its HTML is judged by the count of now', async () => {
    const { service, cards } = setup();
    // 40 words and 40 dashes: 80 words by the count before (any visible run), 40 by the count of now (a letter or a number).
    const content = Array.from({ length: 40 }, (_, i) => `word${i} \u2014`).join(' ') + ` ${randomUUID()}`;
    const old = aCard().by('alice').withContent(content).build();
    await cards.insert(old, fingerprintOf(old.content), []);
    expect(await service.getCard(old.id, 'alice')).toMatchObject({ id: old.id, content });
    expect((await service.listUserCards('alice', undefined, 1)).cards.map((c) => c.id)).toEqual([old.id]);
    await service.updateCard({ callerId: 'alice', cardId: old.id, link: 'https://example.org/elsewhere', private: true });
    expect(await service.getCard(old.id, 'alice')).toMatchObject({ link: 'https://example.org/elsewhere', private: true, content });
    await expect(service.updateCard({ callerId: 'alice', cardId: old.id, cardHtml: old.cardHtml })).rejects.toThrow(
      new InvalidArgumentError('card_html: must contain more than 70 words of text (found 41; a word holds a letter or a digit; punctuation, symbols and emoji alone are not counted)'),
    );
    expect((await service.getCard(old.id, 'alice')).cardHtml).toBe(old.cardHtml);
    await service.deleteCard('alice', old.id);
    await expect(service.getCard(old.id, 'alice')).rejects.toThrow(NotFoundError);
  });

  it('a link stored under an earlier rule (credentials, an invalid host) may be sent back unchanged; any other such link is refused', async () => {
    const { service, cards } = setup();
    const old = { ...aCard().by('alice').build(), link: 'https://u:p@x..com/a' };
    await cards.insert(old, fingerprintOf(old.content), []);
    await service.updateCard({ callerId: 'alice', cardId: old.id, link: ' https://u:p@x..com/a ', private: true });
    expect(await service.getCard(old.id, 'alice')).toMatchObject({ link: 'https://u:p@x..com/a', private: true });
    await expect(service.updateCard({ callerId: 'alice', cardId: old.id, link: 'https://u:p@x..com/b' })).rejects.toThrow(/^link: must be an http or https URL without a user name or password/);
    await expect(service.updateCard({ callerId: 'alice', cardId: old.id, link: 'https://x..com/a' })).rejects.toThrow(/^link: .*whose host is a domain name/);
    await expect(create(service, 'alice', someContent(), { link: 'https://u:p@x..com/a' })).rejects.toThrow(/^link: /);
    await service.updateCard({ callerId: 'alice', cardId: old.id, link: 'https://x.com/a' });
    expect((await service.getCard(old.id, 'alice')).link).toBe('https://x.com/a');
  });

  it('hides private cards (404) and protects others\' cards (403)', async () => {
    const { service } = setup();
    const hidden = await create(service, 'alice', someContent(), { private: true });
    const open = await create(service, 'alice');
    await expect(service.getCard(hidden.card.id, 'bob')).rejects.toThrow(NotFoundError);
    await expect(service.deleteCard('bob', hidden.card.id)).rejects.toThrow(NotFoundError);
    await expect(service.deleteCard('bob', open.card.id)).rejects.toThrow(PermissionDeniedError);
    await expect(service.castVote('bob', hidden.card.id, true)).rejects.toThrow(NotFoundError);
    expect(await service.getCardGroups([hidden.card.id, open.card.id], undefined)).toHaveLength(1);
  });

  it('takes back a vote on a card made private since, answering as for a deleted card (the card\'s existence stays hidden)', async () => {
    const { service } = setup();
    const madePrivate = await create(service, 'alice');
    const deleted = await create(service, 'alice');
    for (const card of [madePrivate, deleted]) await service.castVote('bob', card.card.id, true);
    await service.updateCard({ callerId: 'alice', cardId: madePrivate.card.id, private: true });
    await service.deleteCard('alice', deleted.card.id);
    const answer = (cardId: string) => service.deleteVote('bob', cardId).then(() => 'removed', (err: Error) => `${err.constructor.name}: ${err.message}`);
    const asDeleted = await answer(deleted.card.id);
    expect(asDeleted).toBe('NotFoundError: You have no vote on this card');
    expect(await answer(madePrivate.card.id)).toBe(asDeleted);
    // The vote went all the same: public again, the card counts no vote.
    await service.updateCard({ callerId: 'alice', cardId: madePrivate.card.id, private: false });
    expect(await service.getCard(madePrivate.card.id, 'bob')).toMatchObject({ totalUpvotes: 0, viewerVote: null });
    // Still visible: taking one's vote back is 204 as before.
    await service.castVote('bob', madePrivate.card.id, false);
    await expect(service.deleteVote('bob', madePrivate.card.id)).resolves.toBeUndefined();
  });

  it('refuses (404, nothing counted) a vote whose card its author made private, or deleted, between the vote\'s check and its write', async () => {
    const { service, cards } = setup();
    const madePrivate = await create(service, 'alice');
    const deleted = await create(service, 'alice');
    // The author's change lands right after castVote read the card (as a request from another tab would).
    const findById = cards.findById.bind(cards);
    const changes = new Map<string, () => Promise<unknown>>([
      [madePrivate.card.id, () => service.updateCard({ callerId: 'alice', cardId: madePrivate.card.id, private: true })],
      [deleted.card.id, () => service.deleteCard('alice', deleted.card.id)],
    ]);
    cards.findById = async (id: string) => {
      const card = await findById(id);
      const change = changes.get(id);
      changes.delete(id);
      if (change) await change();
      return card;
    };
    await expect(service.castVote('bob', madePrivate.card.id, true)).rejects.toThrow(NotFoundError);
    await expect(service.castVote('bob', deleted.card.id, true)).rejects.toThrow(NotFoundError);
    cards.findById = findById;
    expect(await service.getCard(madePrivate.card.id, 'alice')).toMatchObject({ private: true, totalUpvotes: 0 });
    expect((await service.listUserCards('alice', 'alice', 1)).upvotesReceived).toBe(0);
    // Public again, the card shows no vote of bob's: the vote never counted.
    await service.updateCard({ callerId: 'alice', cardId: madePrivate.card.id, private: false });
    expect(await service.getCard(madePrivate.card.id, 'bob')).toMatchObject({ totalUpvotes: 0, viewerVote: null });
  });

  it('answers NotFound to a delete whose card another delete removed after it was read, writing no events of its own', async () => {
    const { service, cards, peers, db } = setup();
    const { card } = await create(service, 'alice');
    const remove = cards.remove.bind(cards);
    let raced = false;
    // The concurrent delete completes between this delete's read of the card and its removal.
    cards.remove = async (...args) => {
      if (!raced) {
        raced = true;
        await service.deleteCard('alice', card.id);
      }
      return remove(...args);
    };
    const eventsBefore = peers.events;
    await expect(service.deleteCard('alice', card.id)).rejects.toThrow(NotFoundError);
    expect(raced).toBe(true);
    expect(peers.events).toBe(eventsBefore + 1);
    expect(await new SqliteOutboxStore(db).pending(1000)).toHaveLength(2); // CardCreated and one CardDeleted
  });

  it('a changed link clears the score of the old one (as a removed link does); other edits and a result for the old link leave it as it is', async () => {
    const { service, cards } = setup();
    const { card } = await create(service, 'alice', someContent(), { link: 'https://example.org/old' });
    await service.recordVerification(verifiedEvent(card.id, 80, 'https://example.org/old'));
    await service.updateCard({ callerId: 'alice', cardId: card.id, private: true });
    expect(await cards.findById(card.id)).toMatchObject({ verificationScore: 80 });
    await service.updateCard({ callerId: 'alice', cardId: card.id, link: 'https://example.org/new' });
    expect(await cards.findById(card.id)).toMatchObject({ link: 'https://example.org/new', verificationScore: null, verifiedAt: null });
    await service.recordVerification(verifiedEvent(card.id, 90, 'https://example.org/old'));
    expect((await cards.findById(card.id))?.verificationScore).toBeNull();
    await service.recordVerification(verifiedEvent(card.id, 40, 'https://example.org/new'));
    expect((await cards.findById(card.id))?.verificationScore).toBe(40);
  });

  it('announces for notifications only the results it keeps: none for a link the card no longer has, or older than the one it holds', async () => {
    const { service, db } = setup();
    const { card } = await create(service, 'alice', someContent(), { link: 'https://example.org/old' });
    const first = verifiedEvent(card.id, 80, 'https://example.org/old');
    expect(await service.recordVerification(first)).toBe(true);
    // The link changed while its page was checked again, and search announced that check before it saw the edit.
    await service.updateCard({ callerId: 'alice', cardId: card.id, link: 'https://example.org/new' });
    expect(await service.recordVerification(verifiedEvent(card.id, 90, 'https://example.org/old'))).toBe(false);
    const current = verifiedEvent(card.id, 40, 'https://example.org/new');
    expect(await service.recordVerification(current)).toBe(true);
    expect(await service.recordVerification(verifiedEvent(card.id, 10, 'https://example.org/new', new Date(Date.now() - 60_000)))).toBe(false);
    const kept = await keptVerifications(db);
    expect(kept.map((v) => [v.verificationId, v.score, v.link])).toEqual([
      [first.verificationId, 80, 'https://example.org/old'],
      [current.verificationId, 40, 'https://example.org/new'],
    ]);
    // Announced anew (its own event id), as search announced it otherwise.
    expect(kept[1]).toMatchObject({ cardId: card.id, authorId: 'alice', failure: '' });
    expect(kept[1]!.eventId).not.toBe(current.eventId);
  });

  it('keeps and announces no result for content the card no longer holds (its html changed, the link not)', async () => {
    const { service, cards, db } = setup();
    const before = someContent();
    const { card } = await create(service, 'alice', before, { link: 'https://example.org/page' });
    const stored = (await cards.findById(card.id))!;
    // The html changed while the page was checked against the content before, and search announced that check first.
    const after = someContent();
    await service.updateCard({ callerId: 'alice', cardId: card.id, cardHtml: `<p>${after}</p>` });
    const edited = (await cards.findById(card.id))!;
    expect(edited.content).not.toBe(stored.content);
    expect(await service.recordVerification(verifiedEvent(card.id, 90, card.link, new Date(), stored.content))).toBe(false);
    expect((await cards.findById(card.id))?.verificationScore).toBeNull();
    expect(await keptVerifications(db)).toEqual([]);
    const current = verifiedEvent(card.id, 40, card.link, new Date(), edited.content);
    expect(await service.recordVerification(current)).toBe(true);
    expect((await cards.findById(card.id))?.verificationScore).toBe(40);
    expect((await keptVerifications(db)).map((v) => v.verificationId)).toEqual([current.verificationId]);
  });
});
