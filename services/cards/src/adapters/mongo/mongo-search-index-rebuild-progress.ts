import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { SearchIndexRebuildClaim, SearchIndexRebuildCursor, SearchIndexRebuildPhase, SearchIndexRebuildProgress } from '../../domain/ports';

/** The search index rebuild under way: one document (`_id` REBUILD_ID) in the collection `search_index_rebuild`. */
export interface SearchIndexRebuildDocument {
  _id: string;
  run: string;
  reason: string;
  phase: SearchIndexRebuildPhase;
  after: string | null;
  holder: string;
  heartbeatAt: Date;
  startedAt: Date;
}

const REBUILD_ID = 'search-index';

/**
 * The search index rebuild's progress in the cards database. Every change is one conditional single-document update
 * (on the run id; a claim also on the stale heartbeat), so replicas racing need no transaction: one of them wins.
 */
export class MongoSearchIndexRebuildProgress implements SearchIndexRebuildProgress {
  constructor(
    private readonly rebuilds: Collection<SearchIndexRebuildDocument>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async begin(reason: string, holder: string): Promise<string> {
    const run = randomUUID();
    const at = this.now();
    await this.rebuilds.replaceOne({ _id: REBUILD_ID }, { run, reason, phase: 'cards', after: null, holder, heartbeatAt: at, startedAt: at }, { upsert: true });
    return run;
  }

  async advance(run: string, at: SearchIndexRebuildCursor): Promise<boolean> {
    const result = await this.rebuilds.updateOne({ _id: REBUILD_ID, run }, { $set: { phase: at.phase, after: at.after ?? null, heartbeatAt: this.now() } });
    return result.matchedCount > 0;
  }

  async keepAlive(run: string): Promise<boolean> {
    return (await this.rebuilds.updateOne({ _id: REBUILD_ID, run }, { $set: { heartbeatAt: this.now() } })).matchedCount > 0;
  }

  async release(run: string): Promise<void> {
    await this.rebuilds.updateOne({ _id: REBUILD_ID, run }, { $set: { heartbeatAt: new Date(0) } });
  }

  async finish(run: string): Promise<void> {
    await this.rebuilds.deleteOne({ _id: REBUILD_ID, run });
  }

  async claimUnfinished(holder: string, staleAfterMs: number): Promise<SearchIndexRebuildClaim | undefined> {
    const now = this.now();
    const run = randomUUID();
    const before = await this.rebuilds.findOneAndUpdate(
      { _id: REBUILD_ID, heartbeatAt: { $lte: new Date(now.getTime() - staleAfterMs) } },
      { $set: { run, holder, heartbeatAt: now } },
      { returnDocument: 'before' },
    );
    if (!before) return undefined;
    return { run, reason: before.reason, phase: before.phase, ...(before.after !== null ? { after: before.after } : {}), previousHolder: before.holder, previousHeartbeatAt: before.heartbeatAt };
  }
}
