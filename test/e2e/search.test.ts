import { randomUUID } from 'node:crypto';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import type { TestUser } from '../support/accounts';
import { html, indexed, postCard, signUpMany, uniqueText } from './cards-support';
import { LABELLED_CARDS } from '../../services/search/test/fixtures/labelled-cards';
import { eventuallyDefined } from '../support/eventually';

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;
let anonymous: ApiClient;
const idOf = new Map<string, string>();
const run = randomUUID().slice(0, 8);
const secretWord = `zanzibarquokka${run}`;
let secretId: string;

type Entry = { metadata: { id: string; private: boolean; author: { id: string } | null }[]; score: number };
const ids = (entries: Entry[]) => entries.map((e) => e.metadata[0]!.id);

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  const users = await signUpMany(system.baseUrl, mailbox, 2, 'searcher');
  alice = users[0]!;
  bob = users[1]!;
  anonymous = new ApiClient(system.baseUrl);
  for (const card of LABELLED_CARDS) {
    idOf.set(card.key, await postCard(alice, { card_html: html(card.content), link: `https://example.org/${card.topic}/${card.key}`, tag_set: [card.topic] }));
  }
  secretId = await postCard(bob, { card_html: html(`${uniqueText(75)} ${secretWord} espresso sourdough perseverance`), private: true, tag_set: ['coffee'], link: 'https://example.org/coffee/secret' });
  for (const id of [...idOf.values(), secretId]) await indexed(id === secretId ? bob : alice, id);
}, 240_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

describe('card search', () => {
  it('semantic: a paraphrase sharing few words finds the right card first among distinct topics', async () => {
    for (const key of ['sourdough', 'mars-rover', 'vaccines', 'tcp-handshake', 'compound-interest', 'photosynthesis']) {
      const card = LABELLED_CARDS.find((c) => c.key === key)!;
      const res = await anonymous.post('/api/card/search/1', { content: card.paraphrase });
      expect(res.status).toBe(200);
      expect(res.json.score_cards[0].metadata[0].id).toBe(idOf.get(key));
      const score = res.json.score_cards[0].score;
      expect(score).toBeGreaterThan(res.json.score_cards[1].score);
      expect(score).toBeLessThanOrEqual(1);
    }
  });

  it('full-text: a misspelled query finds the right card first, with a score in [0, 1] and total_card_pages', async () => {
    for (const key of ['black-holes', 'gluten-kneading', 'dns-resolution', 'sleep', 'bonds', 'running-shoes']) {
      const card = LABELLED_CARDS.find((c) => c.key === key)!;
      const res = await anonymous.post('/api/card/fulltextsearch/1', { content: card.misspelled });
      expect(res.status).toBe(200);
      expect(res.json.score_cards[0].metadata[0].id).toBe(idOf.get(key));
      for (const entry of res.json.score_cards as Entry[]) {
        expect(entry.score).toBeGreaterThan(0);
        expect(entry.score).toBeLessThanOrEqual(1);
      }
      expect(res.json.total_card_pages).toBe(res.json.total_pages);
    }
  });

  it('answers cards with their authors in the interface shape', async () => {
    const res = await alice.client.post('/api/card/search/1', { content: 'wild yeast culture' });
    const entry = res.json.score_cards[0];
    expect(Object.keys(res.json).sort()).toEqual(['score_cards', 'total_pages']);
    expect(entry.metadata[0]).toMatchObject({ id: expect.any(String), author: { id: alice.id }, content: expect.any(String), card_html: expect.any(String), tag_set: expect.any(String), vector_point_id: expect.any(String), private: false });
    expect(typeof entry.score).toBe('number');
  });

  it('filters by tag (any listed) and by link (contains any), both together', async () => {
    const byTag = await anonymous.post('/api/card/search/1', { content: 'food and drink', tag_set: ['bread', 'coffee'] });
    expect(ids(byTag.json.score_cards).sort()).toEqual(['sourdough', 'gluten-kneading', 'oven-baking', 'espresso', 'coffee-farming', 'caffeine-health'].map((k) => idOf.get(k)).sort());
    expect(byTag.json.total_pages).toBe(1);
    const byLink = await anonymous.post('/api/card/fulltextsearch/1', { content: 'the', link: ['/space/', 'example.org/running/marathon'] });
    expect(ids(byLink.json.score_cards).sort()).toEqual(['mars-rover', 'black-holes', 'space-station', 'marathon-training'].map((k) => idOf.get(k)).sort());
    const both = await anonymous.post('/api/card/search/1', { content: 'stars', tag_set: ['space'], link: ['black-holes', 'sourdough'] });
    expect(ids(both.json.score_cards)).toEqual([idOf.get('black-holes')]);
    const none = await anonymous.post('/api/card/fulltextsearch/1', { content: 'espresso', tag_set: ['plants'] });
    expect(none.json).toEqual({ score_cards: [], total_pages: 0, total_card_pages: 0 });
  });

  it('reads a tag_set item as stored tags are read: split at commas, trimmed, any case; an item of only commas filters nothing', async () => {
    for (const [path, content] of [
      ['/api/card/search/1', 'food and drink'],
      ['/api/card/fulltextsearch/1', 'the'],
    ] as const) {
      const search = async (tagSet: unknown) => {
        const res = await anonymous.post(path, { content, tag_set: tagSet });
        expect([path, tagSet, res.status]).toEqual([path, tagSet, 200]);
        return { ids: ids(res.json.score_cards).sort(), totalPages: res.json.total_pages };
      };
      const separate = await search(['bread', 'coffee']);
      expect(separate.ids.length).toBeGreaterThan(0);
      for (const tagSet of [['bread,coffee'], [' Bread , COFFEE ,,', 'bread'], 'bread, coffee']) expect(await search(tagSet)).toEqual(separate);
      const unfiltered = await search(undefined);
      for (const tagSet of [[','], ['', ' , ']]) expect(await search(tagSet)).toEqual(unfiltered);
    }
    // As many tags as a card may hold, however they are packed into items.
    const tags = Array.from({ length: 101 }, (_, i) => `t${i}`);
    for (const tagSet of [[tags.join(',')], [tags.slice(0, 60).join(','), tags.slice(60).join(',')]]) {
      const refused = await anonymous.post('/api/card/search/1', { content: 'bread', tag_set: tagSet });
      expect([refused.status, refused.json.message]).toEqual([400, 'tag_set: at most 100 tags']);
    }
    expect((await anonymous.post('/api/card/search/1', { content: 'bread', tag_set: [tags.slice(0, 100).join(', ')] })).status).toBe(200);
  });

  it('finds a card by its whole link as long as a stored link may be (2048 characters), any case, spaces around', async () => {
    const start = 'https://example.org/long/';
    const link = `${start}${'a'.repeat(2048 - start.length)}`;
    const marker = `longlinkmarker${run}`;
    // The card holds the query's words: full-text scores it whatever words its random text holds besides (without
    // "harbor" and "lantern" in it and in few other cards, the marker alone scored under the 0.3 floor now and then).
    const id = await postCard(alice, { card_html: html(`${uniqueText(75)} ${marker} harbor lantern`), link });
    await indexed(alice, id);
    for (const path of ['/api/card/search/1', '/api/card/fulltextsearch/1']) {
      // Words the embedder knows beside the marker: a query of none means nothing and finds nothing.
      const res = await anonymous.post(path, { content: `${marker} harbor lantern`, link: [` ${link.toUpperCase()} `] });
      expect([path, res.status, ids(res.json.score_cards ?? [])]).toEqual([path, 200, [id]]);
      const refused = await anonymous.post(path, { content: marker, link: [`${link}a`] });
      expect([path, refused.status, refused.json.message]).toEqual([path, 400, 'link: each link at most 2048 characters']);
    }
  });

  it('finds a card by its link however the host and path are spelled: punycode or Unicode, percent-encoded or not', async () => {
    const marker = `idnlinkmarker${run}`;
    // As a browser copies the link, and as it shows it.
    const copied = await postCard(alice, { card_html: html(`${uniqueText(75)} ${marker} harbor lantern`), link: `https://xn--mnchen-3ya.de/wiki/M%C3%BCnchen-${run}` });
    const shown = await postCard(alice, { card_html: html(`${uniqueText(75)} ${marker} harbor lantern`), link: `https://münchen.de/wiki/München-${run}` });
    for (const id of [copied, shown]) await indexed(alice, id);
    for (const path of ['/api/card/search/1', '/api/card/fulltextsearch/1']) {
      for (const link of [`münchen.de/wiki/münchen-${run}`, `xn--mnchen-3ya.de/wiki/M%C3%BCnchen-${run}`, `https://XN--MNCHEN-3YA.DE/wiki/München-${run}`]) {
        const res = await anonymous.post(path, { content: `${marker} harbor lantern`, link: [link] });
        expect([path, link, res.status, ids(res.json.score_cards ?? []).sort()]).toEqual([path, link, 200, [copied, shown].sort()]);
      }
    }
    // The card's link is returned as it was written.
    expect((await alice.client.get(`/api/card/${copied}`)).json.link).toBe(`https://xn--mnchen-3ya.de/wiki/M%C3%BCnchen-${run}`);
    expect((await alice.client.get(`/api/card/${shown}`)).json.link).toBe(`https://münchen.de/wiki/München-${run}`);
  });

  it('a private card never reaches another user or anonymous, in any search, on any page; its author finds it', async () => {
    for (const client of [anonymous, alice.client]) {
      for (const path of ['/api/card/search', '/api/card/fulltextsearch']) {
        for (const content of [secretWord, 'espresso sourdough perseverance']) {
          let page = 1;
          let totalPages = 1;
          do {
            const res = await client.post(`${path}/${page}`, { content });
            expect(res.status).toBe(200);
            expect(ids(res.json.score_cards)).not.toContain(secretId);
            totalPages = res.json.total_pages;
          } while (++page <= totalPages);
        }
      }
    }
    const own = await bob.client.post('/api/card/fulltextsearch/1', { content: secretWord });
    expect(ids(own.json.score_cards)).toEqual([secretId]);
    const ownSemantic = await bob.client.post('/api/card/search/1', { content: 'espresso', tag_set: ['coffee'], link: ['secret'] });
    expect(ids(ownSemantic.json.score_cards)).toEqual([secretId]);
  });

  it("words of someone else's private card change nothing anyone else finds by full text; its owner finds it, with a typo too", async () => {
    const rare = `marmotglacier${run}`;
    const typo = `marmotglacer${run}`;
    const answers = async () => {
      const out: unknown[] = [];
      for (const [who, client] of [['anonymous', anonymous], ['alice', alice.client]] as const) {
        for (const content of [rare, typo, `espresso ${rare}`, `sourdough starter ${typo}`]) {
          const res = await client.post('/api/card/fulltextsearch/1', { content });
          out.push({ who, content, status: res.status, found: (res.json.score_cards as Entry[]).map((e) => [e.metadata[0]!.id, e.score]), totalPages: res.json.total_pages });
        }
      }
      return out;
    };
    const before = await answers();
    const privateCard = await postCard(bob, { card_html: html(`${uniqueText(75)} ${rare} espresso sourdough starter`), private: true });
    await indexed(bob, privateCard);
    expect(await answers()).toEqual(before);
    for (const content of [rare, typo]) {
      const own = await bob.client.post('/api/card/fulltextsearch/1', { content });
      expect([content, ids(own.json.score_cards)[0]]).toEqual([content, privateCard]);
    }
  });

  it('full-text: a typo ranks the word one edit away above one two edits away; a short word no card holds finds no unrelated word', async () => {
    const twoEdits = await postCard(alice, { card_html: html(`${uniqueText(75)} leaves photosynthesise all day`) });
    await indexed(alice, twoEdits);
    const res = await anonymous.post('/api/card/fulltextsearch/1', { content: 'photosynthsis' });
    expect(ids(res.json.score_cards).slice(0, 2)).toEqual([idOf.get('photosynthesis'), twoEdits]);
    expect(res.json.score_cards[0].score).toBeGreaterThan(res.json.score_cards[1].score);
    // The TCP card holds "both" and "with", a coffee card "over"; none is what these words mean.
    for (const content of ['moth', 'opera']) {
      const found = ids((await anonymous.post('/api/card/fulltextsearch/1', { content })).json.score_cards);
      expect([content, found.filter((id) => [idOf.get('tcp-handshake'), idOf.get('espresso')].includes(id))]).toEqual([content, []]);
    }
  });

  it('full-text: a query word no card holds, not even misspelled, is searched as if not written; a query of such words alone finds nothing', async () => {
    const tides = await postCard(alice, { card_html: html(`${uniqueText(75)} the tides rise and fall with the pull of the moon`) });
    await indexed(alice, tides);
    const page = async (content: string) => {
      const res = await anonymous.post('/api/card/fulltextsearch/1', { content });
      expect([content, res.status]).toEqual([content, 200]);
      return (res.json.score_cards as Entry[]).map((e) => ({ id: e.metadata[0]!.id, score: e.score }));
    };
    const alone = await page('tides');
    expect(alone.map((h) => h.id)).toContain(tides);
    // The unknown words carried most of the query's weight: one lowered the tides card to ~0.35, two hid it.
    expect(await page(`tides zebrafoo${run}`)).toEqual(alone);
    expect(await page(`tides zebrafoo${run} qwertyuiop${run}`)).toEqual(alone);
    expect(await page(`moon tides xylophonic${run}`)).toEqual(await page('moon tides'));
    expect(await page(`zebrafoo${run} qwertyuiop${run}`)).toEqual([]);
  });

  it('full-text: accents are folded both ways (cafe finds Café, Zürich finds Zurich), the card keeps its text; a 4-letter word takes no word one letter away', async () => {
    const accented = await postCard(alice, { card_html: html(`${uniqueText(75)} the Café crème near Zürich serves résumé readers`) });
    const plain = await postCard(alice, { card_html: html(`${uniqueText(75)} zurich trams; please resume the download; take care of the mass`) });
    for (const id of [accented, plain]) await indexed(alice, id);
    const found = async (content: string) => ids((await anonymous.post('/api/card/fulltextsearch/1', { content })).json.score_cards);
    expect(await found('cafe creme')).toContain(accented);
    expect(await found('CAFÉ')).toContain(accented);
    for (const content of ['Zürich', 'zurich', 'resume', 'résumé']) expect([content, (await found(content)).filter((id) => id === accented || id === plain).sort()]).toEqual([content, [accented, plain].sort()]);
    expect(await found('cafe')).not.toContain(plain);
    expect(await found('mars')).not.toContain(plain);
    const card = (await anonymous.get(`/api/card/${accented}`)).json;
    expect(card.card_html).toContain('Café crème near Zürich serves résumé');
  });

  it('semantic: a query without a word the model knows finds nothing, on every route; café reads as cafe', async () => {
    const collection = await alice.client.post('/api/card_collection', { name: `meaningless ${run}`, is_public: true });
    const collectionId = /([0-9a-f-]{36})$/.exec(collection.headers.get('location') ?? '')![1]!;
    expect((await alice.client.post(`/api/card_collection/${collectionId}`, { card_metadata_id: idOf.get('espresso') })).status).toBe(204);
    await eventuallyDefined(async () => {
      const r = await anonymous.post('/api/card_collection/search/1', { content: 'espresso', collection_id: collectionId });
      return r.json.bookmarks?.length === 1 ? r : undefined;
    }, 'the bookmark to be searchable');
    for (const content of ['!!!', '\u{1F41D}', 'Ελληνικά', '日本の茶道']) {
      for (const client of [anonymous, alice.client]) {
        const cards = await client.post('/api/card/search/1', { content });
        expect([content, cards.status, cards.json]).toEqual([content, 200, { score_cards: [], total_pages: 0 }]);
        const inCollection = await client.post('/api/card_collection/search/1', { content, collection_id: collectionId });
        expect([content, inCollection.status, inCollection.json.bookmarks, inCollection.json.total_pages]).toEqual([content, 200, [], 0]);
      }
    }
    const accented = await anonymous.post('/api/card/search/1', { content: 'café' });
    const plain = await anonymous.post('/api/card/search/1', { content: 'cafe' });
    expect(accented.json.score_cards.length).toBeGreaterThan(0);
    expect(accented.json).toEqual(plain.json);
  });

  it('pages 25 cards at a time across 30+ matches, with the right total_pages', async () => {
    const marker = `pagingmarker${run}`;
    const created: string[] = [];
    for (let i = 0; i < 32; i++) created.push(await postCard(alice, { card_html: html(`${uniqueText(75)} ${marker}`), tag_set: [`paging-${run}`] }));
    await Promise.all(created.map((id) => indexed(alice, id)));
    for (const [path, body] of [
      ['/api/card/fulltextsearch', { content: marker }],
      ['/api/card/search', { content: 'river mountain library', tag_set: [`paging-${run}`] }],
    ] as const) {
      const p1 = await anonymous.post(`${path}/1`, body);
      const p2 = await anonymous.post(`${path}/2`, body);
      const p3 = await anonymous.post(`${path}/3`, body);
      expect([p1.json.total_pages, p2.json.total_pages]).toEqual([2, 2]);
      expect(p1.json.score_cards).toHaveLength(25);
      expect(p2.json.score_cards).toHaveLength(7);
      expect(p3.json.score_cards).toHaveLength(0);
      for (const page of ['999999999', '1000000000', '99999999999999999999999']) {
        const farPast = await anonymous.post(`${path}/${page}`, body);
        expect([farPast.status, farPast.json.score_cards, farPast.json.total_pages]).toEqual([200, [], 2]);
      }
      const all = [...ids(p1.json.score_cards), ...ids(p2.json.score_cards)];
      expect(new Set(all)).toEqual(new Set(created));
      const scores = [...p1.json.score_cards, ...p2.json.score_cards].map((e: Entry) => e.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
    }
  });

  it('shows a collision inside its root entry, not as an entry of its own', async () => {
    const original = LABELLED_CARDS.find((c) => c.key === 'seed-dispersal')!;
    const copy = await bob.client.post('/api/card', { card_html: html(`${original.content} Worth remembering.`), link: '', private: false });
    expect(copy.status).toBe(200);
    expect(copy.json.duplicate).toBe(true);
    const copyId = copy.json.card_metadata.id as string;
    const res = await eventuallyDefined(async () => {
      const r = await anonymous.post('/api/card/search/1', { content: original.paraphrase });
      const entry = (r.json.score_cards as Entry[]).find((e) => e.metadata[0]!.id === idOf.get('seed-dispersal'));
      return entry && entry.metadata.length === 2 ? r : undefined;
    }, 'the collision to appear in its root entry');
    const entry = (res.json.score_cards as Entry[]).find((e) => e.metadata[0]!.id === idOf.get('seed-dispersal'))!;
    expect(entry.metadata.map((c) => c.id)).toEqual([idOf.get('seed-dispersal'), copyId]);
    expect(ids(res.json.score_cards)).not.toContain(copyId);
  });

  it('near copies (not the same text) sent at the same moment make one entry: the earliest card, the others inside it', async () => {
    const text = uniqueText(90);
    const link = `https://example.org/near-copies/${randomUUID()}`;
    const made = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? bob : alice).client.post('/api/card', { card_html: html(`${text} variant${i}`), link, private: false })),
    );
    expect(made.map((r) => r.status)).toEqual(made.map(() => 200));
    const cards = made.map((r) => r.json.card_metadata as { id: string; created_at: string });
    const earliest = [...cards].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1))[0]!.id;

    const collection = await alice.client.post('/api/card_collection', { name: `near copies ${run}`, is_public: true });
    const collectionId = /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(collection.headers.get('location') ?? '')![1]!;
    for (const card of cards) expect((await alice.client.post(`/api/card_collection/${collectionId}`, { card_metadata_id: card.id })).status).toBe(204);
    const page = (await anonymous.get(`/api/card_collection/${collectionId}/1`)).json.bookmarks as Entry[];
    expect(page.map((e) => [e.metadata[0]!.id, e.metadata.length])).toEqual([[earliest, 12]]);

    const res = await eventuallyDefined(async () => {
      const r = await anonymous.post('/api/card/fulltextsearch/1', { content: text.split(' ').slice(0, 6).join(' '), link: [link] });
      const entries = r.json.score_cards as Entry[];
      return entries.length === 1 && entries[0]!.metadata.length === 12 ? entries : undefined;
    }, 'the near copies to show as one search entry');
    expect(res[0]!.metadata[0]!.id).toBe(earliest);
    expect(res[0]!.metadata.map((c) => c.id).sort()).toEqual(cards.map((c) => c.id).sort());
  });

  it('rejects bad input with a 400 naming the problem', async () => {
    const cases: [string, unknown][] = [
      ['/api/card/search/1', {}],
      ['/api/card/search/1', { content: '   ' }],
      ['/api/card/search/1', { content: 42 }],
      ['/api/card/fulltextsearch/1', { content: 'x'.repeat(2001) }],
      ['/api/card/fulltextsearch/1', { content: 'ok', tag_set: 5 }],
      ['/api/card/search/1', { content: 'ok', link: [1, 2] }],
      ['/api/card/search/0', { content: 'ok' }],
      ['/api/card/fulltextsearch/abc', { content: 'ok' }],
      ['/api/card_collection/search/1', { content: 'ok' }],
      ['/api/card_collection/fulltextsearch/1', { content: 'ok', collection_id: 'nope' }],
    ];
    for (const [path, body] of cases) {
      const res = await anonymous.post(path, body);
      expect([path, res.status]).toEqual([path, 400]);
      expect(typeof res.json.message).toBe('string');
    }
    expect((await anonymous.post('/api/card_collection/search/1', { content: 'ok', collection_id: randomUUID() })).status).toBe(404);
  });

  it('counts content characters as code points: 2000 emoji are a query, 2001 are not', async () => {
    const emoji = '\u{1F600}';
    for (const path of ['/api/card/search/1', '/api/card/fulltextsearch/1']) {
      expect([path, (await anonymous.post(path, { content: emoji.repeat(2000) })).status]).toEqual([path, 200]);
      const refused = await anonymous.post(path, { content: emoji.repeat(2001) });
      expect([path, refused.status, refused.json.message]).toEqual([path, 400, 'content: must be at most 2000 characters']);
    }
  });
});

describe('collection search', () => {
  async function createCollection(user: TestUser, isPublic: boolean): Promise<string> {
    const res = await user.client.post('/api/card_collection', { name: `search ${run}`, description: 'cards to search', is_public: isPublic });
    expect(res.status).toBe(204);
    return /([0-9a-f-]{36})$/.exec(res.headers.get('location') ?? '')![1]!;
  }
  async function bookmark(user: TestUser, collectionId: string, cardId: string) {
    const res = await user.client.post(`/api/card_collection/${collectionId}`, { card_metadata_id: cardId });
    expect(res.status).toBe(204);
  }

  it('searches only the visible bookmarked cards and returns the collection', async () => {
    const collectionId = await createCollection(bob, true);
    await bookmark(bob, collectionId, idOf.get('sourdough')!);
    await bookmark(bob, collectionId, idOf.get('vaccines')!);
    await bookmark(bob, collectionId, secretId);
    for (const path of ['/api/card_collection/search/1', '/api/card_collection/fulltextsearch/1']) {
      const res = await eventuallyDefined(async () => {
        const r = await anonymous.post(path, { content: 'vaccines sourdough', collection_id: collectionId });
        return r.json.bookmarks?.length === 2 ? r : undefined;
      }, `${path} to see both bookmarks`);
      expect(ids(res.json.bookmarks).sort()).toEqual([idOf.get('sourdough'), idOf.get('vaccines')].sort());
      expect(res.json.total_pages).toBe(1);
      expect(res.json.collection).toEqual({ id: collectionId, author_id: bob.id, name: `search ${run}`, description: 'cards to search', is_public: true, created_at: expect.any(String), updated_at: expect.any(String) });
      for (const entry of res.json.bookmarks as Entry[]) expect(typeof entry.score).toBe('number');
    }
    // Each bookmark is its own event keyed by its card: the bus does not order the private card's after the public ones.
    const own = await eventuallyDefined(async () => {
      const r = await bob.client.post('/api/card_collection/fulltextsearch/1', { content: secretWord, collection_id: collectionId });
      return r.json.bookmarks?.length > 0 ? r : undefined;
    }, 'the owner to find the private bookmark');
    expect(ids(own.json.bookmarks)).toEqual([secretId]);
    const paraphrase = LABELLED_CARDS.find((c) => c.key === 'vaccines')!.paraphrase;
    const semantic = await alice.client.post('/api/card_collection/search/1', { content: paraphrase, collection_id: collectionId });
    expect(ids(semantic.json.bookmarks)[0]).toBe(idOf.get('vaccines'));
  });

  it('finds a bookmarked collision inside its root entry; a private one only for its owner', async () => {
    const original = LABELLED_CARDS.find((c) => c.key === 'index-funds')!;
    const rootId = idOf.get('index-funds')!;
    const copyOf = async (suffix: string, isPrivate: boolean) => {
      const res = await bob.client.post('/api/card', { card_html: html(`${original.content} ${suffix}`), link: '', private: isPrivate });
      expect([res.status, res.json.duplicate]).toEqual([200, true]);
      return res.json.card_metadata.id as string;
    };
    const secretCopy = await copyOf('Kept for myself.', true);
    const copy = await copyOf('Worth keeping.', false);
    const collectionId = await createCollection(bob, true);
    await bookmark(bob, collectionId, secretCopy);
    for (const path of ['/api/card_collection/search/1', '/api/card_collection/fulltextsearch/1']) {
      const own = await eventuallyDefined(async () => {
        const r = await bob.client.post(path, { content: original.misspelled, collection_id: collectionId });
        return r.json.bookmarks?.length === 1 && r.json.bookmarks[0].metadata.some((c: { id: string }) => c.id === secretCopy) ? r : undefined;
      }, `${path}: the owner to find the bookmarked private collision`);
      expect(own.json.bookmarks[0].metadata[0].id).toBe(rootId);
      expect(own.json.total_pages).toBe(1);
      const other = await alice.client.post(path, { content: original.misspelled, collection_id: collectionId });
      expect([other.json.bookmarks, other.json.total_pages]).toEqual([[], 0]);
    }
    await bookmark(bob, collectionId, copy);
    for (const path of ['/api/card_collection/search/1', '/api/card_collection/fulltextsearch/1']) {
      const res = await eventuallyDefined(async () => {
        const r = await anonymous.post(path, { content: original.misspelled, collection_id: collectionId });
        return r.json.bookmarks?.length === 1 ? r : undefined;
      }, `${path}: anonymous to find the bookmarked public collision`);
      expect(res.json.bookmarks[0].metadata.map((c: { id: string }) => c.id)).toEqual([rootId, copy]);
      expect(res.json.total_pages).toBe(1);
    }
  });

  it("tag and link filters match an entry through a collision the caller may see, on card and collection searches; someone else's private collision's tag never does", async () => {
    const text = uniqueText(75);
    const query = text.split(' ').slice(10, 20).join(' ');
    const rootId = await postCard(alice, { card_html: html(text), link: `https://alpha${run}.example/x`, tag_set: [`alpha${run}`] });
    const collide = async (body: Record<string, unknown>) => {
      const res = await bob.client.post('/api/card', { card_html: html(text), private: false, ...body });
      expect([res.status, res.json.duplicate]).toEqual([200, true]);
      return res.json.card_metadata.id as string;
    };
    const copy = await collide({ link: `https://beta${run}.example/y`, tag_set: [`beta${run}`] });
    const secretCopy = await collide({ link: `https://gamma${run}.example/z`, tag_set: [`gamma${run}`], private: true });
    await indexed(alice, rootId);
    // The collection holds bob's public collision only; a collection of his own holding the private one shows when
    // the search index has that one too.
    const collectionId = await createCollection(bob, true);
    await bookmark(bob, collectionId, copy);
    const secretCollectionId = await createCollection(bob, false);
    await bookmark(bob, secretCollectionId, secretCopy);
    for (const [client, id] of [[anonymous, collectionId], [bob.client, secretCollectionId]] as const) {
      await eventuallyDefined(async () => {
        const r = await client.post('/api/card_collection/fulltextsearch/1', { content: query, collection_id: id });
        return r.json.bookmarks?.length === 1 ? r : undefined;
      }, `collection ${id} to show the bookmarked collision's entry`);
    }
    const paths = ['/api/card/search/1', '/api/card/fulltextsearch/1', '/api/card_collection/search/1', '/api/card_collection/fulltextsearch/1'];
    const found = async (client: ApiClient, path: string, filter: Record<string, unknown>) => {
      const res = await client.post(path, { content: query, ...filter, ...(path.includes('collection') ? { collection_id: collectionId } : {}) });
      expect([path, filter, res.status]).toEqual([path, filter, 200]);
      const entries = (res.json.score_cards ?? res.json.bookmarks) as Entry[];
      return { ids: ids(entries).filter((id) => id === rootId), pages: res.json.total_pages > 0 };
    };
    for (const path of paths) {
      for (const filter of [{ tag_set: [`beta${run}`] }, { link: [`beta${run}.example`] }, { tag_set: [`ALPHA${run}`] }]) {
        expect([path, filter, await found(anonymous, path, filter)]).toEqual([path, filter, { ids: [rootId], pages: true }]);
      }
      for (const filter of [{ tag_set: [`gamma${run}`] }, { link: [`gamma${run}.example`] }]) {
        for (const client of [anonymous, alice.client]) expect([path, filter, await found(client, path, filter)]).toEqual([path, filter, { ids: [], pages: false }]);
        expect([path, filter, await found(bob.client, path, filter)]).toEqual([path, filter, { ids: [rootId], pages: true }]);
      }
    }
  });

  it('reads a tag_set item holding commas as the tags it lists', async () => {
    const collectionId = await createCollection(bob, true);
    await bookmark(bob, collectionId, idOf.get('sourdough')!);
    await bookmark(bob, collectionId, idOf.get('vaccines')!);
    for (const path of ['/api/card_collection/search/1', '/api/card_collection/fulltextsearch/1']) {
      await eventuallyDefined(async () => {
        const r = await anonymous.post(path, { content: 'vaccines sourdough', collection_id: collectionId });
        return r.json.bookmarks?.length === 2 ? r : undefined;
      }, `${path} to see both bookmarks`);
      const res = await anonymous.post(path, { content: 'vaccines sourdough', collection_id: collectionId, tag_set: ['Medicine, running'] });
      expect([path, ids(res.json.bookmarks), res.json.total_pages]).toEqual([path, [idOf.get('vaccines')], 1]);
    }
  });

  it('a private collection of someone else reads as 404', async () => {
    const collectionId = await createCollection(bob, false);
    await bookmark(bob, collectionId, idOf.get('bonds')!);
    expect((await alice.client.post('/api/card_collection/search/1', { content: 'bonds', collection_id: collectionId })).status).toBe(404);
    expect((await anonymous.post('/api/card_collection/fulltextsearch/1', { content: 'bonds', collection_id: collectionId })).status).toBe(404);
    const own = await eventuallyDefined(async () => {
      const r = await bob.client.post('/api/card_collection/fulltextsearch/1', { content: 'bnod coupon', collection_id: collectionId });
      return r.json.bookmarks?.length === 1 ? r : undefined;
    }, 'the owner to search a private collection');
    expect(ids(own.json.bookmarks)).toEqual([idOf.get('bonds')]);
  });
});
