import { randomUUID } from 'node:crypto';
import type { ClaimedJob, NewVerificationJob } from '../src/verification/domain/model';
import type { VerificationStore } from '../src/verification/domain/ports';
import { contractTests, describeOnEngine } from '../../../test/engines/suite';

let clock = Date.parse('2026-01-01T00:00:00.000Z');

/** Test data builder: aJob().forCard(id).build() */
export function aJob() {
  const job: NewVerificationJob = {
    id: randomUUID(),
    sourceEventId: randomUUID(),
    cardId: randomUUID(),
    authorId: randomUUID(),
    link: 'https://example.org/article',
    content: 'some card content',
    createdAt: new Date((clock += 1000)),
  };
  const builder = {
    forCard: (cardId: string) => ((job.cardId = cardId), builder),
    byAuthor: (authorId: string) => ((job.authorId = authorId), builder),
    fromEvent: (eventId: string) => ((job.sourceEventId = eventId), builder),
    build: () => ({ ...job }),
  };
  return builder;
}

const outcome = (score: number) => ({ score, failure: '', attempts: 1, eventId: randomUUID(), completedAt: new Date() });
const event = (key: string) => ({ topic: 'search.verification.v1', key, payload: new Uint8Array([1, 2, 3]) });
const later = () => new Date(clock + 3_600_000);
const lease = () => new Date(clock + 3_660_000);

export interface VerificationStoreUnderTest {
  store: VerificationStore;
  /** Events the store has committed for publication (its outbox), oldest first. */
  pendingEvents(): Promise<{ topic: string; key: string; payload: Uint8Array }[]>;
  cleanup(): Promise<void>;
}

/**
 * The behaviour every VerificationStore adapter must have. `skipReason` set means the adapter cannot
 * run here and the suite is reported skipped with it.
 */
export function describeVerificationStoreContract(name: string, factory: () => Promise<VerificationStoreUnderTest>, skipReason?: string): void {
  describeOnEngine(`VerificationStore contract: ${name}`, skipReason, () => {
    const it = contractTests(`verification-store on ${name}`);
    let subject: VerificationStoreUnderTest;
    let store: VerificationStore;
    beforeEach(async () => {
      subject = await factory();
      store = subject.store;
    });
    afterEach(async () => {
      await store.close();
      await subject.cleanup();
    });

    it('enqueues one job per source event: a replayed event adds nothing', async () => {
      const job = aJob().build();
      expect(await store.enqueue(job)).toBe(true);
      expect(await store.enqueue({ ...job, id: randomUUID() })).toBe(false);
      const claimed = await store.claim(10, later(), lease());
      expect(claimed.map((j) => j.id)).toEqual([job.id]);
      expect(claimed[0]).toMatchObject({ ...job, status: 'running', attempts: 0 });
    });

    it('claims oldest first, at most the limit, never twice, and never two jobs of one card at once', async () => {
      const a = aJob().build();
      const b = aJob().build();
      const c = aJob().build();
      for (const j of [a, b, c]) await store.enqueue(j);
      expect((await store.claim(2, later(), lease())).map((j) => j.id)).toEqual([a.id, b.id]);
      expect((await store.claim(5, later(), lease())).map((j) => j.id)).toEqual([c.id]);
      expect(await store.claim(5, later(), lease())).toEqual([]);

      const card = randomUUID();
      const first = aJob().forCard(card).build();
      await store.enqueue(first);
      const firstClaims = await store.claim(5, later(), lease());
      expect(firstClaims.map((j) => j.id)).toEqual([first.id]);
      const second = aJob().forCard(card).build();
      await store.enqueue(second);
      expect(await store.claim(5, later(), lease())).toEqual([]);
      expect(await store.complete(firstClaims[0]!, outcome(10), [event(card)])).toBe(true);
      expect((await store.claim(5, later(), lease())).map((j) => j.id)).toEqual([second.id]);
    });

    it('queueDepth counts the pending and running jobs, each up to the cap; finished and cancelled ones not', async () => {
      expect(await store.queueDepth(100)).toEqual({ pending: 0, running: 0 });
      const jobs = [aJob().build(), aJob().build(), aJob().build(), aJob().build()];
      for (const j of jobs) await store.enqueue(j);
      const [done, running] = await store.claim(2, later(), lease());
      expect(await store.queueDepth(100)).toEqual({ pending: 2, running: 2 });
      expect(await store.queueDepth(1)).toEqual({ pending: 1, running: 1 });
      expect(await store.complete(done!, outcome(10), [event(done!.cardId)])).toBe(true);
      expect(await store.cancelCard(running!.cardId)).toBe(1);
      expect(await store.cancelCard(jobs[3]!.cardId)).toBe(1);
      expect(await store.queueDepth(100)).toEqual({ pending: 1, running: 0 });
    });

    describe('fair across authors', () => {
      const ids = (jobs: { id: string }[]) => jobs.map((j) => j.id);
      async function jobsOf(author: string, n: number) {
        const jobs = Array.from({ length: n }, () => aJob().byAuthor(author).build());
        for (const j of jobs) await store.enqueue(j);
        return jobs;
      }

      it('each next job is the oldest of the author with the fewest running, not the oldest of all', async () => {
        const x = await jobsOf('author-x', 5);
        const [y] = await jobsOf('author-y', 1);
        const [z] = await jobsOf('author-z', 1);
        expect(ids(await store.claim(3, later(), lease()))).toEqual([x[0]!.id, y!.id, z!.id]);
        expect(ids(await store.claim(3, later(), lease()))).toEqual([x[1]!.id, x[2]!.id, x[3]!.id]);
      });

      it('an author with jobs running goes after one with none, whoever claimed them', async () => {
        const [first] = await jobsOf('author-x', 1);
        expect(ids(await store.claim(1, later(), lease()))).toEqual([first!.id]);
        const x = await jobsOf('author-x', 20);
        const [y] = await jobsOf('author-y', 1);
        expect(ids(await store.claim(2, later(), lease()))).toEqual([y!.id, x[0]!.id]);
      });

      it('an author at maxPerAuthor running gets no more until one of theirs ends; others still do', async () => {
        const x = await jobsOf('author-x', 4);
        const running = await store.claim(4, later(), lease(), 2);
        expect(ids(running)).toEqual([x[0]!.id, x[1]!.id]);
        expect(await store.claim(4, later(), lease(), 2)).toEqual([]);
        const [y] = await jobsOf('author-y', 1);
        expect(ids(await store.claim(4, later(), lease(), 2))).toEqual([y!.id]);
        expect(await store.complete(running[0]!, outcome(50), [event(x[0]!.cardId)])).toBe(true);
        expect(ids(await store.claim(4, later(), lease(), 2))).toEqual([x[2]!.id]);
        expect(await store.retryLater(running[1]!, 1, later(), 'timed out')).toBe(true);
        expect(ids(await store.claim(4, later(), lease(), 2))).toEqual([x[3]!.id]);
      });

      it('a job put back for a retry waits behind the jobs of others waiting meanwhile', async () => {
        const [x] = await jobsOf('author-x', 1);
        const [running] = await store.claim(1, later(), lease());
        const [y] = await jobsOf('author-y', 1);
        const [z] = await jobsOf('author-z', 1);
        expect(await store.retryLater(running!, 1, later(), 'timed out')).toBe(true);
        expect(ids(await store.claim(3, later(), lease()))).toEqual([y!.id, z!.id, x!.id]);
      });
    });

    it('a newer request for a card supersedes its pending one', async () => {
      const card = randomUUID();
      const older = aJob().forCard(card).build();
      const newer = aJob().forCard(card).build();
      await store.enqueue(older);
      await store.enqueue(newer);
      expect((await store.claim(5, later(), lease())).map((j) => j.id)).toEqual([newer.id]);
      expect((await store.find(older.id))?.status).toBe('superseded');
    });

    it('latestLink is the link of the card\'s most recent job, whatever became of it', async () => {
      const card = randomUUID();
      expect(await store.latestLink(card)).toBeNull();
      const first = { ...aJob().forCard(card).build(), link: 'https://example.org/first' };
      await store.enqueue(first);
      const [running] = await store.claim(1, later(), lease());
      expect(running?.id).toBe(first.id);
      await store.enqueue({ ...aJob().forCard(card).build(), link: 'https://example.org/second' });
      expect(await store.latestLink(card)).toBe('https://example.org/second');
      expect(await store.complete(running!, outcome(50), [])).toBe(true);
      expect(await store.latestLink(card)).toBe('https://example.org/second');
      expect(await store.latestLink(randomUUID())).toBeNull();
    });

    it('retryLater puts a job back until its due time', async () => {
      const job = aJob().build();
      await store.enqueue(job);
      const [claimed] = await store.claim(1, later(), lease());
      const due = new Date(later().getTime() + 60_000);
      expect(await store.retryLater(claimed!, 1, due, 'timed out')).toBe(true);
      expect(await store.claim(1, later(), lease())).toEqual([]);
      const again = await store.claim(1, due, new Date(due.getTime() + 60_000));
      expect(again[0]).toMatchObject({ id: job.id, attempts: 1, failure: 'timed out' });
    });

    it('complete records the outcome and its events together, once', async () => {
      const job = aJob().build();
      await store.enqueue(job);
      const [claimed] = await store.claim(1, later(), lease());
      expect(await subject.pendingEvents()).toEqual([]);
      expect(await store.complete(claimed!, outcome(77), [event(job.cardId)])).toBe(true);
      expect(await store.find(job.id)).toMatchObject({ status: 'done', score: 77, failure: '' });
      expect(await subject.pendingEvents()).toEqual([expect.objectContaining({ topic: 'search.verification.v1', key: job.cardId, payload: new Uint8Array([1, 2, 3]) })]);
      expect(await store.complete(claimed!, outcome(5), [event(job.cardId)])).toBe(false);
      expect(await subject.pendingEvents()).toHaveLength(1);
      expect((await store.find(job.id))?.score).toBe(77);
    });

    it('a deleted card cancels its pending and running jobs; a cancelled job records and announces nothing', async () => {
      const card = randomUUID();
      const running = aJob().forCard(card).build();
      await store.enqueue(running);
      const [claimed] = await store.claim(1, later(), lease());
      const pending = aJob().forCard(card).build();
      await store.enqueue(pending);
      expect(await store.cancelCard(card)).toBe(2);
      expect(await store.complete(claimed!, outcome(50), [event(card)])).toBe(false);
      expect(await subject.pendingEvents()).toEqual([]);
      expect(await store.claim(5, later(), lease())).toEqual([]);
    });

    it('a job keeps the card\'s text only while it may run: done, superseded and cancelled ones keep none', async () => {
      const card = randomUUID();
      const done = aJob().forCard(card).build();
      await store.enqueue(done);
      expect((await store.find(done.id))?.content).toBe('some card content');
      const [claimed] = await store.claim(1, later(), lease());
      expect(claimed?.content).toBe('some card content');
      const superseded = aJob().forCard(card).build();
      const cancelled = aJob().forCard(card).build();
      await store.enqueue(superseded);
      await store.enqueue(cancelled);
      expect(await store.complete(claimed!, outcome(60), [])).toBe(true);
      expect(await store.cancelCard(card)).toBe(1);
      for (const id of [done.id, superseded.id, cancelled.id]) expect((await store.find(id))?.content).toBe('');
    });

    it('a card keeps its latest result and the jobs after it: completing one removes its older finished jobs', async () => {
      const card = randomUUID();
      const other = aJob().build();
      await store.enqueue(other);
      const first = aJob().forCard(card).build();
      await store.enqueue(first);
      const [a, b] = await store.claim(2, later(), lease());
      for (const claimed of [a, b]) expect(await store.complete(claimed!, outcome(10), [])).toBe(true);
      const skipped = aJob().forCard(card).build();
      const second = aJob().forCard(card).build();
      await store.enqueue(skipped);
      await store.enqueue(second);
      const [running] = await store.claim(1, later(), lease());
      expect(running?.id).toBe(second.id);
      const third = aJob().forCard(card).build();
      await store.enqueue(third);
      expect(await store.complete(running!, outcome(20), [])).toBe(true);
      expect(await store.find(first.id)).toBeNull();
      expect(await store.find(skipped.id)).toBeNull();
      expect(await store.find(second.id)).toMatchObject({ status: 'done', score: 20 });
      expect(await store.find(third.id)).toMatchObject({ status: 'pending', content: 'some card content' });
      expect(await store.find(other.id)).toMatchObject({ status: 'done', score: 10 });
      expect(await store.latestLink(card)).toBe(third.link);
    });

    it('a deleted card\'s jobs are all removed (forgetCard); its running one records and announces nothing', async () => {
      const card = randomUUID();
      const finished = aJob().forCard(card).build();
      await store.enqueue(finished);
      const [first] = await store.claim(1, later(), lease());
      expect(await store.complete(first!, outcome(30), [])).toBe(true);
      const running = aJob().forCard(card).build();
      await store.enqueue(running);
      const [claimed] = await store.claim(1, later(), lease());
      const pending = aJob().forCard(card).build();
      await store.enqueue(pending);
      const kept = aJob().build();
      await store.enqueue(kept);
      expect(await store.forgetCard(card)).toBe(3);
      for (const id of [finished.id, running.id, pending.id]) expect(await store.find(id)).toBeNull();
      expect(await store.complete(claimed!, outcome(50), [event(card)])).toBe(false);
      expect(await subject.pendingEvents()).toEqual([]);
      expect(await store.latestLink(card)).toBeNull();
      expect((await store.claim(5, later(), lease())).map((j) => j.id)).toEqual([kept.id]);
    });

    it('release hands an interrupted job back at once', async () => {
      const job = aJob().build();
      await store.enqueue(job);
      const [claimed] = await store.claim(1, later(), lease());
      expect(await store.release(claimed!)).toBe(true);
      expect((await store.claim(1, later(), lease()))[0]).toMatchObject({ id: job.id, attempts: 0 });
    });

    it('jobs of a crashed runner run again once their lease has expired, not before', async () => {
      const job = aJob().build();
      await store.enqueue(job);
      await store.claim(1, later(), lease());
      expect(await store.requeueExpired(later())).toBe(0);
      expect(await store.claim(1, later(), lease())).toEqual([]);
      expect(await store.requeueExpired(new Date(lease().getTime() + 1))).toBe(1);
      expect((await store.claim(1, later(), lease())).map((j) => j.id)).toEqual([job.id]);
    });

    it('every run cut off by an expired lease counts as an attempt, after transient retries too', async () => {
      const job = aJob().build();
      await store.enqueue(job);
      const [claimed] = await store.claim(1, later(), lease());
      expect(claimed).toMatchObject({ id: job.id, attempts: 0 });
      await store.retryLater(claimed!, 1, later(), 'timed out');
      expect((await store.claim(1, later(), lease()))[0]).toMatchObject({ id: job.id, attempts: 1 });
      for (const expected of [2, 3]) {
        expect(await store.requeueExpired(new Date(lease().getTime() + 1))).toBe(1);
        expect((await store.claim(1, later(), lease()))[0]).toMatchObject({ id: job.id, attempts: expected, failure: 'timed out' });
      }
    });

    it('release after an interruption costs no attempt; a later cut-off does', async () => {
      const job = aJob().build();
      await store.enqueue(job);
      await store.release((await store.claim(1, later(), lease()))[0]!);
      await store.release((await store.claim(1, later(), lease()))[0]!);
      expect((await store.claim(1, later(), lease()))[0]).toMatchObject({ id: job.id, attempts: 0 });
      expect(await store.requeueExpired(new Date(lease().getTime() + 1))).toBe(1);
      expect((await store.claim(1, later(), lease()))[0]).toMatchObject({ id: job.id, attempts: 1 });
    });

    it('complete records the attempts the job made in all (a run that gives up fetches nothing more)', async () => {
      const job = aJob().build();
      await store.enqueue(job);
      for (let cutOffs = 0; cutOffs < 2; cutOffs++) {
        await store.claim(1, later(), lease());
        expect(await store.requeueExpired(new Date(lease().getTime() + 1))).toBe(1);
      }
      const [claimed] = await store.claim(1, later(), lease());
      expect(await store.complete(claimed!, { ...outcome(0), attempts: 2 }, [event(job.cardId)])).toBe(true);
      expect(await store.find(job.id)).toMatchObject({ status: 'done', attempts: 2 });
    });

    describe('a runner that outlived its lease, its job claimed again', () => {
      const expired = () => new Date(lease().getTime() + 1);
      async function claimedTwice() {
        const job = aJob().build();
        await store.enqueue(job);
        const [stale] = await store.claim(1, later(), lease());
        expect(await store.requeueExpired(expired())).toBe(1);
        const [current] = await store.claim(1, later(), lease());
        expect(current).toMatchObject({ id: job.id, attempts: 1 });
        expect(current!.claimId).not.toBe(stale!.claimId);
        return { job, stale: stale!, current: current! };
      }
      /** The job is still the second claim's: nothing runnable, and that claim finishes it, once. */
      async function onlyTheCurrentClaimFinishes(current: ClaimedJob) {
        expect(await store.find(current.id)).toMatchObject({ status: 'running', attempts: 1, failure: null });
        expect(await store.claim(5, later(), lease())).toEqual([]);
        expect(await subject.pendingEvents()).toEqual([]);
        expect(await store.complete(current, outcome(90), [event(current.cardId)])).toBe(true);
        expect(await store.complete(current, outcome(91), [event(current.cardId)])).toBe(false);
        expect(await store.find(current.id)).toMatchObject({ status: 'done', score: 90 });
        expect(await subject.pendingEvents()).toHaveLength(1);
      }

      it('cannot complete it: its result and events are not recorded', async () => {
        const { stale, current } = await claimedTwice();
        expect(await store.complete(stale, outcome(12), [event(stale.cardId)])).toBe(false);
        await onlyTheCurrentClaimFinishes(current);
      });

      it('cannot put it back for a retry', async () => {
        const { stale, current } = await claimedTwice();
        expect(await store.retryLater(stale, 1, later(), 'timed out')).toBe(false);
        await onlyTheCurrentClaimFinishes(current);
      });

      it('cannot hand it back', async () => {
        const { stale, current } = await claimedTwice();
        expect(await store.release(stale)).toBe(false);
        await onlyTheCurrentClaimFinishes(current);
      });

      it('cannot touch it while it waits, requeued, nor once the other run finished it', async () => {
        const job = aJob().build();
        await store.enqueue(job);
        const [stale] = await store.claim(1, later(), lease());
        expect(await store.requeueExpired(expired())).toBe(1);
        expect(await store.release(stale!)).toBe(false);
        expect(await store.retryLater(stale!, 1, new Date(later().getTime() + 60_000), 'timed out')).toBe(false);
        expect(await store.complete(stale!, outcome(12), [event(job.cardId)])).toBe(false);
        const [current] = await store.claim(1, later(), lease());
        expect(current).toMatchObject({ id: job.id, attempts: 1, failure: null });
        expect(await store.complete(current!, outcome(90), [event(job.cardId)])).toBe(true);
        expect(await store.release(stale!)).toBe(false);
        expect(await store.retryLater(stale!, 1, later(), 'timed out')).toBe(false);
        expect(await store.find(job.id)).toMatchObject({ status: 'done', score: 90 });
        expect(await subject.pendingEvents()).toHaveLength(1);
      });
    });
  });
}
