// An update of a collection on the version the caller read (the gateway's If-Match on PUT /api/card_collection): checked
// and written in one step, and answering the version it wrote (the 204's ETag) for the next one.
import { changedSinceReadMessage } from '@cards/card-rules';
import { ChangedSinceReadError, NotFoundError } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { CollectionService } from '../src/application/collection-service';
import { sqliteCollectionServiceDeps } from './uninvolved-deps';

function setup() {
  const deps = sqliteCollectionServiceDeps(openCardsDatabase(':memory:'));
  const { collections } = deps;
  /** Another replica (or another request) on the same store. */
  const replica = () => new CollectionService(deps);
  return { service: new CollectionService(deps), replica, collections };
}

describe("a collection update on the version the caller read (ifUpdatedAt, the gateway's If-Match)", () => {
  it('is refused when the collection changed since and changes nothing; written on the current version, which it answers', async () => {
    const { service, collections } = setup();
    const made = await service.create('alice', 'Reading list', 'first words', false);
    const other = await service.update('alice', made.id, { name: 'Renamed in another tab' });
    const refused = service.update('alice', made.id, { description: 'late words', isPublic: true }, made.updatedAt);
    await expect(refused).rejects.toThrow(ChangedSinceReadError);
    // The text the gateway's own 412 says too (a tag naming no version), from the one shared place.
    await expect(refused).rejects.toThrow(changedSinceReadMessage('collection'));
    expect(await collections.findById(made.id)).toMatchObject({ name: 'Renamed in another tab', description: 'first words', isPublic: false, updatedAt: other });
    const next = await service.update('alice', made.id, { description: 'my words' }, other);
    expect(next.getTime()).toBeGreaterThan(other.getTime());
    // The next save on the version the last one answered, without reading the collection between.
    const last = await service.update('alice', made.id, { isPublic: true }, next);
    expect(await collections.findById(made.id)).toMatchObject({ name: 'Renamed in another tab', description: 'my words', isPublic: true, updatedAt: last });
  });

  it('gives every change a new version, even from a replica whose clock is behind the last change', async () => {
    const { service, collections } = setup();
    const ahead = new Date(Date.now() + 60_000);
    const made = { id: crypto.randomUUID(), authorId: 'alice', name: 'Saved ahead', description: '', isPublic: true, fileId: null, idempotencyKey: null, requestFingerprint: null, createdAt: ahead, updatedAt: ahead };
    await collections.insert(made, []);
    const first = await service.update('alice', made.id, { name: 'One' }, ahead);
    const second = await service.update('alice', made.id, { name: 'Two' });
    expect(first.getTime()).toBeGreaterThan(ahead.getTime());
    expect(second.getTime()).toBeGreaterThan(first.getTime());
    await expect(service.update('alice', made.id, { name: 'Three' }, first)).rejects.toThrow(ChangedSinceReadError);
    expect((await collections.findById(made.id))!.name).toBe('Two');
  });

  it('without If-Match, a save landing between its read and its write from a clock behind is kept and never shares its version', async () => {
    // Both saves read the one version (saved ahead of these clocks) and date their change right after it: the later
    // one wrote over the first unconditionally under the same version, so a client holding the first's ETag had its
    // If-Match taken for a collection it never saw. Now it is written on the version it read, read again and retried.
    const { service, replica, collections } = setup();
    const ahead = new Date(Date.now() + 60_000);
    const made = { id: crypto.randomUUID(), authorId: 'alice', name: 'Saved ahead', description: '', isPublic: false, fileId: null, idempotencyKey: null, requestFingerprint: null, createdAt: ahead, updatedAt: ahead };
    await collections.insert(made, []);
    const write = collections.update.bind(collections);
    let landing: Promise<Date> | undefined;
    jest.spyOn(collections, 'update').mockImplementation(async (...args) => {
      if (!landing) {
        landing = replica().update('alice', made.id, { name: 'Landed between' });
        await landing;
      }
      return write(...args);
    });
    const mine = await service.update('alice', made.id, { description: 'my words' });
    const landed = await landing!;
    expect(mine.getTime()).not.toBe(landed.getTime());
    expect(await collections.findById(made.id)).toMatchObject({ name: 'Landed between', description: 'my words', updatedAt: mine });
    // The landed save's ETag names a version the collection is no longer at.
    await expect(service.update('alice', made.id, { name: 'On the landed version' }, landed)).rejects.toThrow(ChangedSinceReadError);
    expect(await service.update('alice', made.id, { name: 'On mine' }, mine)).toBeInstanceOf(Date);
  });

  it('is refused when another save lands between its read and its write, which is kept', async () => {
    const { service, replica, collections } = setup();
    const made = await service.create('alice', 'Reading list', '', false);
    const write = collections.update.bind(collections);
    let landed = false;
    jest.spyOn(collections, 'update').mockImplementation(async (...args) => {
      if (!landed) {
        landed = true;
        await replica().update('alice', made.id, { name: 'Landed between' });
      }
      return write(...args);
    });
    await expect(service.update('alice', made.id, { name: 'Mine', isPublic: true }, made.updatedAt)).rejects.toThrow(ChangedSinceReadError);
    expect(await collections.findById(made.id)).toMatchObject({ name: 'Landed between', isPublic: false });
  });

  it("answers its own write's version, not that of a save landing right after it, which the next update on it does not replace", async () => {
    const { service, replica, collections } = setup();
    const made = await service.create('alice', 'Reading list', '', false);
    const write = collections.update.bind(collections);
    let landed = false;
    jest.spyOn(collections, 'update').mockImplementation(async (...args) => {
      const written = await write(...args);
      if (!landed) {
        landed = true;
        await replica().update('alice', made.id, { name: 'Landed after' });
      }
      return written;
    });
    const mine = await service.update('alice', made.id, { name: 'Mine' }, made.updatedAt);
    const now = (await collections.findById(made.id))!;
    expect(now.name).toBe('Landed after');
    expect(mine.getTime()).toBeLessThan(now.updatedAt.getTime());
    await expect(service.update('alice', made.id, { name: 'Mine again' }, mine)).rejects.toThrow(ChangedSinceReadError);
    expect((await collections.findById(made.id))!.name).toBe('Landed after');
  });

  it('is 404 for a collection deleted between its read and its write', async () => {
    const { service, replica, collections } = setup();
    const made = await service.create('alice', 'Reading list', '', false);
    const write = collections.update.bind(collections);
    jest.spyOn(collections, 'update').mockImplementationOnce(async (...args) => {
      await replica().delete('alice', made.id);
      return write(...args);
    });
    await expect(service.update('alice', made.id, { name: 'Mine' }, made.updatedAt)).rejects.toThrow(NotFoundError);
  });
});
