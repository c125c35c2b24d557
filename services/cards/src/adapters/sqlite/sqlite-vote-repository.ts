import type { SqliteDatabase } from '@cards/platform';
import type { AuthorScore, ReceivedVotes, Vote } from '../../domain/model';
import type { VoteRepository } from '../../domain/ports';
import { chunks, placeholders } from './rows';

interface VoteRow {
  id: string;
  user_id: string;
  card_id: string;
  value: number;
  created_at: string;
  updated_at: string;
}

interface VotedCard {
  author_id: string;
  private: number;
}

/**
 * The top users' reads of author_scores, each served by an index over ranked authors alone (author_scores_ranking,
 * author_scores_join_unknown): their WHERE repeats those indexes' own conditions word for word, as SQLite requires to
 * use a partial index. The count of ranked authors is kept (kept_counts, by triggers on author_scores in each change's
 * transaction), so no request counts them again.
 */
export const RANKED_AUTHORS_SQL = {
  page: `SELECT user_id, public_upvotes - public_downvotes AS score FROM author_scores WHERE public_upvotes + public_downvotes > 0
         ORDER BY public_upvotes - public_downvotes DESC, joined_at IS NULL, joined_at, user_id LIMIT ? OFFSET ?`,
  count: "SELECT n FROM kept_counts WHERE name = 'ranked_authors'",
  withoutJoinDate: 'SELECT user_id FROM author_scores WHERE joined_at IS NULL AND public_upvotes + public_downvotes > 0 LIMIT ?',
};

const voteFromRow = (r: VoteRow): Vote => ({ id: r.id, userId: r.user_id, cardId: r.card_id, value: r.value === 1, createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at) });

/**
 * Votes in the cards service's SQLite file. Each change runs in one synchronous transaction together with the
 * card's totals and the author's counters (all cards; public cards when the card is public), so concurrent votes
 * can never lose an update.
 */
export class SqliteVoteRepository implements VoteRepository {
  constructor(private readonly db: SqliteDatabase) {}

  async upsert(userId: string, cardId: string, value: boolean, at: Date, newId: string, options: { publicOnly?: boolean } = {}): Promise<Vote | null> {
    return this.db.transaction((): Vote | null => {
      const card = this.db.prepare('SELECT author_id, private FROM cards WHERE id = ?').get(cardId) as VotedCard | undefined;
      // Read in the vote's own transaction: a privacy change committed before it is seen here, one after it moves the vote.
      if (!card || (options.publicOnly && card.private === 1)) return null;
      const existing = this.db.prepare('SELECT * FROM votes WHERE user_id = ? AND card_id = ?').get(userId, cardId) as VoteRow | undefined;
      const now = at.toISOString();
      let up = 0;
      let down = 0;
      if (!existing) {
        this.db.prepare('INSERT INTO votes (id, user_id, card_id, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(newId, userId, cardId, value ? 1 : 0, now, now);
        if (value) up = 1;
        else down = 1;
      } else if ((existing.value === 1) !== value) {
        this.db.prepare('UPDATE votes SET value = ?, updated_at = ? WHERE id = ?').run(value ? 1 : 0, now, existing.id);
        up = value ? 1 : -1;
        down = -up;
      }
      if (up !== 0 || down !== 0) this.adjust(cardId, card, up, down);
      return voteFromRow(this.db.prepare('SELECT * FROM votes WHERE user_id = ? AND card_id = ?').get(userId, cardId) as VoteRow);
    })();
  }

  async remove(userId: string, cardId: string): Promise<boolean> {
    return this.db.transaction((): boolean => {
      const existing = this.db.prepare('SELECT * FROM votes WHERE user_id = ? AND card_id = ?').get(userId, cardId) as VoteRow | undefined;
      if (!existing) return false;
      this.db.prepare('DELETE FROM votes WHERE id = ?').run(existing.id);
      const card = this.db.prepare('SELECT author_id, private FROM cards WHERE id = ?').get(cardId) as VotedCard | undefined;
      if (card) this.adjust(cardId, card, existing.value === 1 ? -1 : 0, existing.value === 1 ? 0 : -1);
      return true;
    })();
  }

  async votesOf(userId: string, cardIds: readonly string[]): Promise<Map<string, boolean>> {
    const out = new Map<string, boolean>();
    for (const slice of chunks([...new Set(cardIds)])) {
      const rows = this.db.prepare(`SELECT card_id, value FROM votes WHERE user_id = ? AND card_id IN (${placeholders(slice.length)})`).all(userId, ...slice) as { card_id: string; value: number }[];
      for (const r of rows) out.set(r.card_id, r.value === 1);
    }
    return out;
  }

  async received(authorId: string, includePrivate = false): Promise<ReceivedVotes> {
    const sql = includePrivate
      ? 'SELECT upvotes, downvotes FROM author_scores WHERE user_id = ?'
      : 'SELECT public_upvotes AS upvotes, public_downvotes AS downvotes FROM author_scores WHERE user_id = ?';
    const row = this.db.prepare(sql).get(authorId) as { upvotes: number; downvotes: number } | undefined;
    return { upvotes: row?.upvotes ?? 0, downvotes: row?.downvotes ?? 0 };
  }

  async countCastBy(userId: string): Promise<number> {
    return (this.db.prepare('SELECT count(*) AS n FROM votes WHERE user_id = ?').get(userId) as { n: number }).n;
  }

  async countCastOnVisible(userId: string, viewerId: string | null): Promise<number> {
    const sql = 'SELECT count(*) AS n FROM votes v JOIN cards c ON c.id = v.card_id WHERE v.user_id = ? AND (c.private = 0 OR c.author_id = ?)';
    return (this.db.prepare(sql).get(userId, viewerId) as { n: number }).n;
  }

  async topAuthors(offset: number, limit: number): Promise<AuthorScore[]> {
    const rows = this.db.prepare(RANKED_AUTHORS_SQL.page).all(limit, offset) as { user_id: string; score: number }[];
    return rows.map((r) => ({ userId: r.user_id, score: r.score }));
  }

  async countRankedAuthors(): Promise<number> {
    return (this.db.prepare(RANKED_AUTHORS_SQL.count).get() as { n: number }).n;
  }

  async authorsWithoutJoinDate(limit: number): Promise<string[]> {
    return (this.db.prepare(RANKED_AUTHORS_SQL.withoutJoinDate).all(limit) as { user_id: string }[]).map((r) => r.user_id);
  }

  async recordJoinDates(dates: ReadonlyMap<string, Date>): Promise<void> {
    const update = this.db.prepare('UPDATE author_scores SET joined_at = ? WHERE user_id = ?');
    this.db.transaction(() => {
      for (const [userId, at] of dates) update.run(at.toISOString(), userId);
    })();
  }

  private adjust(cardId: string, card: VotedCard, up: number, down: number): void {
    this.db.prepare('UPDATE cards SET total_upvotes = total_upvotes + ?, total_downvotes = total_downvotes + ? WHERE id = ?').run(up, down, cardId);
    const shown = card.private === 1 ? 0 : 1;
    this.db.prepare(
        `INSERT INTO author_scores (user_id, upvotes, downvotes, public_upvotes, public_downvotes) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (user_id) DO UPDATE SET upvotes = upvotes + excluded.upvotes, downvotes = downvotes + excluded.downvotes,
           public_upvotes = public_upvotes + excluded.public_upvotes, public_downvotes = public_downvotes + excluded.public_downvotes`,
      )
      .run(card.author_id, up, down, up * shown, down * shown);
  }
}
