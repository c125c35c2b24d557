import { randomUUID } from 'node:crypto';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';

// Idempotency-Key on the creates other than a card's (cards.test.ts has the card's own): a create repeated with the
// key (a retry after a lost answer, a second click, both at once) answers what the first one made and makes nothing.

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
