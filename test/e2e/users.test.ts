import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { postCard } from './cards-support';

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;
let anonymous: ApiClient;
const publicIds: string[] = [];
const privateIds: string[] = [];

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'alice'), signUp(system.baseUrl, mailbox, 'bob')]);
  anonymous = new ApiClient(system.baseUrl);
  for (let i = 0; i < 28; i++) {
    const isPrivate = i % 10 === 3;
    const id = await postCard(alice, { private: isPrivate });
    (isPrivate ? privateIds : publicIds).push(id);
  }
});
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

describe('GET /api/user/:user_id/:page', () => {
  it('shows the user and 25 cards per page, newest update first, author null, private ones to the owner only', async () => {
    const page1 = await anonymous.get(`/api/user/${alice.id}/1`);
    expect(page1.status).toBe(200);
    expect(page1.json).toMatchObject({ id: alice.id, email: alice.email, username: null, website: null, visible_email: true, total_cards_created: publicIds.length });
    expect(page1.json.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+$/);
    expect(page1.json.cards).toHaveLength(25);
    const page2 = (await anonymous.get(`/api/user/${alice.id}/2`)).json;
    const seen = [...page1.json.cards, ...page2.cards];
    expect(seen.map((c: { id: string }) => c.id)).toEqual([...publicIds].reverse());
    expect(seen.every((c: { author: unknown; private: boolean }) => c.author === null && c.private === false)).toBe(true);
    expect((await bob.client.get(`/api/user/${alice.id}/1`)).json.total_cards_created).toBe(publicIds.length);

    const own1 = (await alice.client.get(`/api/user/${alice.id}/1`)).json;
    const own2 = (await alice.client.get(`/api/user/${alice.id}/2`)).json;
    expect(own1.total_cards_created).toBe(28);
    const ownIds = [...own1.cards, ...own2.cards].map((c: { id: string }) => c.id);
    expect(ownIds).toHaveLength(28);
    for (const id of privateIds) expect(ownIds).toContain(id);
    expect((await alice.client.get(`/api/user/${alice.id}/3`)).json.cards).toEqual([]);
  });

  it('puts an updated card first', async () => {
    const oldest = publicIds[0]!;
    expect((await alice.client.put('/api/card/update', { card_uuid: oldest, link: 'https://updated.example/' })).status).toBe(204);
    expect((await anonymous.get(`/api/user/${alice.id}/1`)).json.cards[0].id).toBe(oldest);
  });

  it('carries received and cast vote totals and the viewer vote', async () => {
    await bob.client.post('/api/vote', { card_metadata_id: publicIds[1], vote: true });
    await bob.client.post('/api/vote', { card_metadata_id: publicIds[2], vote: false });
    const seenByBob = (await bob.client.get(`/api/user/${alice.id}/1`)).json;
    expect(seenByBob).toMatchObject({ total_upvotes_received: 1, total_downvotes_received: 1, total_votes_cast: 0 });
    expect(seenByBob.cards.find((c: { id: string }) => c.id === publicIds[1]).vote_by_current_user).toBe(true);
    expect((await anonymous.get(`/api/user/${bob.id}/1`)).json).toMatchObject({ total_votes_cast: 2, total_cards_created: 0, cards: [] });
  });

  it('is 404 for an unknown user and 400 for a bad id or page', async () => {
    expect((await anonymous.get('/api/user/00000000-0000-4000-8000-000000000000/1')).status).toBe(404);
    expect((await anonymous.get('/api/user/nope/1')).status).toBe(400);
    for (const page of ['0', '-2', 'x']) {
      const res = await anonymous.get(`/api/user/${alice.id}/${page}`);
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/page/);
    }
  });
});
