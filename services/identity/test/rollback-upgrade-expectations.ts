import { AlreadyExistsError } from '@cards/platform';
import type { IdentityRepository } from '../src/domain/ports';

/**
 * A rollback to the version before the second username key and an upgrade again, as the SQLite and the MongoDB upgrade
 * tests run it on their store (identity-repository-sqlite.test.ts, identity-repository-mongo.test.ts): the users this
 * version stores, the renames the version before makes while rolled back (username, first key and updated time, no
 * second key), and what the store holds and answers after this version opens it again. One list for both stores, so
 * their expectations cannot drift apart.
 */

/** The users as this version stores them (both keys): id, username, day of January 2026 created. */
export const USERS_BEFORE_ROLLBACK: ReadonlyArray<readonly [id: string, username: string | null, createdDay: number]> = [
  ['u-a', 'Neuer', 1],
  ['u-b', 'xyz', 2],
  ['u-c', 'abc', 3],
  ['u-d', null, 4],
  ['u-e', 'gone', 5],
];

/** The renames while rolled back, in order. */
export const RENAMES_WHILE_ROLLED_BACK: ReadonlyArray<readonly [id: string, username: string | null]> = [
  ['u-a', 'Bob'], // leaves "neuer"
  ['u-b', 'Neuer'], // takes it as its first key only
  ['u-c', 'Iab'], // capital i: its second key is "lab"
  ['u-e', null], // gives its name up
];

/** Part of the second keys before this version opens the store again: as they were before the rollback. */
export const SECOND_KEYS_BEFORE_REOPEN = { 'u-a': 'neuer', 'u-b': 'xyz', 'u-c': 'abc', 'u-e': 'gone' };

/** Every user's second key after this version opened the store again: its name's, none without a name. */
export const SECOND_KEYS_AFTER_REOPEN = { 'u-a': 'bob', 'u-b': 'neuer', 'u-c': 'lab', 'u-d': null, 'u-e': null };

/** What the store answers after this version opened it again. */
export async function expectNamesAfterReopen(repository: IdentityRepository): Promise<void> {
  const later = new Date('2026-02-01T00:00:00.000Z');
  // The owner's unchanged save of the name set while rolled back.
  expect(await repository.updateProfile('u-b', { username: 'Neuer', website: 'https://b.example' }, 'none', later)).toMatchObject({ username: 'Neuer' });
  expect(await repository.updateProfile('u-a', { username: 'Bob' }, 'none', later)).toMatchObject({ username: 'Bob' });
  // A look-alike of a name set while rolled back is taken; names left then are free.
  await expect(repository.updateProfile('u-d', { username: 'lab' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
  expect(await repository.updateProfile('u-d', { username: 'gone' }, 'none', later)).toMatchObject({ username: 'gone' });
  expect(await repository.updateProfile('u-d', { username: 'xyz' }, 'none', later)).toMatchObject({ username: 'xyz' });
}
