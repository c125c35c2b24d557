import { randomUUID } from 'node:crypto';
import type { IndexedCard, SearchScope } from '../src/domain/model';
import type { CardIndex } from '../src/domain/ports';
import { LABELLED_CARDS } from './fixtures/labelled-cards';

export const CONTRACT_DIMENSIONS = 8;

/** A unit vector along one axis, optionally tilted towards another: cosine between such vectors is easy to reason about. */
export function axis(i: number, tiltTo?: number, tilt = 0): Float32Array {
  const v = new Float32Array(CONTRACT_DIMENSIONS);
  v[i % CONTRACT_DIMENSIONS] = 1;
  if (tiltTo !== undefined) v[tiltTo % CONTRACT_DIMENSIONS] = tilt;
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

class CardBuilder {
  private card: IndexedCard = {
    cardId: randomUUID(),
    authorId: randomUUID(),
    content: 'a plain card about nothing in particular',
    tags: [],
    link: '',
    private: false,
    vector: axis(0),
    vectorPointId: randomUUID(),
    updatedAt: new Date('2026-01-01T00:00:00Z'),
  };
  by(authorId: string) {
    this.card.authorId = authorId;
    return this;
  }
  private() {
    this.card.private = true;
    return this;
  }
  saying(content: string) {
    this.card.content = content;
    return this;
  }
  tagged(...tags: string[]) {
    this.card.tags = tags;
    return this;
  }
  linking(link: string) {
    this.card.link = link;
    return this;
  }
  along(vector: Float32Array) {
    this.card.vector = vector;
    return this;
  }
  collisionOf(rootId: string) {
    this.card.collisionOf = rootId;
    return this;
  }
  at(iso: string) {
    this.card.updatedAt = new Date(iso);
    return this;
  }
  withId(id: string) {
    this.card.cardId = id;
    return this;
  }
  createdAt(at: Date) {
    this.card.createdAt = at;
    return this;
  }
  build(): IndexedCard {
    return { ...this.card };
  }
}

export const aCard = () => new CardBuilder();

const everything = (callerId?: string): SearchScope => ({ callerId, tags: [], links: [] });
const firstPage = { offset: 0, limit: 25 };

/** Prose no card holds, around which a card is pasted (a paragraph of notes, a letter). */
const UNINDEXED_BEFORE =
  'The committee met on Tuesday evening to discuss the budget for next year. After a long debate about the state of the roads, the leaking roof of the primary school and the hours of the new public library, the members agreed to postpone the final vote until the auditors had finished their report on last year spending.';
const UNINDEXED_AFTER =
  'Dear Margaret, thank you for the postcard from Lisbon. We finally repainted the kitchen a pale shade of yellow, the cat has taken over the armchair by the window, and my brother is visiting at the end of the month with his two noisy children. Write soon and tell me everything about the trip.';

/** A text with a typo in every fourth word of five letters or more (two letters in its middle swapped). */
function withTypos(text: string): string {
  let n = 0;
  return text.replace(/[A-Za-z]{5,}/g, (word) => (n++ % 4 === 0 ? word.slice(0, 2) + word[3] + word[2] + word.slice(4) : word));
}

/** Cards naming languages written with signs (C++, C#, .NET, node.js…) and cards holding only their parts, new ids each call. */
function namingCards() {
  return {
    cpp: aCard().saying('Templates and RAII in modern C++ make resource handling safe').build(),
    cpp17: aCard().saying('Structured bindings arrived with C++17, and so did std::optional').build(),
    sharp: aCard().saying('LINQ queries in C#, read like SQL over collections').build(),
    c: aCard().saying('The C language leaves memory management to the programmer').build(),
    fsharp: aCard().saying('Pipelines in F# read from left to right').build(),
    dotnet: aCard().saying('The .NET runtime compiles to an intermediate language').build(),
    net: aCard().saying('A fishing net dried in the harbour all afternoon').build(),
    nodejs: aCard().saying('Streams in node.js handle back-pressure for you').build(),
    apart: aCard().saying('Each node of the tree is a JS object with children').build(),
    nodeOnly: aCard().saying('A node of the graph links to three others').build(),
    three: aCard().saying('We moved the services from C# to F# on .NET last year').build(),
    two: aCard().saying('Ported the build scripts from C++ to C#').build(),
    tides: aCard().saying('The tides rise and fall with the pull of the Moon').build(),
  };
}

/** The CardIndex port's contract: every adapter (SQLite, Elasticsearch, ...) must pass it. */
export function describeCardIndexContract(name: string, factory: () => Promise<CardIndex>): void {
  describe(`CardIndex contract: ${name}`, () => {
    let index: CardIndex;
    beforeEach(async () => {
      index = await factory();
    });
    afterEach(async () => {
      await index.close();
    });

    test('ranks cards by cosine to the query vector, best first, scores in [-1, 1]', async () => {
      const near = aCard().along(axis(1, 2, 0.2)).build();
      const far = aCard().along(axis(3)).build();
      const opposite = aCard().along(axis(1).map((x) => -x)).build();
      for (const c of [far, opposite, near]) await index.upsert(c);
      const page = await index.nearest(axis(1), everything(), firstPage);
      expect(page.hits.map((h) => h.cardId)).toEqual([near.cardId, far.cardId, opposite.cardId]);
      expect(page.total).toBe(3);
      expect(page.hits[0]!.score).toBeCloseTo(1 / Math.hypot(1, 0.2), 4);
      expect(page.hits[2]!.score).toBeCloseTo(-1, 4);
    });

    test('a query vector of zeros (a text without a word the embedder knows) matches no card, in any scope', async () => {
      const owner = randomUUID();
      const collection = randomUUID();
      const open = aCard().along(axis(1)).build();
      const secret = aCard().by(owner).private().along(axis(2)).build();
      const blank = aCard().saying('qqq zzz').along(new Float32Array(CONTRACT_DIMENSIONS)).build();
      for (const card of [open, secret, blank]) await index.upsert(card);
      await index.setBookmark(collection, open.cardId, true, new Date('2026-01-02T00:00:00Z'));
      const zero = new Float32Array(CONTRACT_DIMENSIONS);
      for (const scope of [everything(), everything(owner), { ...everything(owner), collectionId: collection }, { ...everything(), tags: ['x'] }]) {
        expect(await index.nearest(zero, scope, firstPage)).toEqual({ hits: [], total: 0, reachable: 0 });
      }
      expect((await index.nearest(axis(1), everything(owner), firstPage)).total).toBe(3);
    });

    test('stores what it is given and reads it back', async () => {
      const collection = randomUUID();
      const card = aCard().tagged('Physics', 'space').linking('https://example.org/a').private().build();
      expect(await index.upsert(card)).toBe(true);
      await index.setBookmark(collection, card.cardId, true, new Date('2026-01-02T00:00:00Z'));
      const stored = await index.get(card.cardId);
      expect(stored).toMatchObject({ cardId: card.cardId, authorId: card.authorId, content: card.content, tags: card.tags, link: card.link, private: true, collectionIds: [collection], vectorPointId: card.vectorPointId });
      expect(Array.from(stored!.vector)).toEqual(Array.from(card.vector));
      expect(await index.get(randomUUID())).toBeUndefined();
    });

    test('a private card reaches only its author, in both searches', async () => {
      const owner = randomUUID();
      const secret = aCard().by(owner).private().saying('the secret recipe for plum jam').along(axis(4)).build();
      const open = aCard().saying('a public recipe for plum cake').along(axis(4, 5, 0.5)).build();
      await index.upsert(secret);
      await index.upsert(open);
      for (const caller of [undefined, randomUUID()]) {
        const semantic = await index.nearest(axis(4), everything(caller), firstPage);
        expect(semantic.hits.map((h) => h.cardId)).toEqual([open.cardId]);
        expect(semantic.total).toBe(1);
        const text = await index.matchText('plum recipe', everything(caller), firstPage);
        expect(text.hits.map((h) => h.cardId)).toEqual([open.cardId]);
      }
      const mine = await index.nearest(axis(4), everything(owner), firstPage);
      expect(mine.hits.map((h) => h.cardId)).toEqual([secret.cardId, open.cardId]);
      expect((await index.matchText('secret recipe', everything(owner), firstPage)).hits[0]!.cardId).toBe(secret.cardId);
    });

    test('tag filter matches any listed tag, link filter any contained string, both together', async () => {
      const a = aCard().tagged('Biology', 'cells').linking('https://nature.com/x').build();
      const b = aCard().tagged('chemistry').linking('https://science.org/y').build();
      const c = aCard().tagged('biology').linking('https://science.org/z').build();
      for (const card of [a, b, c]) await index.upsert(card);
      const ids = async (scope: Partial<SearchScope>) =>
        (await index.nearest(axis(0), { ...everything(), ...scope }, firstPage)).hits.map((h) => h.cardId).sort();
      expect(await ids({ tags: ['biology'] })).toEqual([a.cardId, c.cardId].sort());
      expect(await ids({ tags: ['chemistry', 'CELLS'] })).toEqual([a.cardId, b.cardId].sort());
      expect(await ids({ links: ['science.org'] })).toEqual([b.cardId, c.cardId].sort());
      expect(await ids({ tags: ['biology'], links: ['science.org'] })).toEqual([c.cardId]);
      expect(await ids({ tags: ['geology'] })).toEqual([]);
    });

    test('tag and link filters match across Unicode forms: a card indexed with NFD tags and link (stored before the gateway sent NFC) is found by NFC filters, and the other way round', async () => {
      const tag = 'Cr\u00e8me Br\u00fbl\u00e9e';
      const link = 'https://example.org/caf\u00e9';
      const decomposed = aCard().tagged(tag.normalize('NFD')).linking(`${link.normalize('NFD')}/1`).build();
      const composed = aCard().tagged(tag).linking(`${link}/2`).build();
      for (const card of [decomposed, composed]) await index.upsert(card);
      const ids = async (scope: Partial<SearchScope>) =>
        (await index.nearest(axis(0), { ...everything(), ...scope }, firstPage)).hits.map((h) => h.cardId).sort();
      const both = [decomposed.cardId, composed.cardId].sort();
      for (const form of ['NFC', 'NFD'] as const) {
        expect([form, await ids({ tags: [tag.normalize(form)] })]).toEqual([form, both]);
        expect([form, await ids({ tags: [tag.toLowerCase().normalize(form)] })]).toEqual([form, both]);
        expect([form, await ids({ links: [link.normalize(form)] })]).toEqual([form, both]);
      }
    });

    test('the link filter matches a link however its host and path are spelled: punycode or Unicode host, percent-encoded or decoded path, in either direction, in every search', async () => {
      // As a browser copies it, and as it shows it (the one typed, the other pasted).
      const copied = aCard().saying('the city on the isar').linking('https://xn--mnchen-3ya.de/wiki/M%C3%BCnchen?q=%E2%82%AC').along(axis(1)).build();
      const shown = aCard().saying('the city on the isar').linking('https://München.de/wiki/München?q=€').along(axis(1)).build();
      const spaced = aCard().saying('the city on the isar').linking('https://example.org/plain%20text/%FF').along(axis(1)).build();
      // A root found through its collision's link (the collision's entry on the root).
      const root = aCard().saying('tides are caused by the moon').linking('https://alpha.example/x').along(axis(1)).build();
      const collision = aCard().saying('tides are caused by the moon').linking('https://xn--e1afmkfd.example/%D0%BF%D1%83%D1%82%D1%8C').along(axis(1)).collisionOf(root.cardId).build();
      for (const card of [copied, shown, spaced, root, collision]) await index.upsert(card);
      const collection = randomUUID();
      for (const card of [copied, shown, spaced, root]) await index.setBookmark(collection, card.cardId, true, new Date('2026-01-02T00:00:00Z'));
      const found = async (link: string) => {
        const results: string[][] = [];
        for (const collectionId of [undefined, collection]) {
          const scope = { ...everything(), links: [link], ...(collectionId ? { collectionId } : {}) };
          results.push((await index.nearest(axis(1), scope, firstPage)).hits.map((h) => h.cardId).sort());
          const texts = await Promise.all(['the city on the isar', 'tides are caused by the moon'].map((query) => index.matchText(query, scope, firstPage)));
          results.push(texts.flatMap((page) => page.hits.map((h) => h.cardId)).sort());
        }
        for (const result of results) expect([link, result]).toEqual([link, results[0]]);
        return [link, results[0]];
      };
      const both = [copied.cardId, shown.cardId].sort();
      // The Unicode spelling finds the punycode and percent-encoded link; the encoded spelling finds the shown one.
      for (const link of ['münchen', 'MÜNCHEN.DE/wiki/münchen', 'wiki/München?q=€', 'xn--mnchen-3ya', 'XN--MNCHEN-3YA.DE', 'xn--mnchen-3ya.de/wiki/m%c3%bc', 'M%C3%BCnchen?q=%E2%82%AC', 'https://xn--mnchen-3ya.de/wiki/München']) {
        expect(await found(link)).toEqual([link, both]);
      }
      expect(await found('plain text/%ff')).toEqual(['plain text/%ff', [spaced.cardId]]);
      expect(await found('plain%20text')).toEqual(['plain%20text', [spaced.cardId]]);
      expect(await found('пример.example/путь')).toEqual(['пример.example/путь', [root.cardId]]);
      expect(await found('xn--e1afmkfd.example/%D0%BF%D1%83')).toEqual(['xn--e1afmkfd.example/%D0%BF%D1%83', [root.cardId]]);
      // Other hosts and paths are still told apart.
      expect(await found('munchen')).toEqual(['munchen', []]);
      expect(await found('xn--mnchen-3yb')).toEqual(['xn--mnchen-3yb', []]);
      // The card's link is returned as it was written.
      expect((await index.get(copied.cardId))!.link).toBe(copied.link);
      expect((await index.get(shown.cardId))!.link).toBe(shown.link);
    });

    test('the tag filter is case-insensitive in every script: ß and SS, final sigma, Turkish dotted and dotless i; other marks still count', async () => {
      const street = aCard().tagged('Straße').build();
      const sisyphus = aCard().tagged('ΣΊΣΥΦΟΣ').build();
      const istanbul = aCard().tagged('İstanbul').build();
      const light = aCard().tagged('ışık').build();
      const zoe = aCard().tagged('Zoë').build();
      for (const card of [street, sisyphus, istanbul, light, zoe]) await index.upsert(card);
      const ids = async (tag: string) => [tag, (await index.nearest(axis(0), { ...everything(), tags: [tag] }, firstPage)).hits.map((h) => h.cardId)];
      for (const tag of ['STRASSE', 'strasse', 'straße']) expect(await ids(tag)).toEqual([tag, [street.cardId]]);
      for (const tag of ['σίσυφος', 'σίσυφοσ', 'Σίσυφος']) expect(await ids(tag)).toEqual([tag, [sisyphus.cardId]]);
      for (const tag of ['istanbul', 'ISTANBUL', 'İSTANBUL']) expect(await ids(tag)).toEqual([tag, [istanbul.cardId]]);
      for (const tag of ['IŞIK', 'ışık']) expect(await ids(tag)).toEqual([tag, [light.cardId]]);
      expect(await ids('ZOË')).toEqual(['ZOË', [zoe.cardId]]);
      expect(await ids('zoe')).toEqual(['zoe', []]);
    });

    test("tag and link filters match a root through a collision the caller may see, never through someone else's private one", async () => {
      const owner = randomUUID();
      const root = aCard().saying('tides are caused by the moon').tagged('alpha').linking('https://alpha.example/x').along(axis(1)).build();
      const open = aCard().saying('tides are caused by the moon').tagged('Beta').linking('https://Beta.example/y').along(axis(1)).collisionOf(root.cardId).build();
      const hidden = aCard().by(owner).private().saying('tides are caused by the moon').tagged('gamma').linking('https://gamma.example/z').along(axis(1)).collisionOf(root.cardId).build();
      const other = aCard().saying('tides rise twice a day').tagged('delta').along(axis(1)).build();
      for (const card of [root, open, hidden, other]) await index.upsert(card);
      const collection = randomUUID();
      await index.setBookmark(collection, open.cardId, true, new Date('2026-01-02T00:00:00Z'));
      const found = async (scope: Partial<SearchScope>) => {
        const full = { ...everything(), ...scope };
        const semantic = (await index.nearest(axis(1), full, firstPage)).hits.map((h) => h.cardId).sort();
        const text = (await index.matchText('tides moon', full, firstPage)).hits.map((h) => h.cardId).sort();
        expect(text).toEqual(semantic);
        return semantic;
      };
      expect(await found({ tags: ['beta'] })).toEqual([root.cardId]);
      expect(await found({ links: ['beta.example'] })).toEqual([root.cardId]);
      expect(await found({ tags: ['alpha'] })).toEqual([root.cardId]);
      expect(await found({ tags: ['beta'], collectionId: collection })).toEqual([root.cardId]);
      expect(await found({ links: ['beta.example'], collectionId: collection })).toEqual([root.cardId]);
      // Both filters hold for one card of the entry, not each for a different one.
      expect(await found({ tags: ['beta'], links: ['alpha.example'] })).toEqual([]);
      expect(await found({ tags: ['gamma'] })).toEqual([]);
      expect(await found({ links: ['gamma.example'], callerId: randomUUID() })).toEqual([]);
      expect(await found({ tags: ['gamma'], callerId: owner })).toEqual([root.cardId]);
      expect(await found({ links: ['gamma.example'], callerId: owner })).toEqual([root.cardId]);
      // Promoted when its root goes, a collision no longer lends the old root anything.
      await index.remove(root.cardId, new Date('2026-02-01T00:00:00Z'));
      await index.promote(open.cardId);
      expect(await found({ tags: ['beta'] })).toEqual([open.cardId]);
      expect(await found({ tags: ['alpha'] })).toEqual([]);
    });

    test('a collision indexed before its root lends the root its tags once the root arrives', async () => {
      const root = aCard().saying('tides are caused by the moon').tagged('alpha').along(axis(1)).build();
      const early = aCard().saying('tides are caused by the moon').tagged('beta').along(axis(1)).collisionOf(root.cardId).build();
      await index.upsert(early);
      await index.upsert(root);
      const scope = { ...everything(), tags: ['beta'] };
      expect((await index.nearest(axis(1), scope, firstPage)).hits.map((h) => h.cardId)).toEqual([root.cardId]);
      expect((await index.matchText('tides moon', scope, firstPage)).hits.map((h) => h.cardId)).toEqual([root.cardId]);
      // Promoted while its root stays, it is found as a root of its own and lends the old root nothing.
      await index.promote(early.cardId);
      expect((await index.nearest(axis(1), scope, firstPage)).hits.map((h) => h.cardId)).toEqual([early.cardId]);
      expect((await index.matchText('tides moon', scope, firstPage)).hits.map((h) => h.cardId)).toEqual([early.cardId]);
    });

    test('link filter takes contained strings as long as a request may send (2,000 characters), runs of one character included', async () => {
      const long = aCard().linking(`https://example.org/${'a'.repeat(1500)}/End`).build();
      const short = aCard().linking(`https://example.org/${'a'.repeat(600)}/end`).build();
      const emoji = aCard().linking(`https://example.org/${'😀'.repeat(700)}`).build();
      const other = aCard().linking('https://example.org/b').build();
      for (const card of [long, short, emoji, other]) await index.upsert(card);
      const ids = async (links: string[]) => {
        const scope = { ...everything(), links };
        const semantic = await index.nearest(axis(0), scope, firstPage);
        const text = await index.matchText('plain card', scope, firstPage);
        const found = semantic.hits.map((h) => h.cardId).sort();
        expect(semantic.total).toBe(found.length);
        expect(text.hits.map((h) => h.cardId).sort()).toEqual(found);
        return found;
      };
      expect(await ids(['a'.repeat(1000)])).toEqual([long.cardId]);
      expect(await ids(['a'.repeat(600)])).toEqual([long.cardId, short.cardId].sort());
      expect(await ids([`${'A'.repeat(1000)}/END`])).toEqual([long.cardId]);
      expect(await ids([`/${'a'.repeat(600)}/e`])).toEqual([short.cardId]);
      expect(await ids(['😀'.repeat(650)])).toEqual([emoji.cardId]);
      // Pieces of the string all present apart (or overlapping) do not make the string.
      expect(await ids(['a'.repeat(1501)])).toEqual([]);
      expect(await ids([`${'a'.repeat(1999)}b`, '/b'])).toEqual([other.cardId]);
      // As many strings as a request may send (100).
      expect(await ids([...Array.from({ length: 99 }, (_, i) => `${i}${'a'.repeat(1990)}`), 'a'.repeat(1000)])).toEqual([long.cardId]);
    });

    test('collection scope: bookmarks from bookmark events, latest change wins', async () => {
      const collection = randomUUID();
      const bookmarkedFirst = aCard().build();
      const bookmarkedLater = aCard().build();
      const outside = aCard().build();
      await index.setBookmark(collection, bookmarkedFirst.cardId, true, new Date('2026-01-01T06:00:00Z'));
      for (const card of [bookmarkedFirst, bookmarkedLater, outside]) await index.upsert(card);
      await index.setBookmark(collection, bookmarkedLater.cardId, true, new Date('2026-01-02T00:00:00Z'));
      const scope = { ...everything(), collectionId: collection };
      const ids = async () => (await index.nearest(axis(0), scope, firstPage)).hits.map((h) => h.cardId).sort();
      expect(await ids()).toEqual([bookmarkedFirst.cardId, bookmarkedLater.cardId].sort());
      // A removal older than the addition changes nothing; a newer one removes.
      await index.setBookmark(collection, bookmarkedLater.cardId, false, new Date('2026-01-01T12:00:00Z'));
      expect(await ids()).toHaveLength(2);
      await index.setBookmark(collection, bookmarkedLater.cardId, false, new Date('2026-01-03T00:00:00Z'));
      expect(await ids()).toEqual([bookmarkedFirst.cardId]);
      // A bookmark that arrives before its card is remembered.
      const early = aCard().build();
      await index.setBookmark(collection, early.cardId, true, new Date('2026-01-04T00:00:00Z'));
      await index.upsert(early);
      expect(await ids()).toEqual([bookmarkedFirst.cardId, early.cardId].sort());
      expect((await index.matchText('plain card', scope, firstPage)).total).toBe(2);
    });

    test("a card's collections come from bookmark events alone: its updates, their replays and its promotion keep them", async () => {
      const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
      const root = aCard().saying('moraines mark where the glacier stopped').along(axis(5)).at('2026-01-01T00:00:00Z').build();
      const copy = aCard().saying('moraines mark where the glacier stopped, roughly').along(axis(5)).collisionOf(root.cardId).at('2026-01-01T00:00:00Z').build();
      const members = async (collectionId: string) => {
        const scope = { ...everything(), collectionId };
        const semantic = (await index.nearest(axis(5), scope, firstPage)).hits.map((h) => h.cardId).sort();
        expect((await index.matchText('moraines glacier', scope, firstPage)).hits.map((h) => h.cardId).sort()).toEqual(semantic);
        return semantic;
      };
      // The bookmark event of one collection comes before the card's created event (another topic), the next after it.
      await index.setBookmark(first, root.cardId, true, new Date('2026-01-01T00:00:01Z'));
      await index.upsert(root);
      await index.setBookmark(second, root.cardId, true, new Date('2026-01-01T00:00:02Z'));
      await index.upsert(copy);
      await index.setBookmark(third, copy.cardId, true, new Date('2026-01-01T00:00:03Z'));
      const edited = { ...root, content: 'terminal moraines mark where the glacier stopped', updatedAt: new Date('2026-01-02T00:00:00Z') };
      expect(await index.upsert(edited)).toBe(true);
      expect(await index.upsert(edited)).toBe(true);
      expect(await index.upsert(root)).toBe(false);
      expect((await index.get(root.cardId))!.collectionIds).toEqual([first, second].sort());
      expect(await members(first)).toEqual([root.cardId]);
      expect(await members(second)).toEqual([root.cardId]);
      // The collision is searched through its root until its root goes and it is promoted.
      expect(await members(third)).toEqual([root.cardId]);
      await index.remove(root.cardId, new Date('2026-01-03T00:00:00Z'));
      expect(await index.promote(copy.cardId)).toBe(true);
      expect(await members(third)).toEqual([copy.cardId]);
      // The collision made a root by an update event, as the cards service sends it: still in its collection.
      const { collisionOf: _formerRoot, ...detached } = copy;
      expect(await index.upsert({ ...detached, updatedAt: new Date('2026-01-03T00:00:00Z') })).toBe(true);
      expect(await members(third)).toEqual([copy.cardId]);
      expect((await index.get(copy.cardId))!.collectionIds).toEqual([third]);
      expect(await members(first)).toEqual([]);
      // A late bookmark event of the removed card brings nothing back.
      await index.setBookmark(second, root.cardId, true, new Date('2026-01-04T00:00:00Z'));
      expect(await members(second)).toEqual([]);
    });

    test('a card in more collections than one request reads (1,100), bookmarked before it is stored, is in every one of them through an update', async () => {
      const card = aCard().saying('a card that very many people keep').along(axis(6)).at('2026-01-01T00:00:00Z').build();
      const collections = Array.from({ length: 1_100 }, () => randomUUID());
      // Bookmark events read from their topic before the card's created event, as when the index is rebuilt from the log.
      for (let i = 0; i < collections.length; i += 50) {
        await Promise.all(collections.slice(i, i + 50).map((c, j) => index.setBookmark(c, card.cardId, true, new Date(Date.UTC(2025, 11, 1, 0, 0, i + j)))));
      }
      expect(await index.upsert(card)).toBe(true);
      expect(await index.upsert({ ...card, content: 'a card that very many people keep and read', updatedAt: new Date('2026-01-02T00:00:00Z') })).toBe(true);
      expect((await index.get(card.cardId))!.collectionIds).toEqual([...collections].sort());
      for (const c of [collections[0]!, collections[549]!, collections[1_099]!]) {
        expect((await index.nearest(axis(6), { ...everything(), collectionId: c }, firstPage)).hits.map((h) => h.cardId)).toEqual([card.cardId]);
      }
      await index.setBookmark(collections[1_099]!, card.cardId, false, new Date('2026-01-03T00:00:00Z'));
      expect((await index.nearest(axis(6), { ...everything(), collectionId: collections[1_099]! }, firstPage)).total).toBe(0);
      expect((await index.get(card.cardId))!.collectionIds).toHaveLength(1_099);
    }, 120_000);

    test('pages hold distinct cards in rank order and total counts every match', async () => {
      const cards = Array.from({ length: 30 }, (_, i) => aCard().saying(`shared words in card number ${i}`).along(axis(0, 1, i / 10)).build());
      for (const card of cards) await index.upsert(card);
      const p1 = await index.nearest(axis(0), everything(), { offset: 0, limit: 25 });
      const p2 = await index.nearest(axis(0), everything(), { offset: 25, limit: 25 });
      expect([p1.total, p2.total, p1.reachable]).toEqual([30, 30, 30]);
      expect(p1.hits).toHaveLength(25);
      expect(p2.hits).toHaveLength(5);
      expect(p1.hits.map((h) => h.cardId)).toEqual(cards.slice(0, 25).map((c) => c.cardId));
      expect(p2.hits.map((h) => h.cardId)).toEqual(cards.slice(25).map((c) => c.cardId));
      const t1 = await index.matchText('shared words', everything(), { offset: 0, limit: 25 });
      const t2 = await index.matchText('shared words', everything(), { offset: 25, limit: 25 });
      expect(t1.total).toBe(30);
      expect(new Set([...t1.hits, ...t2.hits].map((h) => h.cardId)).size).toBe(30);
      expect((await index.nearest(axis(0), everything(), { offset: 50, limit: 25 })).hits).toEqual([]);
      // The gateway's largest page (999,999,999): no hits, the same total, no error.
      const farOff = { offset: 999_999_998 * 25, limit: 25 };
      expect(await index.nearest(axis(0), everything(), farOff)).toEqual({ hits: [], total: 30, reachable: 30 });
      expect(await index.matchText('shared words', everything(), farOff)).toEqual({ hits: [], total: 30, reachable: 30 });
    });

    test('equal scores rank the newer card first (created_at), undated cards after every dated one, then by card id: in both searches, collection-scoped too, across a page boundary', async () => {
      // 30 cards with one score in both searches (the same words, the same vector), stored in an order unlike their rank:
      // 26 creation times in shuffled order (7i mod 26), two more at card 0's time (ranked by id), two without one
      // (stored before the index kept created_at).
      const base = Date.parse('2026-01-01T00:00:00Z');
      const collection = randomUUID();
      const cards = Array.from({ length: 30 }, (_, i) => {
        const card = aCard().saying(`galaxy note tied card ${i}`).along(axis(5));
        if (i < 26) card.createdAt(new Date(base + ((i * 7) % 26) * 60_000));
        else if (i < 28) card.createdAt(new Date(base));
        return card.build();
      });
      for (const card of cards) {
        await index.upsert(card);
        await index.setBookmark(collection, card.cardId, true, new Date('2026-01-02T00:00:00Z'));
      }
      // A later snapshot without created_at (from a producer before it was sent) keeps the stored one.
      await index.upsert({ ...cards[3]!, createdAt: undefined, updatedAt: new Date('2026-01-03T00:00:00Z') });
      const time = (c: IndexedCard) => c.createdAt?.getTime() ?? -Infinity;
      const expected = [...cards].sort((a, b) => (time(a) === time(b) ? (a.cardId < b.cardId ? -1 : 1) : time(b) - time(a))).map((c) => c.cardId);
      for (const scope of [everything(), { ...everything(randomUUID()), collectionId: collection }]) {
        for (const search of [(page: { offset: number; limit: number }) => index.nearest(axis(5), scope, page), (page: { offset: number; limit: number }) => index.matchText('galaxy note', scope, page)]) {
          const p1 = await search({ offset: 0, limit: 25 });
          const p2 = await search({ offset: 25, limit: 25 });
          expect([p1.total, p2.total]).toEqual([30, 30]);
          for (const hit of [...p1.hits, ...p2.hits]) expect(hit.score).toBeCloseTo(p1.hits[0]!.score, 6);
          expect(p1.hits.map((h) => h.cardId)).toEqual(expected.slice(0, 25));
          expect(p2.hits.map((h) => h.cardId)).toEqual(expected.slice(25));
          // Smaller pages cut the tie elsewhere and still hold the same order.
          const paged: string[] = [];
          for (let offset = 0; offset < 30; offset += 7) paged.push(...(await search({ offset, limit: 7 })).hits.map((h) => h.cardId));
          expect(paged).toEqual(expected);
        }
      }
    });

    test('full-text search tolerates misspellings and scores in [0, 1]', async () => {
      const target = aCard().saying('Perseverance landed in Jezero crater and carried a small helicopter').build();
      const other = aCard().saying('Sourdough starters need regular feeding with flour and water').build();
      await index.upsert(target);
      await index.upsert(other);
      const page = await index.matchText('perseverence jezzero helicoptr', everything(), firstPage);
      expect(page.hits[0]!.cardId).toBe(target.cardId);
      expect(page.total).toBe(1);
      for (const hit of page.hits) expect(hit.score).toBeGreaterThan(0);
      for (const hit of page.hits) expect(hit.score).toBeLessThanOrEqual(1);
      expect((await index.matchText('zzzqqq', everything(), firstPage)).total).toBe(0);
    });

    test("words of another user's private card change nothing in anyone else's full-text answers; its owner finds it, typos included", async () => {
      const carol = randomUUID();
      const bob = randomUUID();
      for (const text of ['the volcano erupted over zanzibar at dawn', 'a quokka smiled near the volcano', 'a glacier carved the valley', 'spice markets of zanzibar sell cloves']) {
        await index.upsert(aCard().saying(text).build());
      }
      await index.upsert(aCard().by(bob).private().saying('my notes on the volcano and the quokka').build());
      // Her rare word (known to her only), a typo of it, the rare word beside a common one (word weights), and a typo of
      // a public word next to six closer spellings only her card holds (which variants a typo takes).
      const queries = ['zanzibarquokka', 'zanzibarquoka', 'volcano zanzibarquokka', 'glaciar'];
      const callers = [undefined, bob, randomUUID()];
      const answers = async () => {
        const out: unknown[] = [];
        for (const caller of callers) for (const query of queries) out.push({ caller, query, page: await index.matchText(query, everything(caller), firstPage) });
        return out;
      };
      const before = await answers();
      const secret = aCard().by(carol).private().saying('the zanzibarquokka memo: glaciare glaciara glaciars glaciarz glaciarr glaciary near the volcano').build();
      await index.upsert(secret);
      expect(await answers()).toEqual(before);
      for (const query of ['zanzibarquokka', 'zanzibarquoka', 'volcano zanzibarquokka']) {
        expect({ query, first: (await index.matchText(query, everything(carol), firstPage)).hits[0]?.cardId }).toEqual({ query, first: secret.cardId });
      }
      // Made public, her card's words count for everyone; made private again, for her alone.
      await index.upsert({ ...secret, private: false, updatedAt: new Date('2026-01-02T00:00:00Z') });
      expect((await index.matchText('zanzibarquoka', everything(), firstPage)).hits[0]?.cardId).toBe(secret.cardId);
      await index.upsert({ ...secret, private: true, content: 'the zanzibarquokka memo', updatedAt: new Date('2026-01-03T00:00:00Z') });
      expect(await answers()).toEqual(before);
    });

    test("names of another user's private cards change nothing in anyone else's answers to a query of names (its terms, their weights, namesFloor)", async () => {
      const carol = randomUUID();
      for (const text of ['We moved the services from C# to F# on .NET last year', 'Ported the build scripts from C++ to C#', 'Modern C++ templates', 'Streams in node.js', 'The .NET runtime', 'Pipelines in F#']) {
        await index.upsert(aCard().saying(text).build());
      }
      // Names only her cards hold (Q#, J#, zig++), names public cards hold too (C++, C#, F#, node.js: their weights), and
      // the parts alone (q, j).
      const queries = ['C++ C# F# .NET node.js', 'C++ C# Q# J#', 'Q# J# zig++', 'C++ C# F# Q#', 'F# .NET Q# J# zig++ node.js'];
      const callers = [undefined, randomUUID()];
      const answers = async () => {
        const out: unknown[] = [];
        for (const caller of callers) for (const query of queries) out.push({ caller, query, page: await index.matchText(query, everything(caller), firstPage) });
        return out;
      };
      const before = await answers();
      const secrets = [
        aCard().by(carol).private().saying('Quantum kernels in Q# and J# beside zig++').build(),
        aCard().by(carol).private().saying('My C++ C# F# node.js notes, and Q# too').build(),
        aCard().by(carol).private().saying('The letters Q and J and a net').build(),
      ];
      for (const card of secrets) await index.upsert(card);
      expect(await answers()).toEqual(before);
      // Hers, the names count: her card naming Q# and J# is first for her.
      expect((await index.matchText('Q# J# zig++', everything(carol), firstPage)).hits[0]?.cardId).toBe(secrets[0]!.cardId);
    });

    test("a query word only another user's private card holds is left out for everyone else as one no card holds (heldQueryWords), in a collection holding that card too", async () => {
      // Whether a word is left out of the score is decided on the words the caller may see: her private card must not
      // keep "zebrafoo" in another caller's query (there it would weigh against every card) nor change a joined or
      // phrased form's answer, in the library or in her public collection bookmarking the private card beside others.
      const carol = randomUUID();
      const collection = randomUUID();
      const tides = aCard().by(carol).saying('The tides rise and fall with the pull of the Moon').build();
      const days = aCard().saying('A day on the Moon lasts about a month of Earth days').build();
      for (const card of [tides, days, aCard().saying('Bread rises because yeast makes gas').build()]) await index.upsert(card);
      for (const card of [tides, days]) await index.setBookmark(collection, card.cardId, true, new Date('2026-01-02T00:00:00Z'));
      const queries = ['tides zebrafoo', 'zebrafoo', 'tides-zebrafoo', 'moon tides zebrafo', 'pull of the zebrafoo moon'];
      const callers = [undefined, randomUUID()];
      const answers = async () => {
        const out: unknown[] = [];
        for (const caller of callers) {
          for (const scope of [everything(caller), { ...everything(caller), collectionId: collection }]) {
            for (const query of queries) out.push({ caller, collectionId: scope.collectionId, query, page: await index.matchText(query, scope, firstPage) });
          }
        }
        return out;
      };
      const before = await answers();
      expect(before[0]).toMatchObject({ page: { total: 1, hits: [{ cardId: tides.cardId, score: 1 }] } });
      const secret = aCard().by(carol).private().saying('zebrafoo notes about the tides and the moon').build();
      await index.upsert(secret);
      await index.setBookmark(collection, secret.cardId, true, new Date('2026-01-03T00:00:00Z'));
      expect(await answers()).toEqual(before);
      // Hers, the word counts: her card is first.
      expect((await index.matchText('tides zebrafoo', { ...everything(carol), collectionId: collection }, firstPage)).hits[0]?.cardId).toBe(secret.cardId);
    });

    test('a misspelling ranks the word fewer edits away first: one edit above two, at about the same length', async () => {
      const oneEdit = aCard().saying('photosynthesis feeds the plant').build();
      const twoEdits = aCard().saying('leaves photosynthesise in daylight').build();
      await index.upsert(twoEdits);
      await index.upsert(oneEdit);
      const page = await index.matchText('photosynthsis', everything(), firstPage);
      expect(page.hits.map((h) => h.cardId)).toEqual([oneEdit.cardId, twoEdits.cardId]);
      expect(page.hits[0]!.score).toBeGreaterThan(page.hits[1]!.score);
    });

    test('a short word no card holds takes no word two edits away, nor one with another first letter; typos of short words still match', async () => {
      for (const text of ['both sides agree with the plan', 'the king was kind enough not to kill', 'we run by the river', 'over the hill at ten per day', 'take care of the mass of the card']) {
        await index.upsert(aCard().saying(text).build());
      }
      // Four letters: one letter changed is another word (cafe/care, mars/mass, cart/card), not a typo; two swapped is one.
      for (const query of ['moth', 'kiwi', 'ruby', 'opera', 'cafe', 'mars', 'cart']) {
        expect({ query, total: (await index.matchText(query, everything(), firstPage)).total }).toEqual({ query, total: 0 });
      }
      const typos: [string, string][] = [
        ['recieve', 'you will receive a letter'],
        ['wagle', 'bees waggle to show the way'],
        ['bnod', 'a bond pays a coupon'],
        ['slepe', 'deep sleep restores memory'],
        ['fotosynthesis', 'photosynthesis in green leaves'],
        ['fragmnets', 'okazaki fragments on the lagging strand'],
      ];
      const ids = new Map<string, string>();
      for (const [query, text] of typos) {
        const card = aCard().saying(text).build();
        ids.set(query, card.cardId);
        await index.upsert(card);
      }
      for (const [query] of typos) {
        expect({ query, first: (await index.matchText(query, everything(), firstPage)).hits[0]?.cardId }).toEqual({ query, first: ids.get(query) });
      }
    });

    test('full-text search folds diacritics in both directions, words and phrases; the stored text keeps them', async () => {
      const cafe = aCard().saying('Meet me at the Café on Zürich lake').build();
      const resume = aCard().saying('send your resume to the Strasse office').build();
      const naive = aCard().saying('a naïve ﬁrst attempt').build();
      for (const card of [cafe, resume, naive]) await index.upsert(card);
      const first = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId) });
      expect(await first('cafe')).toEqual({ query: 'cafe', found: [cafe.cardId] });
      expect(await first('CAFÉ')).toEqual({ query: 'CAFÉ', found: [cafe.cardId] });
      expect(await first('zurich')).toEqual({ query: 'zurich', found: [cafe.cardId] });
      expect(await first('résumé')).toEqual({ query: 'résumé', found: [resume.cardId] });
      expect(await first('Straße')).toEqual({ query: 'Straße', found: [resume.cardId] });
      expect(await first('naive first')).toEqual({ query: 'naive first', found: [naive.cardId] });
      // The phrase bonus too: the whole query held in a row, whatever its accents.
      const phrase = await index.matchText('cafe on zurich', everything(), firstPage);
      const scattered = await index.matchText('zurich on cafe', everything(), firstPage);
      expect(phrase.hits[0]!.score).toBeGreaterThan(scattered.hits[0]!.score);
      expect((await index.get(cafe.cardId))!.content).toBe('Meet me at the Café on Zürich lake');
    });

    test('full-text search finds a word inside unspaced Chinese, Japanese and Thai text, words and phrases, and corrects no CJK "typo"', async () => {
      const park = aCard().saying('我们今天去公园散步').build();
      const library = aCard().saying('图书馆里有很多书').build();
      const tower = aCard().saying('昨日、東京タワーに行きました。').build();
      const weather = aCard().saying('สวัสดีครับวันนี้อากาศดี').build();
      const english = aCard().saying('a walk in the park today').build();
      for (const card of [park, library, tower, weather, english]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId) });
      expect(await found('公园')).toEqual({ query: '公园', found: [park.cardId] });
      expect(await found('去公园散步')).toEqual({ query: '去公园散步', found: [park.cardId] });
      expect(await found('图书馆')).toEqual({ query: '图书馆', found: [library.cardId] });
      expect(await found('タワー')).toEqual({ query: 'タワー', found: [tower.cardId] });
      expect(await found('東京タワー')).toEqual({ query: '東京タワー', found: [tower.cardId] });
      expect(await found('ﾀﾜｰ')).toEqual({ query: 'ﾀﾜｰ', found: [tower.cardId] });
      expect(await found('อากาศ')).toEqual({ query: 'อากาศ', found: [weather.cardId] });
      expect(await found('park 公园')).toEqual({ query: 'park 公园', found: expect.arrayContaining([park.cardId, english.cardId]) });
      // One character changed is another word, not a typo: 公司 (company) and 花园 (garden) are no 公园 (park).
      expect(await found('公司')).toEqual({ query: '公司', found: [] });
      expect(await found('花园')).toEqual({ query: '花园', found: [] });
      // The characters in a row rank above the same characters scattered.
      const scattered = aCard().saying('园 散步 公 去').build();
      await index.upsert(scattered);
      const page = await index.matchText('公园散步', everything(), firstPage);
      expect(page.hits[0]!.cardId).toBe(park.cardId);
    });

    test('full-text search reads Hindi, Bengali and Tamil words whole (vowel signs are marks), and Arabic and Hebrew with or without their vowel marks', async () => {
      const hindi = aCard().saying('हिन्दी भारत की एक प्रमुख भाषा है').build();
      const delhi = aCard().saying('दिल्ली में आज मौसम साफ़ रहा').build();
      const bengali = aCard().saying('বাংলা ভাষা খুব সুন্দর').build();
      const tamil = aCard().saying('தமிழ் மொழி மிகவும் பழமையானது').build();
      const book = aCard().saying('كِتَابٌ جَمِيلٌ عَنِ التَّارِيخِ').build();
      const school = aCard().saying('ذهبت إلى المدرسة اليوم').build();
      const genesis = aCard().saying('בְּרֵאשִׁית בָּרָא אֱלֹהִים').build();
      for (const card of [hindi, delhi, bengali, tamil, book, school, genesis]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId) });
      expect(await found('हिन्दी')).toEqual({ query: 'हिन्दी', found: [hindi.cardId] });
      // Delhi is in one card only: cut at its marks, it was the letters द ल of every Hindi card.
      expect(await found('दिल्ली')).toEqual({ query: 'दिल्ली', found: [delhi.cardId] });
      expect(await found('भाषा')).toEqual({ query: 'भाषा', found: [hindi.cardId] });
      // Hindi's two spellings of a nasal (न् or the anusvara), and a nukta left out: one word.
      expect(await found('हिंदी')).toEqual({ query: 'हिंदी', found: [hindi.cardId] });
      expect(await found('साफ')).toEqual({ query: 'साफ', found: [delhi.cardId] });
      expect(await found('ভাষা')).toEqual({ query: 'ভাষা', found: [bengali.cardId] });
      expect(await found('தமிழ்')).toEqual({ query: 'தமிழ்', found: [tamil.cardId] });
      expect(await found('كتاب')).toEqual({ query: 'كتاب', found: [book.cardId] });
      expect(await found('التاريخ')).toEqual({ query: 'التاريخ', found: [book.cardId] });
      expect(await found('المَدْرَسَة')).toEqual({ query: 'المَدْرَسَة', found: [school.cardId] });
      expect(await found('בראשית ברא')).toEqual({ query: 'בראשית ברא', found: [genesis.cardId] });
      const phrase = await index.matchText('كتاب جميل', everything(), firstPage);
      expect(phrase.hits.map((h) => [h.cardId, h.score])).toEqual([[book.cardId, 1]]);
    });

    test('full-text search finds an Arabic word with or without its article and a Hebrew word with or without its prefixes, the word as written first', async () => {
      const theBook = aCard().saying('قرأت الكتاب في المكتبة').build();
      const aBook = aCard().saying('هذا كتاب مفيد').build();
      const andTheSchool = aCard().saying('ذهبنا إلى البيت والمدرسة').build();
      const theLanguage = aCard().saying('השפה העברית היא שפה עתיקה').build();
      const inTheHouse = aCard().saying('הילדים משחקים ובבית יש שקט').build();
      const house = aCard().saying('בית גדול ליד הים').build();
      for (const card of [theBook, aBook, andTheSchool, theLanguage, inTheHouse, house]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId) });
      expect(await found('كتاب')).toEqual({ query: 'كتاب', found: [aBook.cardId, theBook.cardId] });
      expect(await found('الكتاب')).toEqual({ query: 'الكتاب', found: [theBook.cardId, aBook.cardId] });
      expect(await found('مدرسة')).toEqual({ query: 'مدرسة', found: [andTheSchool.cardId] });
      // ברית (covenant) is no word of העברית: ע is no prefix.
      expect(await found('ברית')).toEqual({ query: 'ברית', found: [] });
      expect(await found('עברית')).toEqual({ query: 'עברית', found: [theLanguage.cardId] });
      expect(await found('בית')).toEqual({ query: 'בית', found: [house.cardId, inTheHouse.cardId] });
      // Both hold the house without "the": alike (PREFIX_MATCH), in either order.
      expect(await found('הבית')).toEqual({ query: 'הבית', found: expect.arrayContaining([house.cardId, inTheHouse.cardId]) });
      expect((await found('הבית')).found).toHaveLength(2);
      // Two letters never lose a prefix: ית is no word of בית.
      expect(await found('ית')).toEqual({ query: 'ית', found: [] });
    });

    test('full-text search finds a Korean noun bare, with another particle or misspelled, whatever particle the card wrote after it', async () => {
      const school = aCard().saying('학교에서 공부를 했다').build();
      const library = aCard().saying('어제 도서관에 갔다').build();
      const apple = aCard().saying('사과를 먹었다').build();
      const english = aCard().saying('went to school and then the library').build();
      for (const card of [school, library, apple, english]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId) });
      expect(await found('학교')).toEqual({ query: '학교', found: [school.cardId] });
      expect(await found('학교를')).toEqual({ query: '학교를', found: [school.cardId] });
      expect(await found('공부')).toEqual({ query: '공부', found: [school.cardId] });
      expect(await found('도서관')).toEqual({ query: '도서관', found: [library.cardId] });
      expect(await found('도서관에서')).toEqual({ query: '도서관에서', found: [library.cardId] });
      expect(await found('사과')).toEqual({ query: '사과', found: [apple.cardId] });
      // A letter (jamo) off: 도서곽 for 도서관, 학꾜 for 학교.
      expect(await found('도서곽')).toEqual({ query: '도서곽', found: [library.cardId] });
      expect(await found('학꾜')).toEqual({ query: '학꾜', found: [school.cardId] });
      expect(await found('컴퓨터')).toEqual({ query: '컴퓨터', found: [] });
      // The phrase bonus whatever the particles: the nouns in a row rank above the same nouns scattered.
      const scattered = aCard().saying('공부 그리고 학교').build();
      await index.upsert(scattered);
      const page = await index.matchText('학교의 공부', everything(), firstPage);
      expect(page.hits.map((h) => h.cardId)).toEqual([school.cardId, scattered.cardId]);
      expect((await index.get(school.cardId))!.content).toBe('학교에서 공부를 했다');
    });

    test('full-text search finds a one-syllable Korean noun with or without its particle, cuts no noun that ends like a particle, and ranks the word as written first', async () => {
      const village = aCard().saying('마을 사람들이 모두 광장에 모였다').build(); // The village people all gathered in the square.
      const yam = aCard().saying('시장에서 마 한 뿌리를 샀다').build(); // I bought a yam (마) at the market.
      const home = aCard().saying('비가 와서 집에 일찍 돌아왔다').build(); // It rained, so I came home (집에) early.
      const house = aCard().saying('우리 집 앞에 큰 나무가 있다').build(); // A big tree stands in front of our house (집).
      const cat = aCard().saying('고양이가 소파에서 잔다').build(); // The cat (고양이) sleeps on the sofa.
      const goyang = aCard().saying('친구는 고양에 산다').build(); // My friend lives in Goyang (고양).
      const person = aCard().saying('그 사람은 정말 친절하다').build(); // That person (사람) is really kind.
      for (const card of [village, yam, home, house, cat, goyang, person]) await index.upsert(card);
      const ranked = async (query: string) => {
        const hits = (await index.matchText(query, everything(), firstPage)).hits;
        return { query, found: hits.map((h) => h.cardId), strictlyRanked: hits.every((h, i) => i === 0 || hits[i - 1]!.score > h.score) };
      };
      // A one-syllable noun and its particle: found both ways, the word as the query writes it first.
      expect(await ranked('집')).toEqual({ query: '집', found: [house.cardId, home.cardId], strictlyRanked: true });
      expect(await ranked('집에')).toEqual({ query: '집에', found: [home.cardId, house.cardId], strictlyRanked: true });
      // 마을 ("village") is no 마 ("yam") with the particle 을: each finds its own card first, the other one only below.
      expect(await ranked('마을')).toEqual({ query: '마을', found: [village.cardId, yam.cardId], strictlyRanked: true });
      expect(await ranked('마')).toEqual({ query: '마', found: [yam.cardId, village.cardId], strictlyRanked: true });
      expect((await ranked('마을에서')).found[0]).toBe(village.cardId);
      // 고양이 ("cat") ends like 이: the cat above the city of Goyang, which a particle after 고양 would also give.
      expect(await ranked('고양이')).toEqual({ query: '고양이', found: [cat.cardId, goyang.cardId], strictlyRanked: true });
      expect((await ranked('고양')).found.sort()).toEqual([cat.cardId, goyang.cardId].sort());
      // The plural 들 and a particle after it: 사람들이 holds 사람 ("person"), and 사람들 ranks the card saying it first.
      expect((await ranked('사람')).found.sort()).toEqual([village.cardId, person.cardId].sort());
      expect(await ranked('사람들')).toEqual({ query: '사람들', found: [village.cardId, person.cardId], strictlyRanked: true });
      // Cards holding every query word score alike no more (as written, or the stem only): each is ranked, the phrase
      // first; 친구는 고양에 holds one of the words, by its stem.
      const met = aCard().saying('학교에서 친구를 만났다').build(); // I met a friend at school.
      const reversed = aCard().saying('친구를 학교에서 다시 만났다').build(); // I met the friend at school again.
      const other = aCard().saying('학교를 마치고 친구를 만났다').build(); // After school I met a friend.
      for (const card of [other, reversed, met]) await index.upsert(card);
      expect(await ranked('학교에서 친구를')).toEqual({ query: '학교에서 친구를', found: [met.cardId, reversed.cardId, other.cardId, goyang.cardId], strictlyRanked: true });
      // An edited card is listed under its new words only, the forms of its Korean words included.
      await index.upsert({ ...home, content: '비가 와서 일찍 돌아왔다', updatedAt: new Date('2026-01-02T00:00:00Z') });
      expect(await ranked('집')).toEqual({ query: '집', found: [house.cardId], strictlyRanked: true });
    });

    test('a one-character Chinese or Japanese query finds the cards holding that character (alone or inside a passage); a card holding two such characters ranks first', async () => {
      const history = aCard().saying('一本关于中国历史的书').build();
      const library = aCard().saying('图书馆里有很多人').build();
      const books = aCard().saying('日本の本を読みました').build();
      const water = aCard().saying('我喜欢喝水').build();
      const lone = aCard().saying('书 and a few English words').build();
      const english = aCard().saying('a book about the history of China').build();
      for (const card of [history, library, books, water, lone, english]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId).sort() });
      expect(await found('书')).toEqual({ query: '书', found: [history.cardId, library.cardId, lone.cardId].sort() });
      expect(await found('人')).toEqual({ query: '人', found: [library.cardId] });
      expect(await found('水')).toEqual({ query: '水', found: [water.cardId] });
      expect(await found('本')).toEqual({ query: '本', found: [history.cardId, books.cardId].sort() });
      expect(await found('猫')).toEqual({ query: '猫', found: [] });
      // Two one-character words: a card holding both ranks first.
      const both = (await index.matchText('书 人', everything(), firstPage)).hits.map((h) => h.cardId);
      expect(both[0]).toBe(library.cardId);
      expect(both).toEqual(expect.arrayContaining([history.cardId, lone.cardId]));
    });

    test('a soft hyphen inside a word breaks it neither in a query nor in a card', async () => {
      const stored = aCard().saying('an old card with a soft\u00ADhyphen kept in its text').build();
      const plain = aCard().saying('a card about the hyphenation of words').build();
      const german = aCard().saying('Die Silben\u00ADtrennung im Wörter\u00ADbuch').build();
      for (const card of [stored, plain, german]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId) });
      expect(await found('soft\u00ADhyphen')).toEqual({ query: 'soft\u00ADhyphen', found: [stored.cardId] });
      expect(await found('softhyphen')).toEqual({ query: 'softhyphen', found: [stored.cardId] });
      expect(await found('Wörterbuch')).toEqual({ query: 'Wörterbuch', found: [german.cardId] });
      expect(await found('silben\u00ADtrennung')).toEqual({ query: 'silben\u00ADtrennung', found: [german.cardId] });
    });

    test("a card holding the query's most telling word alone is found, while cards holding only less telling words are not", async () => {
      // The rare word's share of a four-word query (0.27) was under the 0.3 floor, so the only card saying "pompeii" was
      // left out while cards sharing "destroyed" and "that" were found.
      const pompeii = aCard().saying('the eruption buried pompeii under ash and pumice').build();
      const fire = aCard().saying('a fire that destroyed the old mill by the river').build();
      const storm = aCard().saying('storms that destroyed the harbour walls last winter').build();
      const slopes = aCard().saying('volcanoes that sleep for centuries can wake again').build();
      const soil = aCard().saying('farmers grow rice on volcanoes with rich soil').build();
      const others = ['notes that matter most', 'a song that everyone knows', 'glaciers carve deep valleys'].map((text) => aCard().saying(text).build());
      for (const card of [pompeii, fire, storm, slopes, soil, ...others]) await index.upsert(card);
      const page = await index.matchText('volcano that destroyed pompeii', everything(), firstPage);
      expect(page.hits.map((h) => h.cardId).sort()).toEqual([pompeii.cardId, fire.cardId, storm.cardId, slopes.cardId].sort());
      expect(page.total).toBe(4);
      // Alone, a less telling word ("volcano" as "volcanoes", "that") is not enough.
      expect(page.hits.map((h) => h.cardId)).not.toContain(soil.cardId);
    });

    test("a query whose most telling word no card holds finds nothing by its common words alone", async () => {
      // "card-<id>" of a card never stored: "card" is in every card, the id in none. The floor was lowered to what
      // "card" gave alone (0.23 with four cards), so every card matched.
      const cards = ['3f9a1c7e5b2d', '77c0de41aa90', 'b81e22f0c3d4', '0c4d9e8f7a6b'].map((id) => aCard().saying(`card-${id} lantern harbor glacier`).build());
      for (const card of cards) await index.upsert(card);
      expect((await index.matchText('card-e5d4c3b2a190', everything(), firstPage)).hits).toEqual([]);
      expect((await index.matchText('card-77c0de41aa90', everything(), firstPage)).hits.map((h) => h.cardId)).toEqual([cards[1]!.cardId]);
    });

    test('a query word no card holds, not even misspelled, is searched as if not written: the cards matching the rest are found and ranked as without it', async () => {
      // It weighed in the score's denominator: "tides qwertyuiop zebra" found nothing beside a card about tides, "moon
      // tides qwertyuiop" one card of two, "C++ or C" nothing where no card says "or".
      const tides = aCard().saying('The tides rise and fall with the pull of the Moon').build();
      const glaciers = aCard().saying('Glaciers carve deep valleys over thousands of years').build();
      const bread = aCard().saying('Bread rises because yeast makes gas').build();
      const days = aCard().saying('A day on the Moon lasts about a month of Earth days').build();
      const volcanoes = aCard().saying('Volcanoes can sleep for centuries').build();
      for (const card of [tides, glaciers, bread, days, volcanoes]) await index.upsert(card);
      const search = async (query: string) => {
        const page = await index.matchText(query, everything(), firstPage);
        return { total: page.total, hits: page.hits.map((h) => ({ cardId: h.cardId, score: Math.round(h.score * 1000) / 1000 })) };
      };
      expect(await search('tides qwertyuiop zebra')).toEqual(await search('tides'));
      expect((await search('tides qwertyuiop zebra')).hits.map((h) => h.cardId)).toEqual([tides.cardId]);
      expect(await search('tides, Xylophone!')).toEqual(await search('tides'));
      const moonTides = await search('moon tides');
      expect(moonTides.hits.map((h) => h.cardId)).toEqual([tides.cardId, days.cardId]);
      expect(await search('moon tides qwertyuiop')).toEqual(moonTides);
      expect(await search('moon qwertyuiop tides zebrafoo')).toEqual(moonTides);
      // The phrase of the words left: "pull of the moon" in a row.
      expect(await search('pull of the qwertyuiop moon')).toEqual(await search('pull of the moon'));
      // A query of such words alone finds nothing, as before.
      expect(await search('qwertyuiop zebrafoo')).toEqual({ total: 0, hits: [] });
      // A misspelling of a word some card holds still counts as that word, in the score and its denominator.
      const breadTides = await search('bread tydes');
      expect(breadTides.hits.map((h) => h.cardId)).toEqual([bread.cardId, tides.cardId]);
      expect(breadTides.hits[0]!.score).toBeLessThan(0.5);
      // A word joined to others counts as before when some card holds one of them: "tides-qwertyuiop" names a thing no
      // card holds; an unknown joined run beside known words ("card-e5d4c3b2a190 tides") is left out whole.
      expect((await search('tides-qwertyuiop')).hits.every((h) => h.score < 0.5)).toBe(true);
      expect(await search('card-e5d4c3b2a190 tides')).toEqual(await search('tides'));
    });

    test('"C++ or C" finds the cards saying C++ or C where no card says "or"', async () => {
      const plus = aCard().saying('C++ templates are resolved at compile time').build();
      const c = aCard().saying('Pointers in C hold addresses').build();
      const rust = aCard().saying('Rust ownership rules prevent data races').build();
      for (const card of [plus, c, rust]) await index.upsert(card);
      const page = await index.matchText('C++ or C', everything(), firstPage);
      // "C" written alone matches both alike (the name and the part), so they tie.
      expect(page.hits.map((h) => h.cardId).sort()).toEqual([plus.cardId, c.cardId].sort());
      expect(page.hits.map((h) => h.score)).toEqual((await index.matchText('C++ C', everything(), firstPage)).hits.map((h) => h.score));
    });

    test('in a long query one telling word alone is not enough: a pasted text finds the card holding it, not every card sharing a word of it', async () => {
      const rocks = 'granite basalt quartz marble slate shale gneiss schist';
      // Each query word is held by one card: "schist" weighs as much as any other, 1/8 of the query.
      const whole = aCard().saying('a field guide to granite basalt quartz marble slate shale gneiss and other rocks').build();
      const oneWord = aCard().saying('the schist outcrop above the village').build();
      const filler = aCard().saying('a quiet village by the sea').build();
      for (const card of [whole, oneWord, filler]) await index.upsert(card);
      const page = await index.matchText(rocks, everything(), firstPage);
      expect(page.hits.map((h) => h.cardId)).toEqual([whole.cardId]);
      expect(page.total).toBe(1);
    });

    test('a pasted text finds the cards it came from first, whole or in part, joined, in the middle of other prose or with typos, and not every card', async () => {
      // Each labelled card is ~80 words of real prose; topics come in threes sharing vocabulary. A paste used only its
      // first 32 distinct words under the fixed floor of 0.3: the second of two joined cards, a card a third of a
      // paste and a card after a paragraph no card holds were not found.
      const ids = new Map<string, string>();
      for (const labelled of LABELLED_CARDS) {
        const card = aCard().saying(labelled.content).build();
        ids.set(labelled.content, card.cardId);
        await index.upsert(card);
      }
      const texts = LABELLED_CARDS.map((c) => c.content);
      const failures: string[] = [];
      const check = async (what: string, query: string, sources: string[]) => {
        const page = await index.matchText(query, everything(), firstPage);
        const first = page.hits.slice(0, sources.length).map((h) => h.cardId).sort();
        const wanted = sources.map((text) => ids.get(text)!).sort();
        if (JSON.stringify(first) !== JSON.stringify(wanted)) failures.push(`${what}: first ${page.hits.length} hits lack a source`);
        // Still not every card: the sources and a few of their topic's cards at most.
        if (page.total > sources.length + 4) failures.push(`${what}: ${page.total} of ${texts.length} cards matched`);
      };
      // One card of each topic of three (in turn its first, second and third), with cards of other topics.
      for (let topic = 0; topic * 3 < texts.length; topic++) {
        const i = topic * 3 + (topic % 3);
        const text = texts[i]!;
        const half = text.split(' ');
        await check(`card ${i}`, text, [text]);
        await check(`second half of card ${i}`, half.slice(Math.floor(half.length / 2)).join(' '), [text]);
        await check(`card ${i} with typos`, withTypos(text), [text]);
        await check(`card ${i} inside other prose`, `${UNINDEXED_BEFORE} ${text} ${UNINDEXED_AFTER}`, [text]);
        // Cards of other topics (a topic's three cards share words), two and three joined.
        const other = texts[(i + 4) % texts.length]!;
        const third = texts[(i + 8) % texts.length]!;
        await check(`cards ${i} and ${(i + 4) % texts.length} joined`, `${text} ${other}`, [text, other]);
        await check(`cards ${i}, ${(i + 4) % texts.length} and ${(i + 8) % texts.length} joined, with typos`, withTypos(`${text} ${other} ${third}`), [text, other, third]);
      }
      expect(failures).toEqual([]);
      // A paste of text no card holds finds few cards (those sharing a fifth of its telling words: 2 of 24), low.
      const unheld = await index.matchText(`${UNINDEXED_BEFORE} ${UNINDEXED_AFTER}`, everything(), firstPage);
      expect(unheld.total).toBeLessThanOrEqual(texts.length / 10);
      for (const hit of unheld.hits) expect(hit.score).toBeLessThan(0.25);
    });

    test('a query of emoji or other symbols finds the cards holding them, in a row first; one of punctuation alone finds nothing', async () => {
      const waves = aCard().saying('Surf report: big swell at dawn 🌊🔥 bring the long board').build();
      const apart = aCard().saying('🔥 campfire stories, then a swim 🌊 at night').build();
      const star = aCard().saying('The critics rated it ★★★★ and the crowd loved it ♥').build();
      const plain = aCard().saying('surf report for the weekend, calm sea and no swell').build();
      const keycap = aCard().saying('family trip 👨‍👩‍👧 to the sea, thumbs up 👍🏽').build();
      for (const card of [waves, apart, star, plain, keycap]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId) });
      expect(await found('🌊🔥')).toEqual({ query: '🌊🔥', found: [waves.cardId, apart.cardId] });
      expect((await found('🌊')).found.sort()).toEqual([apart.cardId, waves.cardId].sort());
      expect(await found('★')).toEqual({ query: '★', found: [star.cardId] });
      expect(await found('♥')).toEqual({ query: '♥', found: [star.cardId] });
      // Variation selectors, joiners and skin tones do not count: the pictographs do.
      expect(await found('👍')).toEqual({ query: '👍', found: [keycap.cardId] });
      expect(await found('👩\u200d👧')).toEqual({ query: '👩\u200d👧', found: [keycap.cardId] });
      expect((await found('🌊\ufe0f')).found.sort()).toEqual([apart.cardId, waves.cardId].sort());
      // A symbol is a word among the others: the card holding both first, then those holding one (tied).
      const mixed = (await found('surf 🌊')).found;
      expect([mixed[0], mixed.slice(1).sort()]).toEqual([waves.cardId, [plain.cardId, apart.cardId].sort()]);
      expect(await found('🐙')).toEqual({ query: '🐙', found: [] });
      expect(await found('!!! ... ---')).toEqual({ query: '!!! ... ---', found: [] });
    });

    test('a name written with signs (C++, C#, F#, .NET, node.js, C++17) finds the cards holding it first, then those holding its parts; "C" alone finds both', async () => {
      const { cpp, cpp17, sharp, c, fsharp, dotnet, net, nodejs, apart, nodeOnly } = namingCards();
      for (const card of [cpp, cpp17, sharp, c, fsharp, dotnet, net, nodejs, apart, nodeOnly]) await index.upsert(card);
      const ranked = async (query: string) => (await index.matchText(query, everything(), firstPage)).hits;
      /** The hits in groups of one score, best first, each group's ids sorted (ties may come in any order). */
      const groups = async (query: string) => {
        const out: string[][] = [];
        let last: number | undefined;
        for (const hit of await ranked(query)) {
          if (last === undefined || Math.abs(hit.score - last) > 1e-4) out.push([]);
          out[out.length - 1]!.push(hit.cardId);
          last = hit.score;
        }
        return { query, groups: out.map((g) => g.sort()) };
      };
      // The cards saying C++ (C++17 is C++ too) first; those holding only its part "c", lower.
      expect(await groups('C++')).toEqual({ query: 'C++', groups: [[cpp.cardId, cpp17.cardId].sort(), [sharp.cardId, c.cardId].sort()] });
      expect(await groups('c++')).toEqual({ query: 'c++', groups: [[cpp.cardId, cpp17.cardId].sort(), [sharp.cardId, c.cardId].sort()] });
      expect(await groups('C#')).toEqual({ query: 'C#', groups: [[sharp.cardId], [cpp.cardId, cpp17.cardId, c.cardId].sort()] });
      expect(await groups('F#')).toEqual({ query: 'F#', groups: [[fsharp.cardId]] });
      expect(await groups('.NET')).toEqual({ query: '.NET', groups: [[dotnet.cardId], [net.cardId]] });
      // Both parts apart are found after the name; one part alone (a card about graph nodes) is not.
      expect(await groups('node.js')).toEqual({ query: 'node.js', groups: [[nodejs.cardId], [apart.cardId]] });
      expect((await ranked('C++17')).map((h) => h.cardId)[0]).toBe(cpp17.cardId);
      // A versioned name: the cards saying it first, then those saying the name without a version (C++), then those
      // holding only its part (C, C#). A card saying C++ scored as one saying only C (half), or was not found at all.
      expect(await groups('C++17')).toEqual({ query: 'C++17', groups: [[cpp17.cardId], [cpp.cardId], [sharp.cardId, c.cardId].sort()] });
      // A name among other words: the card holding it first.
      expect((await ranked('C++ templates')).map((h) => h.cardId)[0]).toBe(cpp.cardId);
      // The part alone finds every card holding it, the names included, alike.
      expect(await groups('C')).toEqual({ query: 'C', groups: [[cpp.cardId, cpp17.cardId, sharp.cardId, c.cardId].sort()] });
      expect(await groups('net')).toEqual({ query: 'net', groups: [[dotnet.cardId, net.cardId].sort()] });
      // Written alone as well as in the name: the part counts in full.
      expect(await groups('C, C++')).toEqual({ query: 'C, C++', groups: [[cpp.cardId, cpp17.cardId, sharp.cardId, c.cardId].sort()] });
    });

    test('a query of several names written with signs finds the cards naming several of them first, each name counting once', async () => {
      const { three, two, cpp, sharp, c, fsharp, dotnet, net, nodejs, apart, nodeOnly, tides } = namingCards();
      for (const card of [three, two, cpp, sharp, c, fsharp, dotnet, net, nodejs, apart, nodeOnly, tides]) await index.upsert(card);
      const found = (await index.matchText('C++ C# F# .NET node.js', everything(), firstPage)).hits.map((h) => h.cardId);
      // "C++" and "C#" were one query word (their part "c"), node.js two (node, js): the card naming C++ and C# held
      // as much of the query as one naming C++ alone and was not found, while a card naming node.js alone was, above it.
      expect(found.slice(0, 2)).toEqual([three.cardId, two.cardId]);
      // Cards naming none of them, or only a part of one, are not found.
      for (const card of [c, net, apart, nodeOnly, tides]) expect(found).not.toContain(card.cardId);
      // Two names written in one query: the card naming both first.
      expect((await index.matchText('C++ C#', everything(), firstPage)).hits[0]!.cardId).toBe(two.cardId);
    });

    test('names no card holds, written beside names some card holds, weigh nothing, as unknown words do (a query of seven distinct words is no paste)', async () => {
      const { three, two, cpp, dotnet, nodejs, tides } = namingCards();
      for (const card of [three, two, cpp, dotnet, nodejs, tides]) await index.upsert(card);
      const found = async (query: string) => (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId);
      const known = await found('C++ C# F# .NET node.js');
      expect(known.slice(0, 2)).toEqual([three.cardId, two.cardId]);
      // Q# and J# are held by no card: seven distinct words (c, f, net, node, js, q, j), not a paste, so they are left
      // out. C++ and C# are two terms of one word ("c"), and counted as two words the query read as a paste of eight,
      // which keeps unknown words: the card naming C++ and C# was lost.
      expect(await found('C++ C# F# .NET node.js Q# J#')).toEqual(known);
    });

    test('a query of names finds a card naming two of them, not one holding only their parts (a C and an F) under the fixed floor', async () => {
      // Many cards name C++ or C#, so their part "c" is common and they weigh little; F# and .NET weigh more.
      const cards = [
        ...Array.from({ length: 8 }, (_, i) => aCard().saying(`Notes on C++ topic ${i}`).build()),
        ...Array.from({ length: 8 }, (_, i) => aCard().saying(`Notes on C# topic ${i}`).build()),
        ...Array.from({ length: 12 }, (_, i) => aCard().saying(`Filler card about gardening ${i}`).build()),
      ];
      const dotnet = aCard().saying('The .NET runtime compiles to an intermediate language').build();
      const fsharp = aCard().saying('Pipelines in F# read from left to right').build();
      const both = aCard().saying('Ported the build scripts from C++ to C#').build();
      const grades = aCard().saying('She got a C in maths and an F in French').build();
      for (const card of [...cards, dotnet, fsharp, both, grades]) await index.upsert(card);
      const hits = (await index.matchText('C++ C# F# .NET', everything(), firstPage)).hits.map((h) => h.cardId);
      // The card naming C++ and C# is found (the lowered floor for a query of names); the card saying the letters C and
      // F names none of them: half of three names' weight (0.26) was over that floor (0.21), and it ranked above it.
      expect(hits.slice(0, 2).sort()).toEqual([dotnet.cardId, fsharp.cardId].sort());
      expect(hits).toContain(both.cardId);
      expect(hits).not.toContain(grades.cardId);
    });

    test('names sharing a part ("C++ C#"): a card naming one gets nothing for the other through the part inside its name, and a card saying only the part counts it once', async () => {
      const { cpp, sharp, c, two } = namingCards();
      for (const card of [cpp, sharp, c, two]) await index.upsert(card);
      const hits = (await index.matchText('C++ C#', everything(), firstPage)).hits;
      const score = (card: IndexedCard) => hits.find((h) => h.cardId === card.cardId)?.score;
      // Two cards name C++, two C#, four hold "c": the names weigh alike, so a card naming one holds half the query.
      // It held three quarters (the other name's part "c" at half, though its "c" is the one inside its own name).
      expect(hits[0]!.cardId).toBe(two.cardId);
      expect(score(cpp)).toBeCloseTo(score(two)! / 2, 4);
      expect(score(sharp)).toBeCloseTo(score(two)! / 2, 4);
      // A card saying only C holds one mention of the part, half of one name, as for "C++ F#": a quarter of the query,
      // under the floor. It held half (the part once per name), as much as a card naming one of them.
      expect(hits.map((h) => h.cardId)).not.toContain(c.cardId);
    });

    test('a search answers the same after a query of names sharing a part ("C++ C# pasta") as before it', async () => {
      const linq = aCard().saying('LINQ queries and async await in C# on the .NET runtime').build();
      const cards = [
        linq,
        aCard().saying('Templates and RAII in modern C++ make resource handling safe').build(),
        ...Array.from({ length: 30 }, (_, i) => aCard().saying(`Cooking pasta ${i} with tomato sauce, notes in C#`).build()),
        ...Array.from({ length: 5 }, (_, i) => aCard().saying(`Cooking pasta ${i} with tomato sauce and basil`).build()),
        ...Array.from({ length: 20 }, (_, i) => aCard().saying(`Gardening ${i} tips for tomato plants`).build()),
      ];
      for (const card of cards) await index.upsert(card);
      const page = async () => (await index.matchText('in C#', everything(), { offset: 0, limit: 50 })).hits.map((h) => [h.cardId, h.score.toFixed(4)]);
      const before = await page();
      // Every card naming C# holds the phrase "in C#": all of them score 1, the LINQ card among them.
      expect(before.find(([id]) => id === linq.cardId)?.[1]).toBe('1.0000');
      await index.matchText('C++ C# pasta', everything(), firstPage);
      // The embedded index counted, for the phrase, the words of cards the part "c" skipped (they name C#) and that no
      // other word of that query made candidates, and never cleared the count: "in C#" then lost its phrase for them
      // (the LINQ card 0.85, after every other, on the second page).
      expect(await page()).toEqual(before);
    });

    test('a query of two names ("C# F#", "C++ F#", "C++17 F#") finds the cards naming either, not a card saying only their letters above them', async () => {
      // C# and C++ name many cards (weighing little), F# one (weighing much): half of each name through its letter gave
      // a card saying "a C ... an F" 0.425, above the 40 cards naming C# (0.174).
      const sharpCards = Array.from({ length: 40 }, (_, i) => aCard().saying(`Notes on C# topic ${i}`).build());
      const cppCards = Array.from({ length: 40 }, (_, i) => aCard().saying(`Notes on C++ topic ${i}`).build());
      const fsharp = aCard().saying('Pipelines in F# read from left to right').build();
      const grades = aCard().saying('She got a C in maths and an F in French').build();
      const filler = Array.from({ length: 12 }, (_, i) => aCard().saying(`Filler card about gardening ${i}`).build());
      for (const card of [...sharpCards, ...cppCards, fsharp, grades, ...filler]) await index.upsert(card);
      // "C++17 F#": a card saying C++ names C++17 without its version (VERSIONLESS_NAME_MATCH), one of the names too.
      for (const [query, named] of [['C# F#', sharpCards], ['C++ F#', cppCards], ['C++17 F#', cppCards]] as const) {
        const found = (await index.matchText(query, everything(), { offset: 0, limit: 100 })).hits.map((h) => h.cardId);
        expect({ query, first: found[0] }).toEqual({ query, first: fsharp.cardId });
        // The card naming neither (its letters only) is not found: it ranked second, above every card naming C# or C++.
        expect({ query, lettersOnlyAt: found.indexOf(grades.cardId) }).toEqual({ query, lettersOnlyAt: -1 });
        // Every card naming one of the names is found.
        expect({ query, found: [...found].sort() }).toEqual({ query, found: [fsharp, ...named].map((card) => card.cardId).sort() });
      }
    });

    test('in a query of names and plain words ("C# and F#", "C++ C# pasta"), a name\'s bare letter adds nothing to a card naming none of the names', async () => {
      // C# and C++ name many cards (weighing little), F# one (weighing much). Half of each name through its letter
      // gave a card saying "a C ... an F" more than the cards naming C# once a plain word turned the names-only rule off.
      const sharpCards = Array.from({ length: 40 }, (_, i) => aCard().saying(`Notes on C# and more, topic ${i}`).build());
      const cppCards = Array.from({ length: 40 }, (_, i) => aCard().saying(`Notes on C++ and more, topic ${i}`).build());
      const fsharp = aCard().saying('Pipelines in F# read from left to right').build();
      // Naming C# and holding the letter F: the part still adds to a card naming one of the names.
      const sharpAndF = aCard().saying('Notes on C# and more, graded F by the reviewer').build();
      const grades = aCard().saying('She got a C in maths and an F in French, then ate pasta').build();
      // The same words, other letters: what the letters card gets from its plain words alone.
      const twin = aCard().saying('She got a B in maths and an E in French, then ate pasta').build();
      const pasta = Array.from({ length: 5 }, (_, i) => aCard().saying(`Cooking pasta ${i} with tomato sauce`).build());
      const filler = Array.from({ length: 12 }, (_, i) => aCard().saying(`Filler card about gardening and tools ${i}`).build());
      for (const card of [...sharpCards, ...cppCards, fsharp, sharpAndF, grades, twin, ...pasta, ...filler]) await index.upsert(card);
      for (const query of ['C# and F#', 'C++ and F#', 'C++ C# pasta', 'C# F# pasta']) {
        const hits = (await index.matchText(query, everything(), { offset: 0, limit: 200 })).hits;
        const score = (id: string) => hits.find((h) => h.cardId === id)?.score.toFixed(4);
        expect({ query, letters: score(grades.cardId) }).toEqual({ query, letters: score(twin.cardId) });
      }
      // "and" is common: the letters card gets it alone, under the floor, as its twin does. It was found at 0.49, above
      // the 40 cards naming C# (which light C# and "and" leave under the floor).
      const hits = (await index.matchText('C# and F#', everything(), { offset: 0, limit: 200 })).hits.map((h) => h.cardId);
      expect({ lettersAt: hits.indexOf(grades.cardId) }).toEqual({ lettersAt: -1 });
      // The letter F still adds to a card naming C#: found, where a card naming C# alone is not.
      expect(hits.slice(0, 2)).toEqual([fsharp.cardId, sharpAndF.cardId]);
    });

    test('a query of five names finds every card naming one of them, after the cards naming more; none holding only parts', async () => {
      const cards = namingCards();
      for (const card of Object.values(cards)) await index.upsert(card);
      const { three, two, cpp, cpp17, sharp, fsharp, dotnet, nodejs } = cards;
      const found = (await index.matchText('C++ C# F# .NET node.js', everything(), firstPage)).hits.map((h) => h.cardId);
      // A card naming one name was found only when that name weighed most (the telling word's floor): each weighs
      // about a fifth of the query, under 0.2.
      expect(found.slice(0, 2)).toEqual([three.cardId, two.cardId]);
      expect(found.slice(2).sort()).toEqual([cpp.cardId, cpp17.cardId, sharp.cardId, fsharp.cardId, dotnet.cardId, nodejs.cardId].sort());
    });

    test('"C♯" written with the music sign is C#, and "C+++" or "C##" (a sign struck once too often) is C++ or C#', async () => {
      const { cpp, sharp, c } = namingCards();
      const music = aCard().saying('Records and pattern matching arrived in C♯ with version 9').build();
      for (const card of [cpp, sharp, c, music]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => [h.cardId, h.score.toFixed(4)]) });
      const ids = async (query: string) => (await found(query)).found.map(([id]) => id);
      // The cards naming C# first (the one written C♯ among them); "C♯" read as C found every card saying C, tied.
      expect((await ids('C#')).slice(0, 2).sort()).toEqual([sharp.cardId, music.cardId].sort());
      expect((await found('C♯')).found).toEqual((await found('C#')).found);
      expect((await found('C+++')).found).toEqual((await found('C++')).found);
      expect((await found('C++++')).found).toEqual((await found('C++')).found);
      expect((await found('C##')).found).toEqual((await found('C#')).found);
      expect((await ids('C++'))[0]).toBe(cpp.cardId);
    });

    test('the 32 words a long query is searched by are counted in words: names sharing a part (C#, C++, C++17) are one word, all looked for', async () => {
      const topics = 'templates ranges concepts modules coroutines lambdas iterators allocators vectors strings streams threads mutexes atomics futures promises tuples variants optionals spans views adaptors pipelines algorithms numerics chrono filesystem regex locale formatting';
      // 30 words, and three names on the one word "c": 31 distinct words, 33 terms. Counted in terms, the query was cut
      // to 32, and C++17, of the three the last one (equally frequent), was not looked for.
      const versioned = aCard().saying(`${topics}, all in C++17`).createdAt(new Date('2026-01-01T00:00:00Z')).build();
      const plain = aCard().saying(`${topics}, all in C++`).createdAt(new Date('2026-01-02T00:00:00Z')).build();
      for (const card of [versioned, plain]) await index.upsert(card);
      const hits = (await index.matchText(`${topics} C# C++ C++17`, everything(), firstPage)).hits;
      // The card naming C++17 first; the one saying C++ (the name without its version) after it. They tied, and the
      // newer card came first.
      expect(hits.map((h) => h.cardId)).toEqual([versioned.cardId, plain.cardId]);
      expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score + 1e-4);
    });

    test('a long question with a word no card holds finds what it finds without it, as a short one does; a paste of text no card holds keeps such words', async () => {
      const { tides, cpp, dotnet } = namingCards();
      const pull = aCard().saying('The pull of a magnet falls with distance').build();
      for (const card of [tides, cpp, dotnet, pull]) await index.upsert(card);
      const page = async (query: string) => (await index.matchText(query, everything(), firstPage)).hits.map((h) => [h.cardId, h.score.toFixed(4)]);
      // Nine distinct words the cards hold and one none does (a tenth: a stray, under a quarter). Kept since the query
      // had eight distinct words or more, it weighed as the heaviest word, every score fell and the phrase was lost,
      // where a query of seven words left it out.
      const question = 'the tides rise and fall with the pull of the moon';
      expect((await page(question))[0]![0]).toBe(tides.cardId);
      expect(await page(`${question} qwertyuiop`)).toEqual(await page(question));
      expect(await page(`tides rise and fall with moon qwertyuiop`)).toEqual(await page('tides rise and fall with moon'));
    });

    test('Chinese in traditional and in simplified characters find each other, words and phrases; Japanese kanji fold alike', async () => {
      const traditional = aCard().saying('我昨天一個人去圖書館看書').build();
      const simplified = aCard().saying('这个图书馆很大，一个人也没有').build();
      const japanese = aCard().saying('東京の國立圖書館に行きました').build();
      const other = aCard().saying('我们今天去公园散步').build();
      for (const card of [traditional, simplified, japanese, other]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId).sort() });
      const all = [traditional.cardId, simplified.cardId, japanese.cardId].sort();
      expect(await found('图书馆')).toEqual({ query: '图书馆', found: all });
      expect(await found('圖書館')).toEqual({ query: '圖書館', found: all });
      expect(await found('一個人')).toEqual({ query: '一個人', found: [traditional.cardId, simplified.cardId].sort() });
      expect(await found('一个人')).toEqual({ query: '一个人', found: [traditional.cardId, simplified.cardId].sort() });
      expect(await found('國立')).toEqual({ query: '國立', found: [japanese.cardId] });
      expect(await found('公園')).toEqual({ query: '公園', found: [other.cardId] });
    });

    test('a word longer than 40 characters is found, misspelled too, and a run of letters thousands long is one bounded word', async () => {
      const compound = aCard().saying('Die Donaudampfschifffahrtsgesellschaftskapitänsmütze lag auf dem Tisch').build();
      const shorter = aCard().saying('Die Donaudampfschifffahrtsgesellschaft fuhr nach Wien').build();
      const chemical = aCard().saying('The label said methylenedioxypyrovaleronehydrochloridemonohydrate in small print').build();
      const blob = aCard().saying(`key ${'QmFzZTY0'.repeat(2_000)} end`).build();
      for (const card of [compound, shorter, chemical, blob]) await index.upsert(card);
      const found = async (query: string) => ({ query, found: (await index.matchText(query, everything(), firstPage)).hits.map((h) => h.cardId) });
      // The compound and the shorter one are close variants of each other (most of their trigrams are shared).
      expect(await found('Donaudampfschifffahrtsgesellschaftskapitänsmütze')).toEqual({ query: 'Donaudampfschifffahrtsgesellschaftskapitänsmütze', found: [compound.cardId, shorter.cardId] });
      expect(await found('DONAUDAMPFSCHIFFFAHRTSGESELLSCHAFTSKAPITANSMUTZE')).toEqual({ query: 'DONAUDAMPFSCHIFFFAHRTSGESELLSCHAFTSKAPITANSMUTZE', found: [compound.cardId, shorter.cardId] });
      // The spelling before 1996 (Schiffahrt), a word no card holds: one edit from the compound.
      expect((await found('Donaudampfschiffahrtsgesellschaftskapitänsmütze')).found[0]).toBe(compound.cardId);
      expect(await found('Donaudampfschifffahrtsgesellschaft')).toEqual({ query: 'Donaudampfschifffahrtsgesellschaft', found: [shorter.cardId, compound.cardId] });
      expect(await found('methylenedioxypyrovaleronehydrochloridemonohydrate')).toEqual({ query: 'methylenedioxypyrovaleronehydrochloridemonohydrate', found: [chemical.cardId] });
      expect(await found('methylenedioxypyrovaleronehydrochloridmonohydrate')).toEqual({ query: 'methylenedioxypyrovaleronehydrochloridmonohydrate', found: [chemical.cardId] });
      expect(await found(`${'QmFzZTY0'.repeat(2_000)}`)).toEqual({ query: `${'QmFzZTY0'.repeat(2_000)}`, found: [blob.cardId] });
    });

    test('a card holding the exact phrase ranks above one that merely shares its words', async () => {
      const scattered = aCard().saying('the index was large and the search was fast but nothing else').build();
      const phrase = aCard().saying('we measured that a large search index is fast enough for us').build();
      await index.upsert(scattered);
      await index.upsert(phrase);
      const page = await index.matchText('large search index', everything(), firstPage);
      expect(page.hits.map((h) => h.cardId)).toEqual([phrase.cardId, scattered.cardId]);
      expect(page.hits[0]!.score).toBeGreaterThan(page.hits[1]!.score);
    });

    test('the phrase counts as whole words in a row, not as text running across longer words', async () => {
      const acrossWords = aCard().saying('to enlarge search indexes we keep a large index for search').build();
      const inARow = aCard().saying('we keep a large search index').build();
      await index.upsert(acrossWords);
      await index.upsert(inARow);
      const page = await index.matchText('large search index', everything(), firstPage);
      expect(page.hits.map((h) => h.cardId)).toEqual([inARow.cardId, acrossWords.cardId]);
      expect(page.hits[0]!.score).toBeGreaterThan(page.hits[1]!.score);
    });

    test('a long query (over 1,000 characters) earns the phrase bonus only for a card holding all of it in a row, not its start alone', async () => {
      const queryWords = Array.from({ length: 200 }, (_, i) => `tern${i.toString(36)}q`);
      const query = queryWords.join(' ');
      expect(query.length).toBeGreaterThan(1_500);
      const whole = aCard().saying(query).build();
      // Its first 150 words (about 1,200 characters) in a row, the others after them in reverse.
      const start = aCard().saying([...queryWords.slice(0, 150), ...queryWords.slice(150).reverse()].join(' ')).build();
      const scattered = aCard().saying([...queryWords].reverse().join(' ')).build();
      for (const card of [whole, start, scattered]) await index.upsert(card);
      const page = await index.matchText(query, everything(), firstPage);
      expect(page.total).toBe(3);
      expect(page.hits[0]).toEqual({ cardId: whole.cardId, score: expect.closeTo(1, 4) });
      // Both hold every word but not the whole phrase: the same score, below the holder's.
      const score = (cardId: string) => page.hits.find((h) => h.cardId === cardId)!.score;
      expect(score(start.cardId)).toBeCloseTo(score(scattered.cardId), 5);
      expect(score(start.cardId)).toBeLessThan(page.hits[0]!.score - 0.1);
    });

    test('every card holding the phrase ranks before those that only share its words, however the pages split', async () => {
      const holders: string[] = [];
      const cards = Array.from({ length: 30 }, (_, i) => {
        // Some others hold each word pair of the phrase, only not all three words in a row.
        const text = i % 3 === 0 ? `the red fox jumps over fence ${i}` : i % 3 === 1 ? `a red fox sat down and the fox jumps at ${i}` : `jumps of a fox by the red barn ${i}`;
        const card = aCard().saying(text).build();
        if (i % 3 === 0) holders.push(card.cardId);
        return card;
      });
      for (const card of cards) await index.upsert(card);
      const whole = await index.matchText('red fox jumps', everything(), { offset: 0, limit: 50 });
      expect(whole.total).toBe(30);
      expect(whole.hits.slice(0, 10).map((h) => h.cardId).sort()).toEqual([...holders].sort());
      const paged: string[] = [];
      for (let offset = 0; offset < 30; offset += 4) {
        const page = await index.matchText('red fox jumps', everything(), { offset, limit: 4 });
        expect(page.total).toBe(30);
        paged.push(...page.hits.map((h) => h.cardId));
      }
      expect(paged).toEqual(whole.hits.map((h) => h.cardId));
    });

    test('writes are idempotent: replays, stale snapshots and late snapshots of removed cards change nothing', async () => {
      const v1 = aCard().saying('first version about volcanoes').at('2026-01-01T00:00:00Z').build();
      const v2 = { ...v1, content: 'second version about glaciers', updatedAt: new Date('2026-01-02T00:00:00Z') };
      expect(await index.upsert(v1)).toBe(true);
      expect(await index.upsert(v2)).toBe(true);
      expect(await index.upsert(v2)).toBe(true);
      expect(await index.upsert(v1)).toBe(false);
      expect(await index.count()).toBe(1);
      expect((await index.get(v1.cardId))!.content).toBe(v2.content);
      expect((await index.matchText('volcanoes', everything(), firstPage)).total).toBe(0);
      expect((await index.matchText('glaciers', everything(), firstPage)).total).toBe(1);
      await index.remove(v1.cardId, new Date('2026-01-03T00:00:00Z'));
      await index.remove(v1.cardId, new Date('2026-01-03T00:00:00Z'));
      expect(await index.upsert(v2)).toBe(false);
      expect(await index.count()).toBe(0);
      expect((await index.nearest(axis(0), everything(), firstPage)).total).toBe(0);
      expect((await index.matchText('glaciers', everything(), firstPage)).total).toBe(0);
    });

    test('order markers older than the cutoff are forgotten (pruneMarkers), at most the limit; younger ones keep their order', async () => {
      const collection = randomUUID();
      const [oldGone, youngGone, bookmarked, stillOut] = [aCard().build(), aCard().build(), aCard().build(), aCard().build()];
      for (const card of [oldGone, youngGone, bookmarked, stillOut]) await index.upsert(card);
      await index.remove(oldGone.cardId, new Date('2020-01-02T00:00:00Z'));
      await index.remove(youngGone.cardId, new Date('2020-03-01T00:00:00Z'));
      await index.setBookmark(collection, bookmarked.cardId, false, new Date('2020-01-03T00:00:00Z'));
      await index.setBookmark(collection, stillOut.cardId, false, new Date('2020-03-02T00:00:00Z'));
      const cutoff = new Date('2020-02-01T00:00:00Z');
      expect(await index.pruneMarkers(cutoff, 1)).toBe(1);
      expect(await index.pruneMarkers(cutoff, 10)).toBe(1);
      expect(await index.pruneMarkers(cutoff, 10)).toBe(0);
      // Past the retention no event older than a forgotten marker arrives; one that did would apply, as here.
      expect(await index.upsert({ ...oldGone, updatedAt: new Date('2020-01-01T00:00:00Z') })).toBe(true);
      // The younger markers still keep older events out.
      expect(await index.upsert({ ...youngGone, updatedAt: new Date('2020-01-01T00:00:00Z') })).toBe(false);
      await index.setBookmark(collection, stillOut.cardId, true, new Date('2020-03-01T00:00:00Z'));
      const scope = { ...everything(), collectionId: collection };
      expect((await index.nearest(axis(0), scope, firstPage)).hits.map((h) => h.cardId)).toEqual([]);
    });

    test("a bookmark of the owner's private card is searchable by the owner only, in both searches, as soon as it is applied", async () => {
      // The e2e collection search on Elasticsearch asked once, right after its public bookmarks showed: the private
      // one must be there as soon as its event is applied, whether its bookmark comes after the card or before it.
      const owner = randomUUID();
      const collection = randomUUID();
      const open = aCard().saying('zanzibar quokka espresso sourdough').along(axis(2)).build();
      const secret = aCard().by(owner).private().saying('zanzibar quokka espresso perseverance').along(axis(2, 3, 0.3)).build();
      const early = aCard().by(owner).private().saying('zanzibar quokka espresso early bookmark').along(axis(2, 4, 0.3)).build();
      await index.upsert(open);
      await index.upsert(secret);
      const scope = (callerId?: string): SearchScope => ({ ...everything(callerId), collectionId: collection });
      const textIds = async (query: string, callerId?: string) => (await index.matchText(query, scope(callerId), firstPage)).hits.map((h) => h.cardId).sort();
      const nearIds = async (callerId?: string) => (await index.nearest(axis(2), scope(callerId), firstPage)).hits.map((h) => h.cardId).sort();
      await index.setBookmark(collection, open.cardId, true, new Date('2026-01-02T00:00:00Z'));
      await index.setBookmark(collection, secret.cardId, true, new Date('2026-01-02T00:00:01Z'));
      // Asked once, right away, as the e2e test does.
      expect(await textIds('perseverance', owner)).toEqual([secret.cardId]);
      await index.setBookmark(collection, early.cardId, true, new Date('2026-01-02T00:00:02Z'));
      await index.upsert(early);
      expect(await textIds('perseverance', owner)).toEqual([secret.cardId]);
      expect(await textIds('zanzibar quokka', owner)).toEqual([open.cardId, secret.cardId, early.cardId].sort());
      expect(await nearIds(owner)).toEqual([open.cardId, secret.cardId, early.cardId].sort());
      for (const other of [undefined, randomUUID()]) {
        expect(await textIds('perseverance', other)).toEqual([]);
        expect(await textIds('zanzibar quokka', other)).toEqual([open.cardId]);
        expect(await nearIds(other)).toEqual([open.cardId]);
      }
      // A replayed snapshot from before the bookmark (no collections) does not take it away.
      expect(await index.upsert(secret)).toBe(true);
      expect(await textIds('perseverance', owner)).toEqual([secret.cardId]);
      expect((await index.get(secret.cardId))!.collectionIds).toEqual([collection]);
    });

    test('batch(): concurrent writes of many cards are all searchable when the batch resolves', async () => {
      const collection = randomUUID();
      const before = aCard().saying('an old card about harbours').build();
      await index.upsert(before);
      const cards = Array.from({ length: 12 }, (_, i) => aCard().saying(`batched lighthouse number ${i} keeper`).along(axis(i, i + 1, 0.1)).build());
      const results = await index.batch(() =>
        Promise.all([
          ...cards.map(async (card, i) => {
            const stored = await index.upsert(card);
            if (i % 3 === 0) await index.setBookmark(collection, card.cardId, true, new Date('2026-01-05T00:00:00Z'));
            return stored;
          }),
          index.remove(before.cardId, new Date('2026-01-05T00:00:00Z')).then(() => true),
        ]),
      );
      expect(results.every(Boolean)).toBe(true);
      expect(await index.count()).toBe(12);
      expect((await index.matchText('lighthouse keeper', everything(), { offset: 0, limit: 25 })).total).toBe(12);
      expect((await index.matchText('harbours', everything(), firstPage)).total).toBe(0);
      const inCollection = await index.nearest(axis(0), { ...everything(), collectionId: collection }, firstPage);
      expect(inCollection.hits.map((h) => h.cardId).sort()).toEqual([cards[0]!, cards[3]!, cards[6]!, cards[9]!].map((c) => c.cardId).sort());
    });

    test('collisions are kept but not searched until promoted', async () => {
      const root = aCard().saying('tides are caused by the moon').build();
      const collision = aCard().saying('tides are caused by the moon, mostly').collisionOf(root.cardId).build();
      await index.upsert(root);
      await index.upsert(collision);
      expect((await index.nearest(axis(0), everything(), firstPage)).hits.map((h) => h.cardId)).toEqual([root.cardId]);
      expect((await index.matchText('tides moon', everything(), firstPage)).hits.map((h) => h.cardId)).toEqual([root.cardId]);
      await index.remove(root.cardId, new Date('2026-02-01T00:00:00Z'));
      expect(await index.promote(collision.cardId)).toBe(true);
      expect((await index.matchText('tides moon', everything(), firstPage)).hits.map((h) => h.cardId)).toEqual([collision.cardId]);
      expect((await index.get(collision.cardId))!.collisionOf).toBeUndefined();
      expect(await index.promote(randomUUID())).toBe(false);
    });

    test("vectorPointOf answers a stored card's vector point id and the root it collides with, following promotion and removal", async () => {
      const root = aCard().saying('tides are caused by the moon').build();
      const collision = aCard().saying('tides are caused by the moon, mostly').collisionOf(root.cardId).build();
      await index.upsert(root);
      await index.upsert(collision);
      expect(await index.vectorPointOf(root.cardId)).toEqual({ vectorPointId: root.vectorPointId });
      expect(await index.vectorPointOf(collision.cardId)).toEqual({ vectorPointId: collision.vectorPointId, collisionOf: root.cardId });
      await index.remove(root.cardId, new Date('2026-02-01T00:00:00Z'));
      expect(await index.promote(collision.cardId)).toBe(true);
      expect(await index.vectorPointOf(collision.cardId)).toEqual({ vectorPointId: collision.vectorPointId });
      expect(await index.vectorPointOf(root.cardId)).toBeUndefined();
      expect(await index.vectorPointOf(randomUUID())).toBeUndefined();
    });

    test("contentOf answers a stored card's text, the newest snapshot's, and nothing for a removed or unknown card", async () => {
      const root = aCard().saying('tides are caused by the moon').build();
      const collision = aCard().saying('tides are caused by the moon, mostly').collisionOf(root.cardId).build();
      await index.upsert(root);
      await index.upsert(collision);
      expect(await index.contentOf(root.cardId)).toBe('tides are caused by the moon');
      expect(await index.contentOf(collision.cardId)).toBe('tides are caused by the moon, mostly');
      await index.upsert({ ...root, content: 'tides follow the moon and the sun', updatedAt: new Date('2026-01-02T00:00:00Z') });
      await index.upsert({ ...root, content: 'an older snapshot arriving late', updatedAt: new Date('2025-12-31T00:00:00Z') });
      expect(await index.contentOf(root.cardId)).toBe('tides follow the moon and the sun');
      await index.remove(root.cardId, new Date('2026-02-01T00:00:00Z'));
      expect(await index.contentOf(root.cardId)).toBeUndefined();
      expect(await index.contentOf(randomUUID())).toBeUndefined();
    });

    test('a bookmarked collision the caller may see puts its root in the collection scope, once', async () => {
      const owner = randomUUID();
      const root = aCard().saying('tides are caused by the moon').along(axis(1)).build();
      const open = aCard().saying('tides are caused by the moon, mostly').along(axis(1)).collisionOf(root.cardId).build();
      const hiddenRoot = aCard().saying('glaciers carve deep valleys').along(axis(2)).build();
      const hidden = aCard().by(owner).private().saying('glaciers carve deep valleys slowly').along(axis(2)).collisionOf(hiddenRoot.cardId).build();
      for (const card of [root, open, hiddenRoot, hidden]) await index.upsert(card);
      const collection = randomUUID();
      await index.setBookmark(collection, open.cardId, true, new Date('2026-01-02T00:00:00Z'));
      await index.setBookmark(collection, hidden.cardId, true, new Date('2026-01-02T00:00:00Z'));
      const scope = (callerId?: string): SearchScope => ({ ...everything(callerId), collectionId: collection });
      const semantic = async (callerId?: string) => (await index.nearest(axis(1), scope(callerId), firstPage)).hits.map((h) => h.cardId).sort();
      const text = async (callerId?: string) => (await index.matchText('tides glaciers', scope(callerId), firstPage)).hits.map((h) => h.cardId).sort();
      expect(await semantic()).toEqual([root.cardId]);
      expect(await text()).toEqual([root.cardId]);
      expect(await semantic(owner)).toEqual([root.cardId, hiddenRoot.cardId].sort());
      expect(await text(owner)).toEqual([root.cardId, hiddenRoot.cardId].sort());
      // The root bookmarked too: still one hit.
      await index.setBookmark(collection, root.cardId, true, new Date('2026-01-02T00:00:00Z'));
      expect((await index.nearest(axis(1), scope(), firstPage)).total).toBe(1);
      await index.setBookmark(collection, root.cardId, false, new Date('2026-01-03T00:00:00Z'));
      await index.setBookmark(collection, open.cardId, false, new Date('2026-01-03T00:00:00Z'));
      expect(await semantic()).toEqual([]);
      expect((await index.matchText('tides', scope(), firstPage)).total).toBe(0);
    });
  });
}
