import { isDuplicateKeyError, MongoOutboxDrainLease, newId, type MongoConnection, type OutboxEntry, type OutboxStore, type OutgoingEvent } from '@cards/platform';
import type { ClaimedJob, JobClaim, NewVerificationJob, VerificationJob, VerificationOutcome, VerificationStatus } from '../../domain/model';
import type { VerificationStore } from '../../domain/ports';

/** A stored outbox entry; MongoDB hands the payload back as a BSON Binary. */
interface StoredEvent {
  topic: string;
  key: string;
  payload: Uint8Array | { buffer: Uint8Array };
}

/**
 * One document per job. The events announcing a result live in the job document itself (`outbox`)
 * until relayed, so recording a result and its events is one single-document write: atomic on a
 * standalone server too, no multi-document transaction needed.
 */
interface JobDocument extends VerificationJob {
  resultEventId: string | null;
  completedAt: Date | null;
  leaseUntil: Date | null;
  /** The claim a running job is held by; absent or null otherwise (documents written before claims had ids lack it). */
  claimId?: string | null;
  /** Insertion order (ObjectId time and counter are not enough across processes for "older than"). */
  seq: number;
  outbox?: StoredEvent[];
  /** Its card was deleted while its result waited to be relayed: the document goes once it is (forgetCard). */
  cardDeleted?: boolean;
}

const FINISHED: VerificationStatus[] = ['done', 'superseded', 'cancelled'];

function fromPrimitives(d: JobDocument): VerificationJob {
  return {
    id: d.id,
    sourceEventId: d.sourceEventId,
    cardId: d.cardId,
    authorId: d.authorId,
    link: d.link,
    content: d.content,
    status: d.status,
    attempts: d.attempts,
    dueAt: d.dueAt,
    score: d.score,
    failure: d.failure,
    createdAt: d.createdAt,
  };
}

/** A runnable job as fair claiming weighs it. */
interface Candidate {
  id: string;
  cardId: string;
  authorId: string;
  dueAt: Date;
  seq: number;
}

/** An earlier version made it; a database that never had it, or a replica that dropped it first, is fine. */
async function dropIndexIfPresent(collection: { dropIndex(name: string): Promise<unknown> }, name: string): Promise<void> {
  try {
    await collection.dropIndex(name);
  } catch (err) {
    const { codeName, code } = err as { codeName?: string; code?: number };
    if (codeName !== 'IndexNotFound' && codeName !== 'NamespaceNotFound' && code !== 27 && code !== 26) throw err;
  }
}

const bytesOf = (p: StoredEvent['payload']) => (p instanceof Uint8Array ? new Uint8Array(p) : new Uint8Array(p.buffer));

/**
 * Verification jobs in MongoDB (the search service's database), shared by every search replica.
 * Claims are per-document atomic (findOneAndUpdate on status); keeping two jobs of one card from
 * running at once is best-effort across replicas (a check before the claim). The per-author cap holds across replicas:
 * a claim that took its author over it is handed back at once (a check after the claim).
 */
export class MongoVerificationStore implements VerificationStore {
  private constructor(private readonly connection: MongoConnection) {}

  private get collection() {
    return this.connection.db.collection<JobDocument>('verification_jobs');
  }

  static async open(connection: MongoConnection): Promise<MongoVerificationStore> {
    const jobs = connection.db.collection<JobDocument>('verification_jobs');
    await jobs.createIndexes([
      { key: { id: 1 }, name: 'id', unique: true },
      { key: { sourceEventId: 1 }, name: 'source_event', unique: true },
      // Fair claiming looks for the first runnable job of some authors (or of all but some): the author in the index.
      // Led by status, it also serves every read by status alone (queue depth, the running jobs, expired leases).
      { key: { status: 1, dueAt: 1, seq: 1, authorId: 1 }, name: 'runnable_author' },
      { key: { cardId: 1, status: 1 }, name: 'card' },
      // Fair claiming counts each author's running jobs.
      { key: { authorId: 1, status: 1 }, name: 'author' },
      { key: { completedAt: 1, seq: 1 }, name: 'outbox_order' },
    ]);
    // `runnable` (status, dueAt, seq), made by earlier versions, is runnable_author's prefix: no read needs it any more,
    // and it cost every job's writes. Dropped once runnable_author exists (made just above).
    await dropIndexIfPresent(jobs, 'runnable');
    // Documents written before finished jobs dropped their content: only those still holding some are touched.
    await jobs.updateMany({ status: { $in: FINISHED }, content: { $ne: '' } }, { $set: { content: '' } });
    return new MongoVerificationStore(connection);
  }

  /** The relay's view of results not yet published. */
  outbox(): OutboxStore {
    const collection = this.collection;
    return {
      // Every search replica relays from these documents: one at a time.
      drainLease: new MongoOutboxDrainLease(this.connection.db, 'verification_jobs'),
      async pending(limit: number): Promise<OutboxEntry[]> {
        const docs = await collection.find({ outbox: { $exists: true } }).sort({ completedAt: 1, seq: 1 }).limit(limit).toArray();
        return docs.flatMap((d) => (d.outbox ?? []).map((e, i) => ({ id: `${d.id}#${i}`, topic: e.topic, key: e.key, payload: bytesOf(e.payload) })));
      },
      async remove(ids: string[]): Promise<void> {
        const jobIds = [...new Set(ids.map((id) => id.slice(0, id.lastIndexOf('#'))))];
        if (jobIds.length === 0) return;
        await collection.updateMany({ id: { $in: jobIds } }, { $unset: { outbox: '' } });
        await collection.deleteMany({ id: { $in: jobIds }, cardDeleted: true });
      },
      async count(): Promise<number> {
        const [total] = await collection.aggregate<{ n: number }>([{ $match: { outbox: { $exists: true } } }, { $group: { _id: null, n: { $sum: { $size: '$outbox' } } } }]).toArray();
        return total?.n ?? 0;
      },
    };
  }

  async enqueue(job: NewVerificationJob): Promise<boolean> {
    // A time-based sequence: unique enough per job and ordered across processes for supersession.
    const seq = job.createdAt.getTime() * 1000 + Math.floor(Math.random() * 1000);
    try {
      await this.collection.insertOne({
        ...job,
        status: 'pending',
        attempts: 0,
        dueAt: job.createdAt,
        score: null,
        failure: null,
        resultEventId: null,
        completedAt: null,
        leaseUntil: null,
        seq,
      });
    } catch (err) {
      if (isDuplicateKeyError(err)) return false;
      throw err;
    }
    await this.collection.updateMany({ cardId: job.cardId, status: 'pending', seq: { $lt: seq } }, { $set: { status: 'superseded', content: '' } });
    return true;
  }

  async claim(limit: number, now: Date, leaseUntil: Date, maxPerAuthor = Infinity): Promise<ClaimedJob[]> {
    if (limit <= 0) return [];
    // The running jobs only (at most every replica's slots): the waiting ones are never all read.
    const counts = await this.collection.aggregate<{ _id: string; n: number }>([{ $match: { status: 'running' } }, { $group: { _id: '$authorId', n: { $sum: 1 } } }]).toArray();
    const running = new Map(counts.map((c) => [c._id, c.n]));
    const claimed: ClaimedJob[] = [];
    // Cards tried by this claim: never two jobs of one card at once.
    const cards = new Set<string>();
    while (claimed.length < limit) {
      const candidate = await this.nextFairJob(now, running, maxPerAuthor, cards);
      if (!candidate) break;
      cards.add(candidate.cardId);
      if (await this.collection.findOne({ cardId: candidate.cardId, status: 'running' }, { projection: { id: 1 } })) continue;
      const claimId = newId();
      const taken = await this.collection.findOneAndUpdate({ id: candidate.id, status: 'pending' }, { $set: { status: 'running', leaseUntil, claimId } }, { returnDocument: 'after' });
      if (!taken) continue;
      // Replicas claim at once: counted again with this claim in, an author over the cap (another replica took one of
      // theirs meanwhile) gets this job handed back at once, untouched, so the cap holds across replicas.
      const authorRunning = Number.isFinite(maxPerAuthor) ? await this.collection.countDocuments({ authorId: taken.authorId, status: 'running' }) : (running.get(taken.authorId) ?? 0) + 1;
      if (authorRunning > maxPerAuthor) {
        await this.collection.updateOne({ id: taken.id, status: 'running', claimId }, { $set: { status: 'pending', leaseUntil: null, claimId: null } });
        running.set(taken.authorId, maxPerAuthor);
        continue;
      }
      running.set(taken.authorId, authorRunning);
      claimed.push({ ...fromPrimitives(taken), claimId });
    }
    return claimed;
  }

  /**
   * The job nextFairCandidate picks over the whole queue, read one document at a time: the authors are taken by their
   * running count, fewest first (those running none: every author not among the running ones), below maxPerAuthor;
   * the first runnable job in queue order (due time, then insertion) of an author of that count, skipping `skipCards`.
   * Each look is one find with limit 1 on the runnable_author index (author in the index: other authors' jobs are
   * passed over on its keys, not read), so a claim reads at most (levels of running counts) documents per job it
   * takes, however many jobs wait.
   */
  private async nextFairJob(now: Date, running: ReadonlyMap<string, number>, maxPerAuthor: number, skipCards: ReadonlySet<string>): Promise<Candidate | null> {
    const byCount = new Map<number, string[]>();
    for (const [authorId, n] of running) {
      if (n > 0) byCount.set(n, [...(byCount.get(n) ?? []), authorId]);
    }
    const busy = [...byCount.values()].flat();
    const levels: { authorId: { $nin: string[] } | { $in: string[] } }[] = [];
    if (maxPerAuthor > 0) levels.push({ authorId: { $nin: busy } });
    for (const n of [...byCount.keys()].sort((a, b) => a - b)) {
      if (n < maxPerAuthor) levels.push({ authorId: { $in: byCount.get(n)! } });
    }
    for (const level of levels) {
      const [job] = await this.collection
        .find<Candidate>(
          { status: 'pending', dueAt: { $lte: now }, ...level, ...(skipCards.size > 0 ? { cardId: { $nin: [...skipCards] } } : {}) },
          { projection: { _id: 0, id: 1, cardId: 1, authorId: 1, dueAt: 1, seq: 1 } },
        )
        .sort({ dueAt: 1, seq: 1 })
        .hint('runnable_author')
        .limit(1)
        .toArray();
      if (job) return job;
    }
    return null;
  }

  async retryLater(claim: JobClaim, attempts: number, dueAt: Date, lastFailure: string): Promise<boolean> {
    const result = await this.collection.updateOne(
      { id: claim.id, status: 'running', claimId: claim.claimId },
      { $set: { status: 'pending', attempts, dueAt, failure: lastFailure, leaseUntil: null, claimId: null } },
    );
    return result.modifiedCount === 1;
  }

  async complete(claim: JobClaim, outcome: VerificationOutcome, events: OutgoingEvent[]): Promise<boolean> {
    const result = await this.collection.findOneAndUpdate(
      { id: claim.id, status: 'running', claimId: claim.claimId },
      {
        $set: {
          status: 'done',
          score: outcome.score,
          failure: outcome.failure,
          resultEventId: outcome.eventId,
          completedAt: outcome.completedAt,
          attempts: outcome.attempts,
          leaseUntil: null,
          claimId: null,
          content: '',
          // None for a result announced to nobody: a document with no events waiting is one the relay never reads.
          ...(events.length > 0 ? { outbox: events.map((e) => ({ topic: e.topic, key: e.key, payload: Buffer.from(e.payload) })) } : {}),
        },
      },
      { returnDocument: 'after', projection: { cardId: 1, seq: 1 } },
    );
    if (!result) return false;
    // The card's earlier results and the jobs that never ran before this one (their events relayed): nothing reads them.
    await this.collection.deleteMany({ cardId: result.cardId, seq: { $lt: result.seq }, status: { $in: FINISHED }, 'outbox.0': { $exists: false } });
    return true;
  }

  async latestLink(cardId: string): Promise<string | null> {
    const latest = await this.collection.findOne({ cardId }, { sort: { seq: -1 }, projection: { link: 1 } });
    return latest?.link ?? null;
  }

  async queueDepth(cap: number): Promise<{ pending: number; running: number }> {
    // The `runnable_author` index leads with status: each count is one index range, stopped at `cap`.
    const of = (status: 'pending' | 'running') => this.collection.countDocuments({ status }, { limit: cap, maxTimeMS: 1000 });
    const [pending, running] = await Promise.all([of('pending'), of('running')]);
    return { pending, running };
  }

  async cancelCard(cardId: string): Promise<number> {
    return (await this.collection.updateMany({ cardId, status: { $in: ['pending', 'running'] } }, { $set: { status: 'cancelled', content: '' } })).modifiedCount;
  }

  async forgetCard(cardId: string): Promise<number> {
    // A result still waiting in its document's outbox is relayed first (remove() then deletes the document).
    const kept = await this.collection.updateMany(
      { cardId, 'outbox.0': { $exists: true } },
      { $set: { cardDeleted: true, content: '', status: 'cancelled', leaseUntil: null, claimId: null } },
    );
    const deleted = await this.collection.deleteMany({ cardId, 'outbox.0': { $exists: false } });
    return kept.modifiedCount + deleted.deletedCount;
  }

  async release(claim: JobClaim): Promise<boolean> {
    const result = await this.collection.updateOne({ id: claim.id, status: 'running', claimId: claim.claimId }, { $set: { status: 'pending', leaseUntil: null, claimId: null } });
    return result.modifiedCount === 1;
  }

  async requeueExpired(now: Date): Promise<number> {
    const result = await this.collection.updateMany(
      { status: 'running', $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] },
      // Counted here, not at claim: every replica requeues, but a document leaves 'running' once, so a cut-off counts
      // once; and release() after a graceful shutdown's interruption costs nothing.
      { $set: { status: 'pending', leaseUntil: null, claimId: null }, $inc: { attempts: 1 } },
    );
    return result.modifiedCount;
  }

  async find(jobId: string): Promise<VerificationJob | null> {
    const doc = await this.collection.findOne({ id: jobId });
    return doc ? fromPrimitives(doc) : null;
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}
