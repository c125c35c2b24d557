import { AlreadyExistsError, EXPIRED_KEYS_PER_SWEEP, keptKeyExpiry, newId, type KeptKeyExpiry, type OutgoingEvent } from '@cards/platform';
import type { FileRecord } from '../src/domain/model';
import type { FileRepository } from '../src/domain/ports';
import { aFile } from './builders';

export interface RepositoryUnderTest {
  repository: FileRepository;
  /** Events written through the repository and not yet relayed, oldest first. */
  pendingEvents(): Promise<OutgoingEvent[]>;
}

const event = (key: string, text: string): OutgoingEvent => ({ topic: 'files.file.v1', key, payload: new TextEncoder().encode(text) });

/**
 * The FileRepository port's contract; every adapter runs it with a fresh, empty store per test. `keyExpiry`: how long
 * the store keeps the keys of deleted files, and its clock (24 h by the real one when not given).
 */
export function describeFileRepositoryContract(name: string, factory: (options?: { keyExpiry?: KeptKeyExpiry }) => Promise<RepositoryUnderTest>): void {
  describe(`FileRepository contract: ${name}`, () => {
    let subject: RepositoryUnderTest;
    beforeEach(async () => {
      subject = await factory();
    });
    afterEach(async () => {
      await subject.repository.close();
    });

    it('create stores the record with its event; get returns it field for field', async () => {
      const file = aFile({ ocFilePath: '/docs/x.docx', tags: ['x', 'Heading One'] }).private().build();
      await subject.repository.create(file, [event(file.id, 'uploaded')]);
      expect(await subject.repository.get(file.id)).toEqual(file);
      const pending = await subject.pendingEvents();
      expect(pending.map((e) => [e.key, new TextDecoder().decode(e.payload)])).toEqual([[file.id, 'uploaded']]);
    });

    it('get of an unknown id is null', async () => {
      expect(await subject.repository.get(newId())).toBeNull();
    });

    it('a failed create (duplicate id) stores neither record nor event', async () => {
      const file = aFile().build();
      await subject.repository.create(file, [event(file.id, 'first')]);
      // Not .rejects.toThrow(): a native driver's error class may come from another jest realm.
      const outcome = await subject.repository.create({ ...file, fileName: 'other.pdf' }, [event(file.id, 'second')]).then(
        () => 'stored',
        () => 'refused',
      );
      expect(outcome).toBe('refused');
      expect((await subject.repository.get(file.id))?.fileName).toBe('notes.docx');
      expect((await subject.pendingEvents()).map((e) => new TextDecoder().decode(e.payload))).toEqual(['first']);
    });

    it('refuses a second record with the same user and idempotency key, storing neither it nor its event; keys are per user', async () => {
      const owner = newId();
      const first = aFile().ownedBy(owner).withIdempotencyKey('http:k1').build();
      await subject.repository.create(first, [event(first.id, 'first')]);
      expect(await subject.repository.get(first.id)).toEqual(first);
      const second = aFile().ownedBy(owner).withIdempotencyKey('http:k1').build();
      await expect(subject.repository.create(second, [event(second.id, 'second')])).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await subject.repository.get(second.id)).toBeNull();
      expect((await subject.pendingEvents()).map((e) => new TextDecoder().decode(e.payload))).toEqual(['first']);
      expect(await subject.repository.findByIdempotencyKey(owner, 'http:k1')).toEqual(first);
      expect(await subject.repository.findByIdempotencyKey(newId(), 'http:k1')).toBeNull();
      await subject.repository.create(aFile().withIdempotencyKey('http:k1').build(), []);
      // Records without a key never meet.
      await subject.repository.create(aFile().ownedBy(owner).build(), []);
      await subject.repository.create(aFile().ownedBy(owner).build(), []);
      expect(await subject.repository.listByUser(owner)).toHaveLength(3);
    });

    it('stores one record of two creates with one key at the same moment', async () => {
      const owner = newId();
      const both = [aFile().ownedBy(owner).withIdempotencyKey('http:same').build(), aFile().ownedBy(owner).withIdempotencyKey('http:same').build()];
      const results = await Promise.allSettled(both.map((f) => subject.repository.create(f, [event(f.id, 'uploaded')])));
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(AlreadyExistsError);
      expect(await subject.repository.listByUser(owner)).toHaveLength(1);
      expect(await subject.pendingEvents()).toHaveLength(1);
    });

    it('keeps the idempotency key of a deleted record, for its user only', async () => {
      const owner = newId();
      const keyed = aFile().ownedBy(owner).withIdempotencyKey('http:gone').build();
      await subject.repository.create(keyed, []);
      expect(await subject.repository.findDeletedIdempotencyKey(owner, 'http:gone')).toBeNull();
      const before = Date.now();
      expect(await subject.repository.delete(keyed.id, [])).toBe(true);
      expect(await subject.repository.findByIdempotencyKey(owner, 'http:gone')).toBeNull();
      const kept = await subject.repository.findDeletedIdempotencyKey(owner, 'http:gone');
      expect(kept).toEqual({ requestFingerprint: null, deletedAt: expect.any(Date) });
      expect(kept!.deletedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(await subject.repository.findDeletedIdempotencyKey(newId(), 'http:gone')).toBeNull();
      const unkeyed = aFile().ownedBy(owner).build();
      await subject.repository.create(unkeyed, []);
      expect(await subject.repository.delete(unkeyed.id, [])).toBe(true);
      // The fingerprint of the request that carried the key is stored with the record and kept with its key.
      const printed = aFile().ownedBy(owner).withIdempotencyKey('http:printed', 'fp-1').build();
      await subject.repository.create(printed, []);
      expect(await subject.repository.findByIdempotencyKey(owner, 'http:printed')).toEqual(printed);
      await subject.repository.delete(printed.id, []);
      expect((await subject.repository.findDeletedIdempotencyKey(owner, 'http:printed'))?.requestFingerprint).toBe('fp-1');
    });

    it("forgets a deleted record's key once IDEMPOTENCY_KEY_TTL_HOURS have passed; later deletions take out expired keys, at most EXPIRED_KEYS_PER_SWEEP each, oldest first", async () => {
      const hour = 3_600_000;
      const start = Date.parse('2026-03-01T00:00:00.000Z');
      let now = start;
      const clocked = await factory({ keyExpiry: keptKeyExpiry(24, () => new Date(now)) });
      try {
        const owner = newId();
        const deleteKeyed = async (key: string) => {
          const keyed = aFile().ownedBy(owner).withIdempotencyKey(key, `fp-${key}`).build();
          await clocked.repository.create(keyed, []);
          expect(await clocked.repository.delete(keyed.id, [])).toBe(true);
        };
        const live = aFile().ownedBy(owner).withIdempotencyKey('http:live').build();
        await clocked.repository.create(live, []);
        await deleteKeyed('http:gone');
        now = start + 24 * hour - 1;
        expect(await clocked.repository.findDeletedIdempotencyKey(owner, 'http:gone')).toEqual({ requestFingerprint: 'fp-http:gone', deletedAt: new Date(start) });
        now = start + 24 * hour;
        expect(await clocked.repository.findDeletedIdempotencyKey(owner, 'http:gone')).toBeNull();
        // More expired keys than one deletion takes out: the oldest EXPIRED_KEYS_PER_SWEEP go, the newest stays.
        for (let i = 1; i <= EXPIRED_KEYS_PER_SWEEP; i++) {
          now = start + i;
          await deleteKeyed(`http:${i}`);
        }
        now = start + 48 * hour;
        await deleteKeyed('http:later');
        now = start + EXPIRED_KEYS_PER_SWEEP;
        expect(await clocked.repository.findDeletedIdempotencyKey(owner, 'http:gone')).toBeNull();
        const left = [];
        for (let i = 1; i <= EXPIRED_KEYS_PER_SWEEP; i++) if (await clocked.repository.findDeletedIdempotencyKey(owner, `http:${i}`)) left.push(i);
        expect(left).toEqual([EXPIRED_KEYS_PER_SWEEP]);
        expect(await clocked.repository.findDeletedIdempotencyKey(owner, 'http:later')).not.toBeNull();
        // The expired key is free for a new record; a live record keeps its key however long it lives.
        now = start + 48 * hour;
        await deleteKeyed('http:gone');
        expect((await clocked.repository.findDeletedIdempotencyKey(owner, 'http:gone'))?.deletedAt).toEqual(new Date(now));
        expect((await clocked.repository.findByIdempotencyKey(owner, 'http:live'))?.id).toBe(live.id);
      } finally {
        await clocked.repository.close();
      }
    });

    it('listByUser returns only that user\'s files, newest first', async () => {
      const owner = newId();
      const older = aFile().ownedBy(owner).createdAt(new Date('2026-01-01T00:00:00Z')).build();
      const newer = aFile().ownedBy(owner).createdAt(new Date('2026-02-01T00:00:00Z')).private().build();
      const other = aFile().build();
      for (const f of [older, newer, other]) await subject.repository.create(f, []);
      expect((await subject.repository.listByUser(owner)).map((f) => f.id)).toEqual([newer.id, older.id]);
      expect(await subject.repository.listByUser(newId())).toEqual([]);
    });

    /** Every page of a user's files from the newest on, following `next` until there is none. */
    async function allPages(userId: string, includePrivate: boolean, limit: number) {
      const pages: FileRecord[][] = [];
      let after: string | undefined;
      do {
        const page = await subject.repository.listPageByUser(userId, includePrivate, limit, after);
        pages.push(page.items);
        after = page.next;
      } while (after !== undefined);
      return pages;
    }

    it("lists a user's files in pages of the given size, in listByUser's order, each once, private ones only on request", async () => {
      const owner = newId();
      const made = Array.from({ length: 5 }, (_, i) => (i % 2 ? aFile().private() : aFile()).ownedBy(owner).createdAt(new Date(Date.UTC(2026, 0, 1 + i))).build());
      // Equal creation times list by id, across a page boundary too.
      for (let i = 0; i < 3; i++) made.push(aFile().ownedBy(owner).createdAt(new Date(Date.UTC(2026, 1, 1))).build());
      for (const f of [...made, aFile().build()]) await subject.repository.create(f, []);

      const all = await subject.repository.listByUser(owner);
      expect(all.map((f) => f.id)).toEqual([...made.slice(5).sort((a, b) => (a.id < b.id ? -1 : 1)), ...made.slice(0, 5).reverse()].map((f) => f.id));
      const pages = await allPages(owner, true, 3);
      expect(pages.map((p) => p.length)).toEqual([3, 3, 2]);
      expect(pages.flat()).toEqual(all);
      expect((await allPages(owner, false, 2)).flat()).toEqual(all.filter((f) => !f.private));
      expect((await allPages(owner, true, 8)).map((p) => p.length)).toEqual([8]);
      expect(await subject.repository.listPageByUser(newId(), true, 5)).toEqual({ items: [] });
    });

    it('keeps its place while files are added, changed and deleted between pages, and applies privacy on every page', async () => {
      const owner = newId();
      const made = Array.from({ length: 6 }, (_, i) => aFile().ownedBy(owner).createdAt(new Date(Date.UTC(2026, 0, 1 + i))).build());
      for (const f of made) await subject.repository.create(f, []);
      const newestFirst = [...made].reverse();

      const first = await subject.repository.listPageByUser(owner, false, 2);
      await subject.repository.create(aFile().ownedBy(owner).createdAt(new Date(Date.UTC(2026, 5, 1))).build(), []);
      const at = new Date('2026-07-01T00:00:00.000Z');
      await subject.repository.setIngestion(newestFirst[2]!.id, { status: 'done', error: null, cardCount: 3, collectionId: null }, at);
      await subject.repository.setPrivacy(newestFirst[3]!.id, true, at, []);
      await subject.repository.delete(newestFirst[4]!.id, []);
      const rest = await subject.repository.listPageByUser(owner, false, 10, first.next);

      expect(first.items.map((f) => f.id)).toEqual(newestFirst.slice(0, 2).map((f) => f.id));
      expect(rest.items.map((f) => f.id)).toEqual([newestFirst[2]!.id, newestFirst[5]!.id]);
      expect(rest.items[0]).toMatchObject({ ingestionStatus: 'done', cardCount: 3 });
      expect(rest.next).toBeUndefined();
    });

    it('refuses a page cursor it did not give, naming page_token', async () => {
      const owner = newId();
      await subject.repository.create(aFile().ownedBy(owner).build(), []);
      for (const cursor of ['', 'garbage', '2026-01-01T00:00:00.000Z', `1_${newId().toUpperCase()}`, `${'9'.repeat(16)}_${newId()}`]) {
        await expect(subject.repository.listPageByUser(owner, true, 5, cursor)).rejects.toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('page_token') }));
      }
    });

    it('setPrivacy changes the flag and updated_at, with its events only when the flag changes; false for an unknown id', async () => {
      const file = aFile().build();
      await subject.repository.create(file, []);
      const now = new Date('2026-03-03T03:03:03.333Z');
      expect(await subject.repository.setPrivacy(file.id, true, now, [event(file.id, 'private')])).toBe(true);
      expect(await subject.repository.get(file.id)).toMatchObject({ private: true, updatedAt: now, createdAt: file.createdAt });
      expect(await subject.repository.setPrivacy(file.id, true, new Date(), [event(file.id, 'private again')])).toBe(true);
      expect(await subject.repository.setPrivacy(file.id, false, new Date(), [event(file.id, 'public')])).toBe(true);
      expect(await subject.repository.get(file.id)).toMatchObject({ private: false });
      expect(await subject.repository.setPrivacy(newId(), true, now, [event(file.id, 'unknown')])).toBe(false);
      expect((await subject.pendingEvents()).map((e) => new TextDecoder().decode(e.payload))).toEqual(['private', 'public']);
    });

    it('setIngestion records the outcome; false once the record is gone', async () => {
      const file = aFile().build();
      await subject.repository.create(file, []);
      const collectionId = newId();
      expect(await subject.repository.setIngestion(file.id, { status: 'done', error: null, cardCount: 7, collectionId }, new Date())).toBe(true);
      expect(await subject.repository.get(file.id)).toMatchObject({ ingestionStatus: 'done', ingestionError: null, cardCount: 7, collectionId });
      expect(await subject.repository.setIngestion(file.id, { status: 'failed', error: 'corrupt', cardCount: 0, collectionId: null }, new Date())).toBe(true);
      expect(await subject.repository.get(file.id)).toMatchObject({ ingestionStatus: 'failed', ingestionError: 'corrupt' });
      await subject.repository.delete(file.id, []);
      expect(await subject.repository.setIngestion(file.id, { status: 'done', error: null, cardCount: 1, collectionId }, new Date())).toBe(false);
    });

    it('delete removes the record and writes its event only when there was a record', async () => {
      const file = aFile().build();
      await subject.repository.create(file, []);
      expect(await subject.repository.delete(file.id, [event(file.id, 'deleted')])).toBe(true);
      expect(await subject.repository.get(file.id)).toBeNull();
      expect(await subject.repository.delete(file.id, [event(file.id, 'deleted again')])).toBe(false);
      expect((await subject.pendingEvents()).map((e) => new TextDecoder().decode(e.payload))).toEqual(['deleted']);
    });

    it('delete of one record raced by a second delete: one answers true, the other false, with one event', async () => {
      const file = aFile().build();
      await subject.repository.create(file, []);
      const results = await Promise.all([subject.repository.delete(file.id, [event(file.id, 'first')]), subject.repository.delete(file.id, [event(file.id, 'second')])]);
      expect([...results].sort()).toEqual([false, true]);
      expect(await subject.repository.get(file.id)).toBeNull();
      expect((await subject.pendingEvents()).map((e) => new TextDecoder().decode(e.payload))).toEqual([results[0] ? 'first' : 'second']);
    });

    describe('ingestion queue', () => {
      const at = (seconds: number) => new Date(Date.UTC(2026, 2, 1, 0, 0, seconds));
      const pendingOf = (owner: string, day: number) => aFile().ownedBy(owner).createdAt(new Date(Date.UTC(2026, 0, day))).build();
      const claimIds = async (holder: string, from: number, count: number) => {
        const ids: (string | undefined)[] = [];
        for (let i = 0; i < count; i++) ids.push((await subject.repository.claimNextIngestion(holder, at(from + i), 60_000))?.file.id);
        return ids;
      };

      it("claims pending files in turns across owners (the last one to start longest ago, never first), each owner's oldest first", async () => {
        const [a, b, c] = [newId(), newId(), newId()];
        // a's oldest is the oldest of all; b and c upload later; a done and a failed file are not claimed.
        const files = [pendingOf(a, 1), pendingOf(a, 2), pendingOf(a, 3), pendingOf(b, 5), pendingOf(b, 4), pendingOf(c, 6)];
        for (const f of files) await subject.repository.create(f, []);
        for (const status of ['done', 'failed'] as const) await subject.repository.create(aFile({ ingestionStatus: status }).ownedBy(c).createdAt(new Date(Date.UTC(2025, 0, 1))).build(), []);
        const ids = await claimIds('worker', 0, 7);
        const [a1, a2, a3, b5, b4, c6] = files.map((f) => f.id);
        expect(ids).toEqual([a1, b4, c6, a2, b5, a3, undefined]);
        // Claimed files are not claimed again while their claims last.
        expect(await subject.repository.claimNextIngestion('worker', at(30), 60_000)).toBeNull();
      });

      it('a claimed file is claimed again only once its claim runs out, renewed or not; two claims at once never get one file', async () => {
        const file = pendingOf(newId(), 1);
        await subject.repository.create(file, []);
        const first = await subject.repository.claimNextIngestion('one', at(0), 10_000);
        expect(first).toEqual({ file, attempt: 1 });
        expect(await subject.repository.claimNextIngestion('two', at(9), 10_000)).toBeNull();
        expect(await subject.repository.renewIngestionClaim(file.id, 'one', at(20))).toBe(true);
        expect(await subject.repository.renewIngestionClaim(file.id, 'two', at(40))).toBe(false);
        expect(await subject.repository.claimNextIngestion('two', at(15), 10_000)).toBeNull();
        // Past the renewed claim: its holder died; another takes it, and the first can renew it no more.
        expect(await subject.repository.claimNextIngestion('two', at(20), 10_000)).toEqual({ file, attempt: 2 });
        expect(await subject.repository.renewIngestionClaim(file.id, 'one', at(60))).toBe(false);

        const others = [pendingOf(newId(), 2), pendingOf(newId(), 3), pendingOf(newId(), 4)];
        for (const f of others) await subject.repository.create(f, []);
        const claims = await Promise.all(['x', 'y', 'z', 'w'].map((holder) => subject.repository.claimNextIngestion(holder, at(21), 10_000)));
        const got = claims.map((c) => c?.file.id).filter((id) => id !== undefined);
        expect(got.sort()).toEqual(others.map((f) => f.id).sort());
      });

      it('a released file is due again at its retry time; an attempt given back uncounted is not counted; the outcome frees the claim', async () => {
        const file = pendingOf(newId(), 1);
        await subject.repository.create(file, []);
        expect((await subject.repository.claimNextIngestion('one', at(0), 60_000))?.attempt).toBe(1);
        await subject.repository.releaseIngestionClaim(file.id, 'someone else', at(1), true);
        expect(await subject.repository.claimNextIngestion('one', at(2), 60_000)).toBeNull();
        await subject.repository.releaseIngestionClaim(file.id, 'one', at(10), true);
        expect(await subject.repository.claimNextIngestion('one', at(9), 60_000)).toBeNull();
        expect((await subject.repository.claimNextIngestion('one', at(10), 60_000))?.attempt).toBe(2);
        // An engine was unreachable: the attempt does not count.
        await subject.repository.releaseIngestionClaim(file.id, 'one', at(11), false);
        expect((await subject.repository.claimNextIngestion('one', at(11), 60_000))?.attempt).toBe(2);
        expect(await subject.repository.setIngestion(file.id, { status: 'done', error: null, cardCount: 1, collectionId: null }, at(12))).toBe(true);
        expect(await subject.repository.renewIngestionClaim(file.id, 'one', at(100))).toBe(false);
        expect(await subject.repository.claimNextIngestion('one', at(200), 60_000)).toBeNull();
        expect(await subject.repository.get(file.id)).toMatchObject({ ingestionStatus: 'done', cardCount: 1 });
      });

      it("frees a holder's claims (a restarted process of a fixed name), no other's; a deleted file is not claimed", async () => {
        const [mine, theirs, gone] = [pendingOf(newId(), 1), pendingOf(newId(), 2), pendingOf(newId(), 3)];
        for (const f of [mine, theirs, gone]) await subject.repository.create(f, []);
        expect(await claimIds('embedded', 0, 1)).toEqual([mine.id]);
        expect(await claimIds('replica', 1, 1)).toEqual([theirs.id]);
        expect(await subject.repository.delete(gone.id, [])).toBe(true);
        expect(await subject.repository.releaseIngestionClaimsOf('embedded')).toBe(1);
        expect(await subject.repository.releaseIngestionClaimsOf('nobody')).toBe(0);
        expect(await claimIds('embedded', 2, 2)).toEqual([mine.id, undefined]);
      });
    });
  });
}
