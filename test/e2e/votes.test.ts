import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import type { TestUser } from '../support/accounts';
import { postCard, signUpMany } from './cards-support';

let system: RunningSystem;
const mailbox = new Mailbox();
let users: TestUser[];
let anonymous: ApiClient;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  users = await signUpMany(system.baseUrl, mailbox, 101, 'voter', 20);
  anonymous = new ApiClient(system.baseUrl);
}, 180_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+$/;

describe('votes', () => {
  it('upserts one vote per user, flips, shows vote_by_current_user, and deletes by card id', async () => {
    const [author, voter] = [users[0]!, users[1]!];
    const cardId = await postCard(author);
    const up = await voter.client.post('/api/vote', { card_metadata_id: cardId, vote: true });
    expect(up.status).toBe(200);
    expect(up.json).toEqual({ id: expect.any(String), voted_user_id: voter.id, card_metadata_id: cardId, vote: true, created_at: expect.stringMatching(TIMESTAMP), updated_at: expect.stringMatching(TIMESTAMP), deleted: false });
    // A repeat changes nothing, its updated_at included.
    expect((await voter.client.post('/api/vote', { card_metadata_id: cardId, vote: true })).json).toEqual(up.json);
    let card = (await voter.client.get(`/api/card/${cardId}`)).json;
    expect(card).toMatchObject({ total_upvotes: 1, total_downvotes: 0, vote_by_current_user: true });
    expect((await anonymous.get(`/api/card/${cardId}`)).json.vote_by_current_user).toBeNull();
    expect((await author.client.get(`/api/card/${cardId}`)).json.vote_by_current_user).toBeNull();

    const down = await voter.client.post('/api/vote', { card_metadata_id: cardId, vote: 'false' });
    expect(down.status).toBe(200);
    expect(down.json).toMatchObject({ id: up.json.id, vote: false });
    card = (await voter.client.get(`/api/card/${cardId}`)).json;
    expect(card).toMatchObject({ total_upvotes: 0, total_downvotes: 1, vote_by_current_user: false });

    expect((await voter.client.delete(`/api/vote/${cardId}`)).status).toBe(204);
    expect((await voter.client.delete(`/api/vote/${cardId}`)).status).toBe(404);
    card = (await voter.client.get(`/api/card/${cardId}`)).json;
    expect(card).toMatchObject({ total_upvotes: 0, total_downvotes: 0, vote_by_current_user: null });
  });

  it('rejects bad votes: 400 for bad input, 401 anonymous, 404 unknown or hidden cards, 400 on own private card', async () => {
    const [author, voter] = [users[2]!, users[3]!];
    const cardId = await postCard(author);
    const privateId = await postCard(author, { private: true });
    for (const body of [{}, { card_metadata_id: 'abc', vote: true }, { card_metadata_id: cardId }, { card_metadata_id: cardId, vote: 'maybe' }, { card_metadata_id: cardId, vote: 1 }]) {
      const res = await voter.client.post('/api/vote', body);
      expect(res.status).toBe(400);
      expect(res.json.message).toEqual(expect.any(String));
    }
    expect((await voter.client.post('/api/vote', { card_metadata_id: cardId })).json.message).toBe('vote: is required');
    expect((await voter.client.post('/api/vote', { card_metadata_id: cardId, vote: 'maybe' })).json.message).toBe('vote: must be true or false');
    expect((await anonymous.post('/api/vote', { card_metadata_id: cardId, vote: true })).status).toBe(401);
    expect((await voter.client.post('/api/vote', { card_metadata_id: '00000000-0000-4000-8000-000000000000', vote: true })).status).toBe(404);
    expect((await voter.client.post('/api/vote', { card_metadata_id: privateId, vote: true })).status).toBe(404);
    const own = await author.client.post('/api/vote', { card_metadata_id: privateId, vote: true });
    expect(own.status).toBe(400);
    expect(own.json.message).toMatch(/private/);
    expect((await voter.client.delete('/api/vote/xyz')).status).toBe(400);
    expect((await anonymous.delete(`/api/vote/${cardId}`)).status).toBe(401);
    expect((await author.client.get(`/api/card/${cardId}`)).json).toMatchObject({ total_upvotes: 0, total_downvotes: 0 });
  });

  it('100 concurrent votes from 100 users leave exact card totals and an exact author score', async () => {
    const author = users[100]!;
    const voters = users.slice(0, 100);
    const cardId = await postCard(author);
    const results = await Promise.all(voters.map((v, i) => v.client.post('/api/vote', { card_metadata_id: cardId, vote: i < 70 })));
    expect(results.map((r) => r.status)).toEqual(voters.map(() => 200));
    expect((await anonymous.get(`/api/card/${cardId}`)).json).toMatchObject({ total_upvotes: 70, total_downvotes: 30 });
    let page = (await anonymous.get(`/api/user/${author.id}/1`)).json;
    expect(page).toMatchObject({ total_upvotes_received: 70, total_downvotes_received: 30 });

    // Everyone flips at once.
    await Promise.all(voters.map((v, i) => v.client.post('/api/vote', { card_metadata_id: cardId, vote: i >= 70 })));
    expect((await anonymous.get(`/api/card/${cardId}`)).json).toMatchObject({ total_upvotes: 30, total_downvotes: 70 });
    page = (await anonymous.get(`/api/user/${author.id}/1`)).json;
    expect(page).toMatchObject({ total_upvotes_received: 30, total_downvotes_received: 70 });
    const top = await collectTopUsers();
    expect(top.find((u) => u.id === author.id)?.score).toBe(-40);

    // Deleting the card takes its votes away from the author's score.
    expect((await author.client.delete(`/api/card/${cardId}`)).status).toBe(204);
    page = (await anonymous.get(`/api/user/${author.id}/1`)).json;
    expect(page).toMatchObject({ total_upvotes_received: 0, total_downvotes_received: 0 });
    expect((await collectTopUsers()).find((u) => u.id === author.id)).toBeUndefined();
  });
});

describe('votes and privacy', () => {
  it('a card made private stops counting in the totals and score others see, public again restores it, exact while votes race the flips', async () => {
    const author = users[80]!;
    const voters = users.slice(0, 40);
    const cardId = await postCard(author);
    const otherCard = await postCard(author);
    expect((await users[59]!.client.post('/api/vote', { card_metadata_id: otherCard, vote: true })).status).toBe(200);
    const setPrivate = async (isPrivate: boolean) => expect((await author.client.put('/api/card/update', { card_uuid: cardId, private: isPrivate })).status).toBe(204);

    // Votes race the author flipping the card's privacy: each vote lands (200) or meets a private card (404).
    const flips = (async () => {
      for (let i = 0; i < 8; i++) await setPrivate(i % 2 === 0);
    })();
    const results = await Promise.all(voters.map((v, i) => v.client.post('/api/vote', { card_metadata_id: cardId, vote: i % 4 !== 0 })));
    await flips;
    expect(results.every((r) => r.status === 200 || r.status === 404)).toBe(true);
    const lateVoter = users[60]!;
    expect((await lateVoter.client.post('/api/vote', { card_metadata_id: cardId, vote: true })).status).toBe(200);
    const up = results.filter((r, i) => r.status === 200 && i % 4 !== 0).length + 1;
    const down = results.filter((r, i) => r.status === 200 && i % 4 === 0).length;
    expect((await anonymous.get(`/api/card/${cardId}`)).json).toMatchObject({ private: false, total_upvotes: up, total_downvotes: down });
    const totals = async (viewer: ApiClient) => {
      const page = (await viewer.get(`/api/user/${author.id}/1`)).json;
      return { up: page.total_upvotes_received, down: page.total_downvotes_received };
    };
    const score = async () => (await collectTopUsers()).find((u) => u.id === author.id)?.score;
    expect(await totals(anonymous)).toEqual({ up: up + 1, down });
    expect(await score()).toBe(up + 1 - down);

    await setPrivate(true);
    expect(await totals(anonymous)).toEqual({ up: 1, down: 0 });
    expect(await totals(users[0]!.client)).toEqual({ up: 1, down: 0 });
    expect(await totals(author.client)).toEqual({ up: up + 1, down });
    expect(await score()).toBe(1);
    // The voter's cast votes count it only for whoever may see the card.
    const cast = async (viewer: ApiClient) => (await viewer.get(`/api/user/${lateVoter.id}/1`)).json.total_votes_cast;
    expect({ anonymous: await cast(anonymous), self: await cast(lateVoter.client), author: await cast(author.client) }).toEqual({ anonymous: 0, self: 0, author: 1 });
    // A voter may still take back a vote on the now private card: it leaves the author's own totals only. The answer is
    // the one a deleted card's voter gets, so it does not tell the voter that the card still exists.
    const taken = await lateVoter.client.delete(`/api/vote/${cardId}`);
    expect({ status: taken.status, body: taken.json }).toEqual({ status: 404, body: { message: 'You have no vote on this card' } });
    expect(await totals(author.client)).toEqual({ up, down });
    expect(await totals(anonymous)).toEqual({ up: 1, down: 0 });

    await setPrivate(false);
    expect(await totals(anonymous)).toEqual({ up, down });
    expect(await score()).toBe(up - down);

    // Deleting the card (private at the time) removes its votes' effect once, everywhere.
    await setPrivate(true);
    expect((await author.client.delete(`/api/card/${cardId}`)).status).toBe(204);
    const afterDeletion = await voters[1]!.client.delete(`/api/vote/${cardId}`);
    expect({ status: afterDeletion.status, body: afterDeletion.json }).toEqual({ status: taken.status, body: taken.json });
    expect(await totals(author.client)).toEqual({ up: 1, down: 0 });
    expect(await totals(anonymous)).toEqual({ up: 1, down: 0 });
    expect(await score()).toBe(1);
  });
});

async function collectTopUsers(): Promise<{ id: string; score: number; created_at: string }[]> {
  const first = await anonymous.get('/api/top_users/1');
  expect(first.status).toBe(200);
  const all = [...first.json.users];
  for (let p = 2; p <= first.json.total_user_pages; p++) all.push(...(await anonymous.get(`/api/top_users/${p}`)).json.users);
  return all;
}

describe('GET /api/top_users/:page', () => {
  it('orders users by score desc then join date, 25 per page, with total_user_pages', async () => {
    // 30 authors get scores 1..5 (ties on purpose) from the votes of the first ten users.
    const authors = users.slice(40, 70);
    const expected = new Map<string, number>();
    await Promise.all(
      authors.map(async (author, i) => {
        const cardId = await postCard(author);
        const score = (i % 5) + 1;
        expected.set(author.id, score);
        await Promise.all(users.slice(0, score).map((v) => v.client.post('/api/vote', { card_metadata_id: cardId, vote: true })));
      }),
    );
    const first = await anonymous.get('/api/top_users/1');
    expect(first.status).toBe(200);
    expect(first.json.users).toHaveLength(25);
    const ranked = await collectTopUsers();
    expect(first.json.total_user_pages).toBe(Math.ceil(ranked.length / 25));
    expect(ranked.length).toBeGreaterThanOrEqual(30);
    for (const [id, score] of expected) expect(ranked.find((u) => u.id === id)?.score).toBe(score);
    for (let i = 1; i < ranked.length; i++) {
      const [a, b] = [ranked[i - 1]!, ranked[i]!];
      expect(a.score > b.score || (a.score === b.score && a.created_at <= b.created_at)).toBe(true);
    }
    expect(ranked[0]).toMatchObject({ id: expect.any(String), email: expect.any(String), username: null, website: null, visible_email: true, created_at: expect.stringMatching(TIMESTAMP) });
    expect((await anonymous.get(`/api/top_users/${first.json.total_user_pages + 1}`)).json.users).toEqual([]);
  });

  it('is 400 for page 0, negative or non-numeric pages', async () => {
    for (const page of ['0', '-1', 'abc', '1.5']) {
      const res = await anonymous.get(`/api/top_users/${page}`);
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/page/);
    }
  });
});
