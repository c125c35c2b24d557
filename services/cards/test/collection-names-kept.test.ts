// A collection name stored before the rule of names refused invisible characters (70b168a) stays savable: the web
// edit form always sends the name, so a description change sends the stored name back, and refusing it made the user
// retype a name whose bad character they cannot see. Any other name follows today's rule.
import { InvalidArgumentError } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import type { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { CollectionService } from '../src/application/collection-service';
import { sqliteCollectionServiceDeps } from './uninvolved-deps';

function setup() {
  const deps = sqliteCollectionServiceDeps(openCardsDatabase(':memory:'));
  return { service: new CollectionService(deps), collections: deps.collections };
}

/** A collection as the release before 70b168a stored it: its name holds an invisible character. */
async function storedBefore(collections: SqliteCollectionRepository, name: string) {
  const now = new Date();
  const collection = { id: crypto.randomUUID(), authorId: 'alice', name, description: 'old', isPublic: true, fileId: null, idempotencyKey: null, requestFingerprint: null, createdAt: now, updatedAt: now };
  await collections.insert(collection, []);
  return collection;
}

describe('a collection name stored before the rule of names', () => {
  it.each([
    ['a zero-width space', 'Reading\u200Blist'],
    ['a soft hyphen', 'Bird\u00ADwatching'],
  ])('holding %s is kept when sent back exactly as stored, with another field changed', async (_what, name) => {
    const { service, collections } = setup();
    const collection = await storedBefore(collections, name);
    await service.update('alice', collection.id, { name, description: 'New description' });
    // Spaces around it are trimmed, as every name is before it is stored.
    await service.update('alice', collection.id, { name: ` ${name} `, description: 'Newer description', isPublic: false });
    expect(await service.get(collection.id, 'alice')).toMatchObject({ name, description: 'Newer description', isPublic: false });
  });

  it('is judged by the rule when it changes, and a new name with an invisible character is refused as before', async () => {
    const { service, collections } = setup();
    const collection = await storedBefore(collections, 'Reading\u200Blist');
    const refused = service.update('alice', collection.id, { name: 'Reading\u200Blists', description: 'x' });
    await expect(refused).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(refused).rejects.toThrow('name: must not contain the invisible character U+200B (zero width space)');
    // Only exact equality keeps it: the same name in another case, or with another invisible character, is a new name.
    await expect(service.update('alice', collection.id, { name: 'reading\u200Blist' })).rejects.toThrow('U+200B');
    await expect(service.update('alice', collection.id, { name: 'Reading\u2060list' })).rejects.toThrow('U+2060');
    expect(await service.get(collection.id, 'alice')).toMatchObject({ name: 'Reading\u200Blist', description: 'old' });
    await service.update('alice', collection.id, { name: 'Reading list' });
    expect(await service.get(collection.id, 'alice')).toMatchObject({ name: 'Reading list' });
    await expect(service.create('alice', 'Bird\u00ADwatching', '', true)).rejects.toThrow('name: must not contain the invisible character U+00AD (soft hyphen)');
  });
});
