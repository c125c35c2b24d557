/**
 * The word vector cache's directory (by default in the shared tmpdir, for every user's search processes on a host) stays
 * readable by all once a process masks 077 for its data dir (keepDataDirPrivate): made 0700, another user's search could
 * neither read the cache nor write its own there, and would fail to start.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { makeSharedDirectory } from '../src/adapters/wink/word-vector-cache';
import { testTempDir } from '../../../test/support/cleanup';

const modeOf = (path: string) => statSync(path).mode & 0o777;

let umaskBefore: number;
beforeAll(() => {
  // What a process keeping a data dir has (keepDataDirPrivate).
  umaskBefore = process.umask(0o077);
});
afterAll(() => process.umask(umaskBefore));

describe('the word vector cache directory', () => {
  it('is made 0755, with the parents it needs, under a umask of 077', () => {
    const root = testTempDir('cards-word-vectors-');
    const directory = join(root, 'cache', 'card-library-word-vectors');
    makeSharedDirectory(directory);
    expect(modeOf(join(root, 'cache'))).toBe(0o755);
    expect(modeOf(directory)).toBe(0o755);
  });

  it('keeps the mode of a directory that exists', () => {
    const directory = join(testTempDir('cards-word-vectors-'), 'private-cache');
    mkdirSync(directory);
    chmodSync(directory, 0o700);
    makeSharedDirectory(directory);
    expect(modeOf(directory)).toBe(0o700);
  });
});
