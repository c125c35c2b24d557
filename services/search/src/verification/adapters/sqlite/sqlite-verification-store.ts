import { SQLITE_OUTBOX_MIGRATION, SqliteOutboxStore, appendToSqliteOutbox, newId, openSqlite, type OutboxStore, type OutgoingEvent, type SqliteDatabase } from '@cards/platform';
import type { ClaimedJob, JobClaim, NewVerificationJob, VerificationJob, VerificationOutcome, VerificationStatus } from '../../domain/model';
import { nextFairCandidate } from '../../domain/fair-share';
import type { VerificationStore } from '../../domain/ports';

const MIGRATIONS = [
  `CREATE TABLE verification_jobs (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL UNIQUE,
     source_event_id TEXT NOT NULL UNIQUE,
     card_id TEXT NOT NULL, author_id TEXT NOT NULL, link TEXT NOT NULL, content TEXT NOT NULL,
     status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, due_at TEXT NOT NULL,
     score INTEGER, failure TEXT, result_event_id TEXT,
     created_at TEXT NOT NULL, completed_at TEXT);
   CREATE INDEX verification_jobs_runnable ON verification_jobs(status, due_at, seq);
   CREATE INDEX verification_jobs_card ON verification_jobs(card_id, status);`,
  SQLITE_OUTBOX_MIGRATION,
  `ALTER TABLE verification_jobs ADD COLUMN lease_until TEXT;`,
  // The claim a running job is held by (NULL otherwise); rows running when this is applied are requeued at open.
  `ALTER TABLE verification_jobs ADD COLUMN claim_id TEXT;`,
  // Fair claiming counts each author's running jobs and picks each author's oldest waiting ones.
  `CREATE INDEX verification_jobs_author ON verification_jobs(status, author_id, due_at, seq);`,
];

interface JobRow {
  seq: number;
  id: string;
  source_event_id: string;
  card_id: string;
  author_id: string;
  link: string;
  content: string;
  status: VerificationStatus;
  attempts: number;
  due_at: string;
  score: number | null;
  failure: string | null;
  created_at: string;
}

function fromPrimitives(r: JobRow): VerificationJob {
  return {
    id: r.id,
    sourceEventId: r.source_event_id,
    cardId: r.card_id,
    authorId: r.author_id,
    link: r.link,
    content: r.content,
    status: r.status,
    attempts: r.attempts,
    dueAt: new Date(r.due_at),
    score: r.score,
    failure: r.failure,
    createdAt: new Date(r.created_at),
  };
}

/**
 * Verification jobs and results in the verification module's own SQLite file (DATA_DIR/search/verification.db),
 * with the transactional outbox beside them: a result and its CardVerified event commit together.
 */
export class SqliteVerificationStore implements VerificationStore {
  private readonly db: SqliteDatabase;

  constructor(path: string) {
    this.db = openSqlite(path, MIGRATIONS);
    // This file is one search process's (its DATA_DIR): a job still running when it opens was its predecessor's, which
    // died with it. It runs again now instead of when its lease ends (~100 s after a crash, measured by a kill -9 soak), and
    // that cut-off run counts as an attempt, as in requeueExpired.
    this.requeueRunning(null);
    // Files written before finished jobs dropped their content: once, cheaply (only rows still holding some are touched).
    this.db.prepare(`UPDATE verification_jobs SET content = '' WHERE status NOT IN ('pending', 'running') AND content <> ''`).run();
    this.db
      .prepare(
        `DELETE FROM verification_jobs WHERE status IN ('done', 'superseded', 'cancelled')
           AND EXISTS (SELECT 1 FROM verification_jobs n WHERE n.card_id = verification_jobs.card_id AND n.status = 'done' AND n.seq > verification_jobs.seq)`,
      )
      .run();
  }

  /** The outbox the relay drains to the event bus. */
  outbox(): OutboxStore {
    return new SqliteOutboxStore(this.db);
  }

  async enqueue(job: NewVerificationJob): Promise<boolean> {
    return this.db.transaction(() => {
      const inserted = this.db
        .prepare(
          `INSERT INTO verification_jobs (id, source_event_id, card_id, author_id, link, content, status, attempts, due_at, created_at)
           VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT DO NOTHING`,
        )
        .run(job.id, job.sourceEventId, job.cardId, job.authorId, job.link, job.content, job.createdAt.toISOString(), job.createdAt.toISOString());
      if (inserted.changes === 0) return false;
      this.db
        .prepare(`UPDATE verification_jobs SET status = 'superseded', content = '' WHERE card_id = ? AND status = 'pending' AND seq < ?`)
        .run(job.cardId, inserted.lastInsertRowid);
      return true;
    })();
  }

  async claim(limit: number, now: Date, leaseUntil: Date, maxPerAuthor = Infinity): Promise<ClaimedJob[]> {
    if (limit <= 0) return [];
    // Each author's oldest runnable jobs, as many as one claim could take of one author (and a few more, for jobs of a
    // card taken earlier in this claim), so one author's thousands of waiting jobs neither hide others nor get read.
    const perAuthor = Math.min(limit, maxPerAuthor) + 4;
    return this.db.transaction(() => {
      const running = new Map<string, number>();
      const counts = this.db.prepare(`SELECT author_id, COUNT(*) AS n FROM verification_jobs WHERE status = 'running' GROUP BY author_id`).all() as { author_id: string; n: number }[];
      for (const { author_id, n } of counts) running.set(author_id, n);
      // The authors with waiting jobs, one index seek each (a skip scan), then each one's oldest runnable jobs: no read of
      // the whole queue, which one author may have filled.
      const authors = this.db
        .prepare(
          `WITH RECURSIVE waiting(author_id) AS (
             SELECT MIN(author_id) FROM verification_jobs WHERE status = 'pending'
             UNION ALL
             SELECT (SELECT MIN(author_id) FROM verification_jobs WHERE status = 'pending' AND author_id > waiting.author_id)
             FROM waiting WHERE waiting.author_id IS NOT NULL)
           SELECT author_id FROM waiting WHERE author_id IS NOT NULL`,
        )
        .all() as { author_id: string }[];
      const oldestOf = this.db.prepare(
        `SELECT * FROM verification_jobs j
         WHERE j.status = 'pending' AND j.author_id = ? AND j.due_at <= ?
           AND NOT EXISTS (SELECT 1 FROM verification_jobs r WHERE r.card_id = j.card_id AND r.status = 'running')
         ORDER BY j.due_at, j.seq LIMIT ?`,
      );
      const rows = authors
        .flatMap(({ author_id }) => oldestOf.all(author_id, now.toISOString(), perAuthor) as JobRow[])
        .sort((a, b) => (a.due_at < b.due_at ? -1 : a.due_at > b.due_at ? 1 : a.seq - b.seq));
      const candidates = rows.map((row) => ({ row, authorId: row.author_id, cardId: row.card_id }));
      const claimed: ClaimedJob[] = [];
      const cards = new Set<string>();
      const mark = this.db.prepare(`UPDATE verification_jobs SET status = 'running', lease_until = ?, claim_id = ? WHERE id = ? AND status = 'pending'`);
      while (claimed.length < limit) {
        const next = nextFairCandidate(candidates, running, maxPerAuthor, cards);
        if (next < 0) break;
        const [{ row }] = candidates.splice(next, 1) as [(typeof candidates)[number]];
        const claimId = newId();
        if (mark.run(leaseUntil.toISOString(), claimId, row.id).changes === 1) {
          cards.add(row.card_id);
          running.set(row.author_id, (running.get(row.author_id) ?? 0) + 1);
          claimed.push({ ...fromPrimitives({ ...row, status: 'running' }), claimId });
        }
      }
      return claimed;
    })();
  }

  async retryLater(claim: JobClaim, attempts: number, dueAt: Date, lastFailure: string): Promise<boolean> {
    const put = this.db
      .prepare(
        `UPDATE verification_jobs SET status = 'pending', attempts = ?, due_at = ?, failure = ?, lease_until = NULL, claim_id = NULL
         WHERE id = ? AND status = 'running' AND claim_id = ?`,
      )
      .run(attempts, dueAt.toISOString(), lastFailure, claim.id, claim.claimId);
    return put.changes === 1;
  }

  async complete(claim: JobClaim, outcome: VerificationOutcome, events: OutgoingEvent[]): Promise<boolean> {
    return this.db.transaction(() => {
      const done = this.db
        .prepare(
          `UPDATE verification_jobs SET status = 'done', score = ?, failure = ?, result_event_id = ?, completed_at = ?, attempts = ?,
             lease_until = NULL, claim_id = NULL, content = ''
           WHERE id = ? AND status = 'running' AND claim_id = ?`,
        )
        .run(outcome.score, outcome.failure, outcome.eventId, outcome.completedAt.toISOString(), outcome.attempts, claim.id, claim.claimId);
      if (done.changes === 0) return false;
      // The card's earlier results and the jobs that never ran before this one: nothing reads them any more.
      const { card_id, seq } = this.db.prepare(`SELECT card_id, seq FROM verification_jobs WHERE id = ?`).get(claim.id) as { card_id: string; seq: number };
      this.db.prepare(`DELETE FROM verification_jobs WHERE card_id = ? AND seq < ? AND status IN ('done', 'superseded', 'cancelled')`).run(card_id, seq);
      appendToSqliteOutbox(this.db, events);
      return true;
    })();
  }

  async latestLink(cardId: string): Promise<string | null> {
    const row = this.db.prepare(`SELECT link FROM verification_jobs WHERE card_id = ? ORDER BY seq DESC LIMIT 1`).get(cardId) as { link: string } | undefined;
    return row?.link ?? null;
  }

  async queueDepth(cap: number): Promise<{ pending: number; running: number }> {
    // verification_jobs_runnable leads with status: each count is one index range, stopped at `cap`.
    const count = this.db.prepare('SELECT COUNT(*) AS n FROM (SELECT 1 FROM verification_jobs WHERE status = ? LIMIT ?)');
    const of = (status: string) => (count.get(status, cap) as { n: number }).n;
    return { pending: of('pending'), running: of('running') };
  }

  async cancelCard(cardId: string): Promise<number> {
    return this.db.prepare(`UPDATE verification_jobs SET status = 'cancelled', content = '' WHERE card_id = ? AND status IN ('pending', 'running')`).run(cardId).changes;
  }

  async forgetCard(cardId: string): Promise<number> {
    // The outbox is a table of its own here: results not yet relayed are still published.
    return this.db.prepare(`DELETE FROM verification_jobs WHERE card_id = ?`).run(cardId).changes;
  }

  async release(claim: JobClaim): Promise<boolean> {
    const released = this.db
      .prepare(`UPDATE verification_jobs SET status = 'pending', lease_until = NULL, claim_id = NULL WHERE id = ? AND status = 'running' AND claim_id = ?`)
      .run(claim.id, claim.claimId);
    return released.changes === 1;
  }

  async requeueExpired(now: Date): Promise<number> {
    return this.requeueRunning(now);
  }

  /** Running jobs back to pending, each cut-off run counted as an attempt: those whose lease ended before `leaseEndedBefore`, or all (null). */
  private requeueRunning(leaseEndedBefore: Date | null): number {
    const before = leaseEndedBefore?.toISOString() ?? null;
    return this.db
      .prepare(
        `UPDATE verification_jobs SET status = 'pending', lease_until = NULL, claim_id = NULL, attempts = attempts + 1
         WHERE status = 'running' AND (? IS NULL OR lease_until IS NULL OR lease_until < ?)`,
      )
      .run(before, before).changes;
  }

  async find(jobId: string): Promise<VerificationJob | null> {
    const row = this.db.prepare('SELECT * FROM verification_jobs WHERE id = ?').get(jobId) as JobRow | undefined;
    return row ? fromPrimitives(row) : null;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
