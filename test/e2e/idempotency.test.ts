import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventuallyDefined } from '../support/eventually';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';

// Idempotency-Key on the creates other than a card's (cards.test.ts has the card's own): a create repeated with the
// key (a retry after a lost answer, a second click, both at once) answers what the first one made and makes nothing;
// and, for all three, a key sent again with another request (draft-ietf-httpapi-idempotency-key-header: 422).

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'alice'), signUp(system.baseUrl, mailbox, 'bob')]);
}, 120_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

const newKey = () => `key-${randomUUID()}`;

describe('POST /api/card_collection with an Idempotency-Key', () => {
  const create = (user: TestUser, key: string | undefined, body: Record<string, unknown> = {}) =>
    user.client.request('POST', '/api/card_collection', { name: 'Reading list', description: 'for later', is_public: true, ...body }, key === undefined ? {} : { 'idempotency-key': key });
  const idOf = (res: { status: number; headers: Headers; text: string }) => {
    if (res.status !== 204) throw new Error(`collection create answered ${res.status} ${res.text}`);
    return /^\/api\/card_collection\/([0-9a-f-]{36})$/.exec(res.headers.get('location') ?? '')![1]!;
  };
  const ownCollections = async (user: TestUser) => (await user.client.get('/api/card_collection')).json as { id: string; name: string }[];

  it('answers a repeated create with the collection the first one made, and makes no second one', async () => {
    const key = newKey();
    const name = `once ${randomUUID()}`;
    const first = idOf(await create(alice, key, { name }));
    const again = idOf(await create(alice, key, { name }));
    expect(again).toBe(first);
    expect((await ownCollections(alice)).filter((c) => c.name === name).map((c) => c.id)).toEqual([first]);
    // Without a key every create is a new collection, as before.
    const name2 = `twice ${randomUUID()}`;
    const [a, b] = [idOf(await create(alice, undefined, { name: name2 })), idOf(await create(alice, undefined, { name: name2 }))];
    expect(a).not.toBe(b);
  });

  it('makes one collection of two creates with one key sent at the same moment, and answers both with it', async () => {
    const key = newKey();
    const name = `at once ${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 4 }, () => create(alice, key, { name })));
    const ids = new Set(answers.map(idOf));
    expect(ids.size).toBe(1);
    expect((await ownCollections(alice)).filter((c) => c.name === name).map((c) => c.id)).toEqual([...ids]);
  });

  it("keeps each user's keys apart, and a card's key apart from a collection's", async () => {
    const key = newKey();
    const name = `shared key ${randomUUID()}`;
    const [mine, theirs] = [idOf(await create(alice, key, { name })), idOf(await create(bob, key, { name }))];
    expect(theirs).not.toBe(mine);
    expect((await ownCollections(bob)).filter((c) => c.name === name).map((c) => c.id)).toEqual([theirs]);
    const card = await alice.client.request('POST', '/api/card', { card_html: html(uniqueText()), link: '', private: false }, { 'idempotency-key': key });
    expect(card.status).toBe(200);
    expect(card.json.duplicate).toBe(false);
  });

  it('refuses a repeat after the collection was deleted (409) instead of making it again', async () => {
    const key = newKey();
    const name = `deleted ${randomUUID()}`;
    const id = idOf(await create(alice, key, { name }));
    expect((await alice.client.delete('/api/card_collection', { collection_id: id })).status).toBe(204);
    const late = await create(alice, key, { name });
    expect(late.status).toBe(409);
    expect(late.json.message).toMatch(/^Idempotency-Key: .*deleted/);
    expect((await ownCollections(alice)).filter((c) => c.name === name)).toEqual([]);
    // A new key creates it again, as the user asks.
    expect(idOf(await create(alice, newKey(), { name }))).not.toBe(id);
  });

  it('refuses a key that is not 1 to 255 visible ASCII characters, creating nothing', async () => {
    const name = `bad key ${randomUUID()}`;
    for (const key of ['', 'x'.repeat(256), 'two words', 'é']) {
      const res = await create(alice, key, { name });
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/^Idempotency-Key: /);
    }
    expect((await ownCollections(alice)).filter((c) => c.name === name)).toEqual([]);
  });
});

describe('POST /api/file with an Idempotency-Key', () => {
  const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
  const energy = readFileSync(join(__dirname, '../fixtures/documents/energy.docx')).toString('base64url');
  const upload = (user: TestUser, key: string | undefined, body: Record<string, unknown> = {}) =>
    user.client.request('POST', '/api/file', { base64_docx_file: energy, file_name: 'energy.docx', file_mime_type: DOCX, private: false, tag_set: ['energy'], ...body }, key === undefined ? {} : { 'idempotency-key': key });
  const filesNamed = async (user: TestUser, name: string) => ((await user.client.get(`/api/user/files/${user.id}`)).json as { id: string; file_name: string }[]).filter((f) => f.file_name === name);
  const ingested = (user: TestUser, fileId: string) =>
    eventuallyDefined(async () => {
      const file = (await user.client.get(`/api/file/${fileId}`)).json;
      return file?.ingestion_status === 'done' ? file : undefined;
    }, `ingestion of ${fileId}`, 60_000);

  it('answers a repeated upload with the file the first one stored, and stores, ingests and announces it once', async () => {
    const key = newKey();
    const name = `energy ${randomUUID()}.docx`;
    const first = await upload(alice, key, { file_name: name });
    expect(first.status).toBe(200);
    const again = await upload(alice, key, { file_name: name });
    expect(again.status).toBe(200);
    expect(again.json.id).toBe(first.json.id);
    const { ingestion_status: _a, updated_at: _b, ...shown } = first.json;
    expect(again.json).toMatchObject(shown);
    expect((await filesNamed(alice, name)).map((f) => f.id)).toEqual([first.json.id]);
    await ingested(alice, first.json.id);
    const collectionName = `Collection for file ${name}`;
    const collection = await eventuallyDefined(async () => ((await alice.client.get('/api/card_collection')).json as { id: string; name: string }[]).find((c) => c.name === collectionName), 'the file collection');
    // A repeat after the ingestion: still the same file, nothing ingested again.
    expect((await upload(alice, key, { file_name: name })).json.id).toBe(first.json.id);
    const mine = (await alice.client.get(`/api/user/${alice.id}/1`)).json.cards as { file_name: string | null; file_id: string | null }[];
    const cards = mine.filter((c) => c.file_name === name);
    expect(cards.length).toBeGreaterThan(0);
    expect(cards.every((c) => c.file_id === first.json.id)).toBe(true);
    expect(((await alice.client.get('/api/card_collection')).json as { name: string }[]).filter((c) => c.name === collectionName)).toHaveLength(1);
    const announcements = async () => ((await alice.client.get('/api/notifications')).json as { collection_uuid: string | null }[]).filter((n) => n.collection_uuid === collection.id);
    await eventuallyDefined(async () => ((await announcements()).length > 0 ? true : undefined), 'the collection notification');
    expect(await announcements()).toHaveLength(1);
    expect((await filesNamed(alice, name)).map((f) => f.id)).toEqual([first.json.id]);
  });

  it('stores one file of uploads with one key sent at the same moment, and answers each with it', async () => {
    const key = newKey();
    const name = `at once ${randomUUID()}.docx`;
    const answers = await Promise.all(Array.from({ length: 3 }, () => upload(bob, key, { file_name: name })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(new Set(answers.map((a) => a.json.id)).size).toBe(1);
    expect((await filesNamed(bob, name)).map((f) => f.id)).toEqual([answers[0]!.json.id]);
  });

  it("keeps each user's keys apart", async () => {
    const key = newKey();
    const name = `shared key ${randomUUID()}.docx`;
    const [mine, theirs] = [await upload(alice, key, { file_name: name }), await upload(bob, key, { file_name: name })];
    expect(theirs.json.id).not.toBe(mine.json.id);
    expect((await filesNamed(bob, name)).map((f) => f.id)).toEqual([theirs.json.id]);
  });

  it('refuses a repeat after the file was deleted (409) instead of storing and ingesting it again', async () => {
    const key = newKey();
    const name = `deleted ${randomUUID()}.docx`;
    const first = await upload(alice, key, { file_name: name });
    expect((await alice.client.delete(`/api/file/${first.json.id}`)).status).toBe(204);
    const late = await upload(alice, key, { file_name: name });
    expect(late.status).toBe(409);
    expect(late.json.message).toMatch(/^Idempotency-Key: .*deleted/);
    expect(await filesNamed(alice, name)).toEqual([]);
  });

  it('refuses a key that is not 1 to 255 visible ASCII characters, storing nothing', async () => {
    const name = `bad key ${randomUUID()}.docx`;
    for (const key of ['', 'x'.repeat(256), 'two words']) {
      const res = await upload(alice, key, { file_name: name });
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/^Idempotency-Key: /);
    }
    expect(await filesNamed(alice, name)).toEqual([]);
  });
});

describe('an Idempotency-Key sent again with a different request', () => {
  const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
  const fixture = (name: string) => readFileSync(join(__dirname, `../fixtures/documents/${name}`)).toString('base64url');
  const send = (user: TestUser, path: string, key: string, body: unknown) => user.client.request('POST', path, body, { 'idempotency-key': key });
  const expectRefused = (res: { status: number; json: any }) => {
    expect(res.status).toBe(422);
    expect(res.json.message).toMatch(/^Idempotency-Key: this key was used for a different request/);
  };

  it('is refused with 422 for a card and creates nothing; the same request in another JSON form is the same', async () => {
    const key = newKey();
    const text = uniqueText();
    const body = { card_html: html(text), link: 'https://example.com/a', private: false, tag_set: ['x', 'y'] };
    const first = await send(alice, '/api/card', key, body);
    expect(first.status).toBe(200);
    const other = uniqueText();
    expectRefused(await send(alice, '/api/card', key, { ...body, card_html: html(other) }));
    expectRefused(await send(alice, '/api/card', key, { ...body, private: true }));
    const mine = (await alice.client.get(`/api/user/${alice.id}/1`)).json.cards as { id: string; content: string }[];
    expect(mine.filter((c) => c.content.startsWith(other.split(' ')[0]!))).toEqual([]);
    expect(mine.filter((c) => c.content.startsWith(text.split(' ')[0]!)).map((c) => c.id)).toEqual([first.json.card_metadata.id]);
    // Members reordered, a boolean as the string the API also takes, tags as a comma-separated string: the same request.
    const same = await alice.client.request('POST', '/api/card', `{"tag_set":"x, y","private":"false","link":"https://example.com/a","card_html":${JSON.stringify(html(text))}}`, { 'idempotency-key': key });
    expect(same.status).toBe(200);
    expect(same.json.card_metadata.id).toBe(first.json.card_metadata.id);
  });

  it("is refused with 422 for a deleted card's key too, and the same request then 409, creating nothing", async () => {
    const key = newKey();
    const text = uniqueText();
    const body = { card_html: html(text), link: '', private: false };
    const first = await send(alice, '/api/card', key, body);
    expect((await alice.client.delete(`/api/card/${first.json.card_metadata.id}`)).status).toBe(204);
    expectRefused(await send(alice, '/api/card', key, { ...body, private: true }));
    const late = await send(alice, '/api/card', key, body);
    expect(late.status).toBe(409);
    expect(late.json.message).toMatch(/^Idempotency-Key: .*deleted/);
    const mine = (await alice.client.get(`/api/user/${alice.id}/1`)).json.cards as { content: string }[];
    expect(mine.filter((c) => c.content.startsWith(text.split(' ')[0]!))).toEqual([]);
  });

  it('is refused with 422 for a collection, creating nothing', async () => {
    const key = newKey();
    const name = `first ${randomUUID()}`;
    expect((await send(alice, '/api/card_collection', key, { name, is_public: true })).status).toBe(204);
    const renamed = `second ${randomUUID()}`;
    expectRefused(await send(alice, '/api/card_collection', key, { name: renamed, is_public: true }));
    expectRefused(await send(alice, '/api/card_collection', key, { name, is_public: false }));
    // The name as stored (trimmed), the visibility as the API reads it: the same request.
    expect((await send(alice, '/api/card_collection', key, { is_public: 'true', name: `  ${name} ` })).status).toBe(204);
    expectRefused(await send(alice, '/api/card_collection', key, { name, is_public: true, description: 'more' }));
    const own = (await alice.client.get('/api/card_collection')).json as { name: string; is_public: boolean }[];
    expect(own.filter((c) => c.name === renamed)).toEqual([]);
    expect(own.filter((c) => c.name === name).map((c) => c.is_public)).toEqual([true]);
    // After the delete a different request is still refused as one (422), the same one as late (409).
    const id = /([0-9a-f-]{36})$/.exec((await send(alice, '/api/card_collection', key, { name, is_public: true })).headers.get('location')!)![1];
    expect((await alice.client.delete('/api/card_collection', { collection_id: id })).status).toBe(204);
    expectRefused(await send(alice, '/api/card_collection', key, { name: renamed, is_public: true }));
    expect((await send(alice, '/api/card_collection', key, { name, is_public: true })).status).toBe(409);
  });

  it('is refused with 422 for an upload of other bytes or other fields, storing and ingesting nothing', async () => {
    const key = newKey();
    const name = `first ${randomUUID()}.docx`;
    const body = { base64_docx_file: fixture('energy.docx'), file_name: name, file_mime_type: DOCX, private: false };
    const first = await send(bob, '/api/file', key, body);
    expect(first.status).toBe(200);
    expectRefused(await send(bob, '/api/file', key, { ...body, base64_docx_file: fixture('heading.docx') }));
    expectRefused(await send(bob, '/api/file', key, { ...body, private: true }));
    expectRefused(await send(bob, '/api/file', key, { ...body, tag_set: ['extra'] }));
    const files = (await bob.client.get(`/api/user/files/${bob.id}`)).json as { id: string; file_name: string }[];
    expect(files.filter((f) => f.file_name === name).map((f) => f.id)).toEqual([first.json.id]);
    expect((await send(bob, '/api/file', key, body)).json.id).toBe(first.json.id);
  });

  it('makes one collection of two different requests sent with one key at the same moment, and refuses the other', async () => {
    const key = newKey();
    const names = [`one ${randomUUID()}`, `two ${randomUUID()}`];
    const answers = await Promise.all(names.map((name) => send(bob, '/api/card_collection', key, { name, is_public: true })));
    expect(answers.map((a) => a.status).sort()).toEqual([204, 422]);
    const own = (await bob.client.get('/api/card_collection')).json as { name: string }[];
    expect(own.filter((c) => names.includes(c.name))).toHaveLength(1);
  });
});
