import { randomUUID } from 'node:crypto';
import type { SqliteDatabase } from '@cards/platform';
import type { SearchIndexRebuildClaim, SearchIndexRebuildCursor, SearchIndexRebuildPhase, SearchIndexRebuildProgress } from '../../domain/ports';

interface RebuildRow {
  run: string;
  reason: string;
  phase: SearchIndexRebuildPhase;
  after: string | null;
  holder: string;
  heartbeat_at: string;
}

/** A released rebuild's heartbeat: older than any lease. */
const RELEASED = new Date(0).toISOString();

/**
 * The search index rebuild's progress in the cards database (table search_index_rebuild, one row at most). The
 * rebuild-search-index command may hold it from another process while the service runs on the same file: changes are
 * conditional on the run id as on MongoDB.
 */
export class SqliteSearchIndexRebuildProgress implements SearchIndexRebuildProgress {
  constructor(
    private readonly db: SqliteDatabase,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async begin(reason: string, holder: string): Promise<string> {
    const run = randomUUID();
    const at = this.now().toISOString();
    this.db
      .prepare(
        `INSERT INTO search_index_rebuild (id, run, reason, phase, after, holder, heartbeat_at, started_at) VALUES (1, ?, ?, 'cards', NULL, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET run = excluded.run, reason = excluded.reason, phase = excluded.phase, after = NULL,
           holder = excluded.holder, heartbeat_at = excluded.heartbeat_at, started_at = excluded.started_at`,
      )
      .run(run, reason, holder, at, at);
    return run;
  }

  async advance(run: string, at: SearchIndexRebuildCursor): Promise<boolean> {
    return this.db.prepare('UPDATE search_index_rebuild SET phase = ?, after = ?, heartbeat_at = ? WHERE run = ?').run(at.phase, at.after ?? null, this.now().toISOString(), run).changes > 0;
  }

  async keepAlive(run: string): Promise<boolean> {
    return this.db.prepare('UPDATE search_index_rebuild SET heartbeat_at = ? WHERE run = ?').run(this.now().toISOString(), run).changes > 0;
  }

  async release(run: string): Promise<void> {
    this.db.prepare('UPDATE search_index_rebuild SET heartbeat_at = ? WHERE run = ?').run(RELEASED, run);
  }

  async finish(run: string): Promise<void> {
    this.db.prepare('DELETE FROM search_index_rebuild WHERE run = ?').run(run);
  }

  async claimUnfinished(holder: string, staleAfterMs: number): Promise<SearchIndexRebuildClaim | undefined> {
    const now = this.now();
    const row = this.db.prepare('SELECT run, reason, phase, after, holder, heartbeat_at FROM search_index_rebuild WHERE id = 1').get() as RebuildRow | undefined;
    if (!row || new Date(row.heartbeat_at).getTime() > now.getTime() - staleAfterMs) return undefined;
    const run = randomUUID();
    // Conditional on the run read: of two claimers (or a claimer and a holder's begin), one changes it.
    const claimed = this.db.prepare('UPDATE search_index_rebuild SET run = ?, holder = ?, heartbeat_at = ? WHERE run = ?').run(run, holder, now.toISOString(), row.run).changes > 0;
    if (!claimed) return undefined;
    return { run, reason: row.reason, phase: row.phase, ...(row.after !== null ? { after: row.after } : {}), previousHolder: row.holder, previousHeartbeatAt: new Date(row.heartbeat_at) };
  }
}
