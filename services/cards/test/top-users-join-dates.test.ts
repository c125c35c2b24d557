import { randomUUID } from 'node:crypto';
import { CardService, JOIN_DATE_ROUND } from '../src/application/card-service';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, nextTime } from './builders';
import { sqliteCardServiceDeps } from './uninvolved-deps';

/**
 * Top users ties are broken by join date, which identity knows: the cards service asks it for the join dates of
 * ranked authors it has none for. After 50,000 new authors each of the first GET /api/top_users requests asked for and
 * stored 10,000 of them before answering (~1 s each, docs/benchmarks.md "Big accounts"). A request now waits for one
 * round only; the rest are filled behind it, and the listing is in join date order once they are.
 */
describe('top users after many new authors', () => {
  it('answers after one round of join dates; the others are filled behind it and then rank the ties', async () => {
    const db = openCardsDatabase(':memory:');
    const deps = sqliteCardServiceDeps(db);
    const authors: string[] = [];
    const n = 4 * JOIN_DATE_ROUND;
    for (let i = 0; i < n; i++) {
      const author = randomUUID();
      authors.push(author);
      const card = aCard().by(author).build();
      await deps.cards.insert(card, fingerprintOf(card.content), []);
      await deps.votes.upsert(randomUUID(), card.id, true, nextTime(), randomUUID());
    }
    // Joined in the reverse of their ids' order, so the tie-break by join date is not the one by id.
    const byId = [...authors].sort();
    const joined = new Map(byId.map((a, i) => [a, new Date(Date.UTC(2020, 0, 1) + (n - i) * 60_000)]));
    const asked: string[] = [];
    const users = {
      joinDates: async (ids: readonly string[]) => {
        asked.push(...ids);
        return new Map(ids.map((id) => [id, joined.get(id)!]));
      },
    };
    const service = new CardService({ ...deps, users });

    const first = await service.topUsers(1);
    // Before: every ranked author's join date (2,000, four rounds) was asked for and stored before the answer.
    expect(asked).toHaveLength(JOIN_DATE_ROUND);
    expect(first.users).toHaveLength(25);
    expect(first.totalPages).toBe(n / 25);

    for (let turns = 0; turns < 10_000 && (await deps.votes.authorsWithoutJoinDate(1)).length > 0; turns++) await new Promise((resolve) => setImmediate(resolve));
    expect(await deps.votes.authorsWithoutJoinDate(1)).toEqual([]);
    expect(new Set(asked).size).toBe(n);
    const earliest = [...byId].reverse().slice(0, 25);
    expect((await service.topUsers(1)).users.map((u) => u.userId)).toEqual(earliest);
    expect(asked).toHaveLength(n);
    db.close();
  });

  it('a fill under way is not started again by other requests, and ends when the service stops', async () => {
    const db = openCardsDatabase(':memory:');
    const deps = sqliteCardServiceDeps(db);
    for (let i = 0; i < 3 * JOIN_DATE_ROUND; i++) {
      const card = aCard().build();
      await deps.cards.insert(card, fingerprintOf(card.content), []);
      await deps.votes.upsert(randomUUID(), card.id, true, nextTime(), randomUUID());
    }
    let calls = 0;
    const service = new CardService({ ...deps, users: { joinDates: async (ids: readonly string[]) => (calls++, new Map(ids.map((id) => [id, new Date()]))) } });
    await Promise.all([service.topUsers(1), service.topUsers(2), service.topUsers(3)]);
    expect(calls).toBe(1);
    await service.stopFillingJoinDates();
    expect(calls).toBeLessThan(3);
    expect((await deps.votes.authorsWithoutJoinDate(JOIN_DATE_ROUND * 3)).length).toBeGreaterThan(0);
    // The listing still answers, the authors without a date after the others of their score.
    expect((await service.topUsers(1)).users).toHaveLength(25);
    db.close();
  });
});
