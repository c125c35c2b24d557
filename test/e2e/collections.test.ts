import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, postCard, uniqueText } from './cards-support';

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;
let anonymous: ApiClient;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'alice'), signUp(system.baseUrl, mailbox, 'bob')]);
  anonymous = new ApiClient(system.baseUrl);
});
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+$/;

async function createCollection(user: TestUser, body: Record<string, unknown> = {}): Promise<string> {
  const res = await user.client.post('/api/card_collection', { name: `list ${Date.now()}`, is_public: true, ...body });
  if (res.status !== 204) throw new Error(`collection create failed: ${res.status} ${res.text}`);
  return /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(res.headers.get('location') ?? '')![1]!;
}

describe('creating and listing collections', () => {
  it('answers 204 with a Location header naming the new id; the owner sees all, others the public ones', async () => {
    const res = await alice.client.post('/api/card_collection', { name: 'Reading', description: 'for later', is_public: true });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const id = /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(res.headers.get('location') ?? '')?.[1];
    expect(id).toBeDefined();
    const hidden = await createCollection(alice, { name: 'Secret', is_public: false });

    const own = await alice.client.get(`/api/user/collections/${alice.id}`);
    expect(own.status).toBe(200);
    expect(own.json.map((c: { id: string }) => c.id)).toEqual(expect.arrayContaining([id, hidden]));
    expect(own.json.find((c: { id: string }) => c.id === id)).toEqual({
      id,
      author_id: alice.id,
      name: 'Reading',
      description: 'for later',
      is_public: true,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
      file_id: null,
    });
    for (const viewer of [bob.client, anonymous]) {
      const seen = await viewer.get(`/api/user/collections/${alice.id}`);
      expect(seen.status).toBe(200);
      expect(seen.json.map((c: { id: string }) => c.id)).toContain(id);
      expect(seen.json.map((c: { id: string }) => c.id)).not.toContain(hidden);
    }
    const mine = await alice.client.get('/api/card_collection');
    expect(mine.status).toBe(200);
    expect(mine.json.map((c: { id: string }) => c.id)).toEqual(expect.arrayContaining([id, hidden]));
    expect((await bob.client.get('/api/card_collection')).json.map((c: { id: string }) => c.id)).not.toContain(id);
    expect((await anonymous.get('/api/card_collection')).status).toBe(401);
    expect((await anonymous.get('/api/user/collections/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await anonymous.get('/api/user/collections/nope')).status).toBe(400);
  });

  it('rejects empty names, over-long fields, wrong types and malformed bodies with 400; anonymous with 401', async () => {
    const before = (await alice.client.get('/api/card_collection')).json.length;
    for (const body of [
      { is_public: true },
      { name: '', is_public: true },
      { name: '   ', is_public: true },
      { name: 'x'.repeat(256), is_public: true },
      { name: 'ok', is_public: true, description: 'd'.repeat(2001) },
      { name: 'ok' },
      { name: 'ok', is_public: 'sometimes' },
      { name: 42, is_public: true },
    ]) {
      const res = await alice.client.post('/api/card_collection', body);
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/name|description|is_public/);
    }
    expect((await alice.client.request('POST', '/api/card_collection', '{"name":', { 'content-type': 'application/json' })).status).toBe(400);
    expect((await alice.client.post('/api/card_collection', ['name'])).status).toBe(400);
    expect((await anonymous.post('/api/card_collection', { name: 'x', is_public: true })).status).toBe(401);
    expect((await alice.client.get('/api/card_collection')).json.length).toBe(before);
    expect((await alice.client.post('/api/card_collection', { name: 'x'.repeat(255), is_public: false, description: 'd'.repeat(2000) })).status).toBe(204);
  });

  it('counts name and description characters as code points, the name once trimmed', async () => {
    const emoji = '\u{1F600}';
    const emojiId = await createCollection(alice, { name: emoji.repeat(255), description: emoji.repeat(2000) });
    const spacedId = await createCollection(alice, { name: `  ${'y'.repeat(255)}  ` });
    for (const body of [
      { name: emoji.repeat(256), is_public: true },
      { name: ` ${'y'.repeat(256)} `, is_public: true },
      { name: 'ok', is_public: true, description: emoji.repeat(2001) },
    ]) {
      const res = await alice.client.post('/api/card_collection', body);
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/(name|description): must be at most (255|2000) characters/);
    }
    const own = (await alice.client.get('/api/card_collection')).json as { id: string; name: string; description: string }[];
    expect(own.find((c) => c.id === emojiId)).toMatchObject({ name: emoji.repeat(255), description: emoji.repeat(2000) });
    expect(own.find((c) => c.id === spacedId)?.name).toBe('y'.repeat(255));
    expect((await alice.client.put('/api/card_collection', { collection_id: spacedId, name: ` ${emoji.repeat(255)} `, description: emoji.repeat(2000) })).status).toBe(204);
    expect((await alice.client.put('/api/card_collection', { collection_id: spacedId, name: emoji.repeat(256) })).status).toBe(400);
    const page = (await alice.client.get(`/api/card_collection/${spacedId}/1`)).json;
    expect(page.collection).toMatchObject({ name: emoji.repeat(255), description: emoji.repeat(2000) });
  });
});

describe('changing collections', () => {
  it('lets the owner update name, description and is_public; 403 for others on a public one, 404 on a private one', async () => {
    const id = await createCollection(alice, { name: 'Before', description: 'old' });
    expect((await alice.client.put('/api/card_collection', { collection_id: id, name: 'After', description: 'new', is_public: false })).status).toBe(204);
    const listed = (await alice.client.get(`/api/user/collections/${alice.id}`)).json.find((c: { id: string }) => c.id === id);
    expect(listed).toMatchObject({ name: 'After', description: 'new', is_public: false });
    expect((await bob.client.put('/api/card_collection', { collection_id: id, name: 'Bob was here' })).status).toBe(404);
    expect((await alice.client.put('/api/card_collection', { collection_id: id, is_public: true })).status).toBe(204);
    const denied = await bob.client.put('/api/card_collection', { collection_id: id, name: 'Bob was here' });
    expect(denied.status).toBe(403);
    expect(denied.json.message).toEqual(expect.any(String));
    expect((await anonymous.put('/api/card_collection', { collection_id: id, name: 'anon' })).status).toBe(401);
    for (const body of [{ collection_id: 'bad' }, { name: 'x' }, { collection_id: id, name: '' }, { collection_id: id, name: 'n'.repeat(256) }, { collection_id: id, description: 'd'.repeat(2001) }, { collection_id: id, is_public: 3 }]) {
      expect((await alice.client.put('/api/card_collection', body)).status).toBe(400);
    }
    expect((await alice.client.put('/api/card_collection', { collection_id: '00000000-0000-4000-8000-000000000000', name: 'x' })).status).toBe(404);
    expect((await alice.client.get(`/api/user/collections/${alice.id}`)).json.find((c: { id: string }) => c.id === id)).toMatchObject({ name: 'After', description: 'new', is_public: true });
    // null clears the description, as null (or leaving it out) does at creation.
    expect((await alice.client.put('/api/card_collection', { collection_id: id, description: null })).status).toBe(204);
    expect((await alice.client.get(`/api/user/collections/${alice.id}`)).json.find((c: { id: string }) => c.id === id)).toMatchObject({ name: 'After', description: '' });
  });

  it('keeps every change when the owner changes different fields at once: a collection made private stays private', async () => {
    // Each request changes one field; none may write back what it read of the others (on MongoDB they did).
    for (let round = 0; round < 8; round++) {
      const id = await createCollection(alice, { name: 'Shared list', description: 'old', is_public: true });
      const answers = await Promise.all([
        alice.client.put('/api/card_collection', { collection_id: id, name: `Renamed ${round}` }),
        alice.client.put('/api/card_collection', { collection_id: id, is_public: false }),
        alice.client.put('/api/card_collection', { collection_id: id, description: 'new' }),
      ]);
      expect(answers.map((a) => a.status)).toEqual([204, 204, 204]);
      expect((await anonymous.get(`/api/card_collection/${id}/1`)).status).toBe(404);
      expect((await bob.client.get(`/api/user/collections/${alice.id}`)).json.map((c: { id: string }) => c.id)).not.toContain(id);
      const own = await alice.client.get(`/api/card_collection/${id}/1`);
      expect(own.json.collection).toMatchObject({ name: `Renamed ${round}`, description: 'new', is_public: false });
    }
  });

  it('deletes a collection (body collection_id) but not its cards', async () => {
    const id = await createCollection(alice);
    const cardId = await postCard(alice);
    expect((await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: cardId })).status).toBe(204);
    expect((await bob.client.delete('/api/card_collection', { collection_id: id })).status).toBe(403);
    expect((await anonymous.delete('/api/card_collection', { collection_id: id })).status).toBe(401);
    expect((await alice.client.delete('/api/card_collection', { collection_id: 'x' })).status).toBe(400);
    expect((await alice.client.delete('/api/card_collection', {})).status).toBe(400);
    expect((await alice.client.delete('/api/card_collection', { collection_id: id })).status).toBe(204);
    expect((await alice.client.get(`/api/card_collection/${id}/1`)).status).toBe(404);
    expect((await alice.client.get(`/api/card/${cardId}`)).status).toBe(200);
    expect((await alice.client.delete('/api/card_collection', { collection_id: id })).status).toBe(404);
    const privateId = await createCollection(alice, { is_public: false });
    expect((await bob.client.delete('/api/card_collection', { collection_id: privateId })).status).toBe(404);
  });
});

describe('PUT /api/card_collection with If-Match (the ETag of GET /api/card_collection/:collection_id/:page)', () => {
  const update = (user: TestUser, body: object, ifMatch?: string) =>
    user.client.request('PUT', '/api/card_collection', body, ifMatch === undefined ? {} : { 'if-match': ifMatch });
  const read = (client: ApiClient, id: string) => client.request('GET', `/api/card_collection/${id}/1`, undefined, { 'accept-encoding': 'identity' });

  it("answers the same strong ETag to every caller who sees the collection (its cards are not part of it), a new one after a change", async () => {
    const id = await createCollection(alice, { name: 'Versioned', is_public: true });
    const tag = (await read(alice.client, id)).headers.get('etag');
    expect(tag).toMatch(/^"\d+"$/);
    expect((await read(bob.client, id)).headers.get('etag')).toBe(tag);
    expect((await read(anonymous, id)).headers.get('etag')).toBe(tag);
    expect((await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: await postCard(alice) })).status).toBe(204);
    expect((await read(alice.client, id)).headers.get('etag')).toBe(tag);
    expect((await update(alice, { collection_id: id, description: 'changed' })).status).toBe(204);
    expect((await read(alice.client, id)).headers.get('etag')).not.toBe(tag);
  });

  it('is 412 with a message on a stale ETag and changes nothing; 204 with the current one, whose answer carries the next ETag for a second save', async () => {
    const id = await createCollection(alice, { name: 'Two tabs', description: 'old', is_public: true });
    const stale = (await alice.client.get(`/api/card_collection/${id}/1`)).headers.get('etag')!;
    const otherTab = await update(alice, { collection_id: id, name: 'Renamed in the other tab' }, stale);
    expect(otherTab.status).toBe(204);
    const refused = await update(alice, { collection_id: id, description: 'late', is_public: false }, stale);
    expect(refused.status).toBe(412);
    expect(refused.json.message).toMatch(/^The collection was changed since you read it/);
    const now = await read(alice.client, id);
    expect(now.json.collection).toMatchObject({ name: 'Renamed in the other tab', description: 'old', is_public: true });
    expect(now.headers.get('etag')).toBe(otherTab.headers.get('etag'));
    const first = await update(alice, { collection_id: id, description: 'mine' }, now.headers.get('etag')!);
    expect(first.status).toBe(204);
    expect(first.headers.get('etag')).toMatch(/^"\d+"$/);
    // The second save on the first save's tag, with no read between: written, not refused by that first save.
    const second = await update(alice, { collection_id: id, is_public: false }, first.headers.get('etag')!);
    expect(second.status).toBe(204);
    const last = await read(alice.client, id);
    expect(last.json.collection).toMatchObject({ name: 'Renamed in the other tab', description: 'mine', is_public: false });
    expect(last.headers.get('etag')).toBe(second.headers.get('etag'));
  });

  it('without If-Match (or with *) changes as before; a compressed answer\'s W/ tag is the same version; a tag not of this API is 412, a malformed header 400', async () => {
    const id = await createCollection(alice, { name: 'Plain', is_public: true });
    expect((await update(alice, { collection_id: id, name: 'One' })).status).toBe(204);
    expect((await update(alice, { collection_id: id, name: 'Two' }, '*')).status).toBe(204);
    const weak = `W/${(await read(alice.client, id)).headers.get('etag')}`;
    expect((await update(alice, { collection_id: id, name: 'Three' }, weak)).status).toBe(204);
    expect((await update(alice, { collection_id: id, name: 'Four' }, '"not-a-version"')).status).toBe(412);
    const malformed = await update(alice, { collection_id: id, name: 'Five' }, 'no quotes');
    expect(malformed.status).toBe(400);
    expect(malformed.json.message).toMatch(/^If-Match: .*GET \/api\/card_collection\/:collection_id\/:page/);
    expect((await read(alice.client, id)).json.collection.name).toBe('Three');
    // Another user's collection stays theirs whatever the tag: refused as without one.
    expect((await update(bob, { collection_id: id, name: 'Bob was here' }, weak)).status).toBe(403);
  });
});

describe('bookmarks', () => {
  it('adds visible cards (twice is a no-op), removes them, and refuses others and hidden cards', async () => {
    const id = await createCollection(alice);
    const card = await postCard(bob);
    const bobsPrivate = await postCard(bob, { private: true });
    expect((await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(204);
    expect((await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(204);
    let page = (await anonymous.get(`/api/card_collection/${id}/1`)).json;
    expect(page.bookmarks).toHaveLength(1);
    expect(page.total_pages).toBe(1);

    expect((await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: bobsPrivate })).status).toBe(404);
    expect((await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: '00000000-0000-4000-8000-000000000000' })).status).toBe(404);
    expect((await bob.client.post(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(403);
    expect((await anonymous.post(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(401);
    expect((await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: 'zzz' })).status).toBe(400);
    expect((await alice.client.post(`/api/card_collection/${id}`, {})).status).toBe(400);
    expect((await alice.client.post('/api/card_collection/not-a-uuid', { card_metadata_id: card })).status).toBe(400);

    expect((await bob.client.delete(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(403);
    expect((await alice.client.delete(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(204);
    expect((await alice.client.delete(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(404);
    page = (await anonymous.get(`/api/card_collection/${id}/1`)).json;
    expect(page).toMatchObject({ bookmarks: [], total_pages: 0 });
  });

  it('removing a card the caller can no longer see (made private by its author) answers 404 as for a deleted card, and takes it out', async () => {
    const bobs = await createCollection(bob);
    const [hidden, deleted] = [await postCard(alice), await postCard(alice)];
    for (const card of [hidden, deleted]) expect((await bob.client.post(`/api/card_collection/${bobs}`, { card_metadata_id: card })).status).toBe(204);
    expect((await alice.client.put('/api/card/update', { card_uuid: hidden, private: true })).status).toBe(204);
    expect((await alice.client.delete(`/api/card/${deleted}`)).status).toBe(204);

    const [removeHidden, removeDeleted] = [
      await bob.client.delete(`/api/card_collection/${bobs}`, { card_metadata_id: hidden }),
      await bob.client.delete(`/api/card_collection/${bobs}`, { card_metadata_id: deleted }),
    ];
    expect([removeHidden.status, removeDeleted.status]).toEqual([404, 404]);
    expect(removeHidden.json).toEqual(removeDeleted.json);
    expect((await bob.client.delete(`/api/card_collection/${bobs}`, { card_metadata_id: hidden })).status).toBe(404);

    // Taken out for good: made public again, the card does not come back into the collection its owner emptied.
    expect((await alice.client.put('/api/card/update', { card_uuid: hidden, private: false })).status).toBe(204);
    expect((await bob.client.get(`/api/card_collection/${bobs}/1`)).json).toMatchObject({ bookmarks: [], total_pages: 0 });
    expect((await bob.client.post('/api/card_collection/bookmark', { collection_ids: hidden })).json).toEqual([{ card_uuid: hidden, collection_ids: [] }]);
    expect((await bob.client.post(`/api/card_collection/${bobs}`, { card_metadata_id: hidden })).status).toBe(204);
    expect((await bob.client.delete(`/api/card_collection/${bobs}`, { card_metadata_id: hidden })).status).toBe(204);
  });

  it('deleting a card removes its bookmarks', async () => {
    const id = await createCollection(alice);
    const card = await postCard(alice);
    await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: card });
    expect((await alice.client.delete(`/api/card/${card}`)).status).toBe(204);
    expect((await alice.client.get(`/api/card_collection/${id}/1`)).json.bookmarks).toEqual([]);
  });
});

describe("DELETE /api/card_collection/:collection_id with an entry's root", () => {
  type Entries = { bookmarks: { metadata: { id: string }[] }[] };
  const groups = (page: Entries) => page.bookmarks.map((b) => b.metadata.map((c) => c.id));
  const entries = async (collection: string) => groups((await bob.client.get(`/api/card_collection/${collection}/1`)).json);
  const lookup = async (card: string) => (await bob.client.post('/api/card_collection/bookmark', { collection_ids: card })).json[0].collection_ids;
  const bookmark = async (collection: string, card: string) => expect((await bob.client.post(`/api/card_collection/${collection}`, { card_metadata_id: card })).status).toBe(204);
  const remove = async (collection: string, card: string) => (await bob.client.delete(`/api/card_collection/${collection}`, { card_metadata_id: card })).status;

  /** A public root by alice and a public duplicate of it by `copier`. */
  async function rootAndCopy(copier: TestUser, text = uniqueText()): Promise<{ root: string; copy: string }> {
    const root = await postCard(alice, { card_html: html(text) });
    const made = (await copier.client.post('/api/card', { card_html: html(`${text}!`), link: '', private: false })).json;
    expect(made.duplicate).toBe(true);
    return { root, copy: made.card_metadata.id };
  }

  it('takes out the whole entry when the root and a duplicate are both bookmarked', async () => {
    const { root, copy } = await rootAndCopy(bob);
    const id = await createCollection(bob);
    for (const card of [copy, root]) await bookmark(id, card);
    expect(await entries(id)).toEqual([[root, copy]]);

    expect(await remove(id, root)).toBe(204);
    expect(await entries(id)).toEqual([]);
    expect([await lookup(root), await lookup(copy)]).toEqual([[], []]);
    expect(await remove(id, root)).toBe(404);
  });

  it('takes out an entry held only through a bookmarked duplicate, as the lookup of its root reports it held', async () => {
    const { root, copy } = await rootAndCopy(bob);
    const [id, other] = [await createCollection(bob), await createCollection(bob)];
    for (const collection of [id, other]) await bookmark(collection, copy);
    expect(await lookup(root)).toEqual([id, other]);

    expect(await remove(id, root)).toBe(204);
    expect(await entries(id)).toEqual([]);
    expect(await lookup(root)).toEqual([other]);
    expect(await entries(other)).toEqual([[root, copy]]);
    expect(await remove(id, root)).toBe(404);
  });

  it("takes out only a duplicate's own bookmark when removed by the duplicate's id", async () => {
    const { root, copy } = await rootAndCopy(bob);
    const id = await createCollection(bob);
    for (const card of [root, copy]) await bookmark(id, card);

    expect(await remove(id, copy)).toBe(204);
    expect(await entries(id)).toEqual([[root, copy]]);
    // Still shown in its root's entry, so still in the collection for the lookup; removal by its id is of its own bookmark.
    expect([await lookup(root), await lookup(copy)]).toEqual([[id], [id]]);
    expect(await remove(id, copy)).toBe(404);
    expect(await remove(id, root)).toBe(204);
    expect(await entries(id)).toEqual([]);
  });

  it('takes out duplicates the caller can no longer see too, so they do not come back when made public again', async () => {
    const { root, copy: hidden } = await rootAndCopy(alice);
    const [both, onlyHidden] = [await createCollection(bob), await createCollection(bob)];
    for (const [collection, card] of [[both, root], [both, hidden], [onlyHidden, hidden]] as const) await bookmark(collection, card);
    expect((await alice.client.put('/api/card/update', { card_uuid: hidden, private: true })).status).toBe(204);
    expect(await entries(onlyHidden)).toEqual([]);

    expect(await remove(both, root)).toBe(204);
    // Held only through a card bob can no longer see: 404 as for a card not there (as when removing the hidden card
    // itself), and its bookmark goes all the same.
    expect(await remove(onlyHidden, root)).toBe(404);

    // A private duplicate cannot be made public; rewritten, it is a card of its own and can.
    expect((await alice.client.put('/api/card/update', { card_uuid: hidden, card_html: html(uniqueText()) })).status).toBe(204);
    expect((await alice.client.put('/api/card/update', { card_uuid: hidden, private: false })).status).toBe(204);
    expect([await entries(both), await entries(onlyHidden)]).toEqual([[], []]);
    expect([await lookup(root), await lookup(hidden)]).toEqual([[], []]);
  });

  it("leaves nothing of the removed entry to the collection's search", async () => {
    const marker = `zq${Date.now().toString(36)}entry`;
    const { root, copy } = await rootAndCopy(bob, `${marker} ${uniqueText()}`);
    const id = await createCollection(bob);
    for (const card of [copy, root]) await bookmark(id, card);
    const search = async () => groups((await anonymous.post('/api/card_collection/fulltextsearch/1', { content: marker, collection_id: id })).json);
    const deadline = Date.now() + 30_000;
    const until = async (done: (found: string[][]) => boolean) => {
      let found = await search();
      while (!done(found) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        found = await search();
      }
      return found;
    };
    expect(await until((found) => found.length > 0)).toEqual([[root, copy]]);

    expect(await remove(id, root)).toBe(204);
    // Bookmark events are keyed by card: on Kafka the removal (keys root and copy) and a later bookmark (its own key)
    // may be handled in either order, so wait for both, and a removal never applied fails the wait.
    const later = await postCard(bob, { card_html: html(`${marker} ${uniqueText()}`) });
    await bookmark(id, later);
    expect(await until((found) => found.some((g) => g[0] === later) && !found.some((g) => g.includes(root) || g.includes(copy)))).toEqual([[later]]);
  });
});

describe('GET /api/card_collection/:collection_id/:page', () => {
  it('pages 25 bookmarks at a time, anonymously for a public collection, each entry [root, ...visible collisions]', async () => {
    const id = await createCollection(alice, { name: 'Big' });
    const text = uniqueText();
    const root = await postCard(alice, { card_html: html(text) });
    const collision = (await bob.client.post('/api/card', { card_html: html(`${text}!`), link: '', private: false })).json;
    expect(collision.duplicate).toBe(true);
    const privateCollision = (await bob.client.post('/api/card', { card_html: html(`${text}?`), link: '', private: true })).json;
    expect(privateCollision.duplicate).toBe(true);
    const cards = [root];
    for (let i = 0; i < 26; i++) cards.push(await postCard(alice, { private: i === 5 }));
    for (const card of cards) expect((await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(204);

    const page1 = await anonymous.get(`/api/card_collection/${id}/1`);
    expect(page1.status).toBe(200);
    expect(page1.json.collection).toMatchObject({ id, author_id: alice.id, name: 'Big', is_public: true });
    expect(page1.json.total_pages).toBe(2);
    expect(page1.json.bookmarks).toHaveLength(25);
    const first = page1.json.bookmarks[0].metadata;
    expect(first.map((c: { id: string }) => c.id)).toEqual([root, collision.card_metadata.id]);
    expect(first[0].author).toMatchObject({ id: alice.id });
    expect(first[1].author).toMatchObject({ id: bob.id });
    const page2 = (await anonymous.get(`/api/card_collection/${id}/2`)).json;
    expect(page2.bookmarks).toHaveLength(1);
    const anonymousIds = [...page1.json.bookmarks, ...page2.bookmarks].map((b: { metadata: { id: string }[] }) => b.metadata[0]!.id);
    expect(anonymousIds).toEqual(cards.filter((_, i) => i !== 6));

    const asBob = (await bob.client.get(`/api/card_collection/${id}/1`)).json.bookmarks[0].metadata.map((c: { id: string }) => c.id);
    expect(asBob).toEqual([root, collision.card_metadata.id, privateCollision.card_metadata.id]);
    const asAlice = await alice.client.get(`/api/card_collection/${id}/2`);
    expect(asAlice.json.bookmarks).toHaveLength(2);
    expect((await anonymous.get(`/api/card_collection/${id}/3`)).json.bookmarks).toEqual([]);
    expect((await anonymous.get(`/api/card_collection/${id}/0`)).status).toBe(400);
    expect((await anonymous.get(`/api/card_collection/nope/1`)).status).toBe(400);
    expect((await anonymous.get(`/api/card_collection/00000000-0000-4000-8000-000000000000/1`)).status).toBe(404);
  });

  it('lists a bookmarked duplicate inside its root\'s entry, once, as the collection\'s search shows it', async () => {
    const marker = `zq${Date.now().toString(36)}copy`;
    const text = `${marker} ${uniqueText()}`;
    const root = await postCard(alice, { card_html: html(text) });
    const copy = (await bob.client.post('/api/card', { card_html: html(`${text}!`), link: '', private: false })).json;
    expect(copy.duplicate).toBe(true);
    const other = await postCard(bob);
    const id = await createCollection(bob);
    for (const card of [other, copy.card_metadata.id]) expect((await bob.client.post(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(204);

    const groups = (page: { bookmarks: { metadata: { id: string }[] }[] }) => page.bookmarks.map((b) => b.metadata.map((c) => c.id));
    const listed = (await anonymous.get(`/api/card_collection/${id}/1`)).json;
    expect(groups(listed)).toEqual([[other], [root, copy.card_metadata.id]]);
    expect(listed.total_pages).toBe(1);

    const search = () => anonymous.post('/api/card_collection/fulltextsearch/1', { content: marker, collection_id: id });
    const deadline = Date.now() + 30_000;
    let found = await search();
    while (found.status === 200 && found.json.bookmarks.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      found = await search();
    }
    expect(groups(found.json)).toEqual([[root, copy.card_metadata.id]]);

    // The root bookmarked too: still one entry, where the first of the two was bookmarked.
    expect((await bob.client.post(`/api/card_collection/${id}`, { card_metadata_id: root })).status).toBe(204);
    const again = (await anonymous.get(`/api/card_collection/${id}/1`)).json;
    expect(groups(again)).toEqual([[other], [root, copy.card_metadata.id]]);
    expect(again.total_pages).toBe(1);
  });

  it('hides a private collection and its cards from others (404) but not from its owner', async () => {
    const id = await createCollection(alice, { is_public: false });
    const card = await postCard(alice);
    await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: card });
    expect((await anonymous.get(`/api/card_collection/${id}/1`)).status).toBe(404);
    expect((await bob.client.get(`/api/card_collection/${id}/1`)).status).toBe(404);
    expect((await bob.client.post(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(404);
    const own = await alice.client.get(`/api/card_collection/${id}/1`);
    expect(own.status).toBe(200);
    expect(own.json.bookmarks[0].metadata[0].id).toBe(card);
    const lookup = (await bob.client.post('/api/card_collection/bookmark', { collection_ids: card })).json;
    expect(lookup).toEqual([{ card_uuid: card, collection_ids: [] }]);
  });
});

describe('POST /api/card_collection/bookmark', () => {
  it("answers, for each listed card id, the caller's collections holding it", async () => {
    const [c1, c2] = [await createCollection(alice), await createCollection(alice, { is_public: false })];
    const bobs = await createCollection(bob);
    const [inBoth, inOne, inNone] = [await postCard(alice), await postCard(bob), await postCard(alice)];
    for (const [collection, card] of [[c1, inBoth], [c2, inBoth], [c2, inOne]] as const) await alice.client.post(`/api/card_collection/${collection}`, { card_metadata_id: card });
    await bob.client.post(`/api/card_collection/${bobs}`, { card_metadata_id: inBoth });
    const unknown = '00000000-0000-4000-8000-000000000000';
    const res = await alice.client.post('/api/card_collection/bookmark', { collection_ids: `${inBoth}, ${inOne},${inNone},${unknown}` });
    expect(res.status).toBe(200);
    expect(res.json).toHaveLength(4);
    expect(res.json[0]).toEqual({ card_uuid: inBoth, collection_ids: expect.arrayContaining([c1, c2]) });
    expect(res.json[0].collection_ids).toHaveLength(2);
    expect(res.json.slice(1)).toEqual([
      { card_uuid: inOne, collection_ids: [c2] },
      { card_uuid: inNone, collection_ids: [] },
      { card_uuid: unknown, collection_ids: [] },
    ]);
    expect((await bob.client.post('/api/card_collection/bookmark', { collection_ids: inBoth })).json).toEqual([{ card_uuid: inBoth, collection_ids: [bobs] }]);
  });

  it('does not reveal a bookmarked card that its author made private: it answers no collections, as a deleted one does', async () => {
    const bobs = await createCollection(bob);
    const [hidden, deleted] = [await postCard(alice), await postCard(alice)];
    for (const card of [hidden, deleted]) await bob.client.post(`/api/card_collection/${bobs}`, { card_metadata_id: card });
    expect((await alice.client.put('/api/card/update', { card_uuid: hidden, private: true })).status).toBe(204);
    expect((await alice.client.delete(`/api/card/${deleted}`)).status).toBe(204);
    const res = await bob.client.post('/api/card_collection/bookmark', { collection_ids: `${hidden},${deleted}` });
    expect(res.json).toEqual([
      { card_uuid: hidden, collection_ids: [] },
      { card_uuid: deleted, collection_ids: [] },
    ]);
    expect((await bob.client.get(`/api/card_collection/${bobs}/1`)).json).toMatchObject({ bookmarks: [], total_pages: 0 });

    expect((await alice.client.put('/api/card/update', { card_uuid: hidden, private: false })).status).toBe(204);
    expect((await bob.client.post('/api/card_collection/bookmark', { collection_ids: hidden })).json).toEqual([{ card_uuid: hidden, collection_ids: [bobs] }]);
  });

  it("counts for a root and for each duplicate of it the caller's collections holding any card of the group the caller may see, as the collection page lists them in one entry", async () => {
    const text = uniqueText();
    const root = await postCard(alice, { card_html: html(text) });
    const copies = [];
    for (const author of [bob, alice]) {
      const made = (await author.client.post('/api/card', { card_html: html(`${text}!`), link: '', private: false })).json;
      expect(made.duplicate).toBe(true);
      copies.push(made.card_metadata.id as string);
    }
    const [bobsCopy, alicesCopy] = copies as [string, string];
    const [holdsCopy, holdsRoot, holdsOtherCopy] = [await createCollection(bob), await createCollection(bob), await createCollection(bob)];
    for (const [collection, card] of [[holdsCopy, bobsCopy], [holdsRoot, root], [holdsOtherCopy, alicesCopy]] as const) {
      expect((await bob.client.post(`/api/card_collection/${collection}`, { card_metadata_id: card })).status).toBe(204);
    }
    const entry = async (collection: string) => (await bob.client.get(`/api/card_collection/${collection}/1`)).json.bookmarks.map((b: { metadata: { id: string }[] }) => b.metadata[0]!.id);
    expect(await entry(holdsCopy)).toEqual([root]);

    const lookup = async (ids: string[]) => (await bob.client.post('/api/card_collection/bookmark', { collection_ids: ids.join(',') })).json;
    expect((await bob.client.get(`/api/card_collection/${holdsRoot}/1`)).json.bookmarks.map((b: { metadata: { id: string }[] }) => b.metadata.map((c) => c.id))).toEqual([[root, bobsCopy, alicesCopy]]);
    expect(await lookup([root, bobsCopy, alicesCopy])).toEqual([
      { card_uuid: root, collection_ids: [holdsCopy, holdsRoot, holdsOtherCopy] },
      { card_uuid: bobsCopy, collection_ids: [holdsCopy, holdsRoot, holdsOtherCopy] },
      { card_uuid: alicesCopy, collection_ids: [holdsCopy, holdsRoot, holdsOtherCopy] },
    ]);

    // A copy its author made private is no longer in bob's collection page, nor counted for the root or the other copy.
    expect((await alice.client.put('/api/card/update', { card_uuid: alicesCopy, private: true })).status).toBe(204);
    expect(await entry(holdsOtherCopy)).toEqual([]);
    expect(await lookup([root, bobsCopy, alicesCopy])).toEqual([
      { card_uuid: root, collection_ids: [holdsCopy, holdsRoot] },
      { card_uuid: bobsCopy, collection_ids: [holdsCopy, holdsRoot] },
      { card_uuid: alicesCopy, collection_ids: [] },
    ]);
  });

  it('is 400 for bad or missing ids and 401 anonymously', async () => {
    for (const body of [{}, { collection_ids: '' }, { collection_ids: 'abc' }, { collection_ids: `00000000-0000-4000-8000-000000000000,xyz` }, { collection_ids: 7 }]) {
      const res = await alice.client.post('/api/card_collection/bookmark', body);
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/collection_ids/);
    }
    expect((await anonymous.post('/api/card_collection/bookmark', { collection_ids: '00000000-0000-4000-8000-000000000000' })).status).toBe(401);
  });
});

describe('collection search (with the search service)', () => {
  it("returns only the collection's bookmarked cards the caller may see", async () => {
    const marker = `zq${Date.now().toString(36)}marker`;
    const id = await createCollection(alice, { name: 'Searchable' });
    const inside = await postCard(alice, { card_html: html(`${marker} ${uniqueText()}`) });
    const outside = await postCard(alice, { card_html: html(`${marker} ${uniqueText()}`) });
    const hiddenInside = await postCard(bob, { card_html: html(`${marker} ${uniqueText()}`), private: true });
    expect((await alice.client.post(`/api/card_collection/${id}`, { card_metadata_id: inside })).status).toBe(204);
    expect((await bob.client.post(`/api/card_collection/${id}`, { card_metadata_id: hiddenInside })).status).toBe(403);

    const everywhere = async () => (await anonymous.post('/api/card/fulltextsearch/1', { content: marker })).json?.score_cards ?? [];
    const deadline = Date.now() + 30_000;
    while ((await everywhere()).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    const all = (await everywhere()).map((e: { metadata: { id: string }[] }) => e.metadata[0]!.id);
    expect(all).toEqual(expect.arrayContaining([inside, outside]));

    for (const kind of ['fulltextsearch', 'search']) {
      // The bookmark is a separate event (another topic than the cards'): the bus does not order it after them, so
      // wait for it too rather than assume it was applied with the cards.
      // The marker is no word the bundled embedder knows, and a semantic query of no known word matches nothing.
      const content = kind === 'search' ? `${marker} a story about the library` : marker;
      const search = () => anonymous.post(`/api/card_collection/${kind}/1`, { content, collection_id: id });
      let res = await search();
      while (res.status === 200 && res.json.bookmarks.length === 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        res = await search();
      }
      expect(res.status).toBe(200);
      expect(res.json.collection).toMatchObject({ id });
      expect(res.json.bookmarks.map((e: { metadata: { id: string }[] }) => e.metadata[0]!.id)).toEqual([inside]);
    }
  });
});
