// A data dir restored as another user (`cp -r` as root for a service that runs as another uid) failed the start with a
// bare EACCES on a lock file. The tests run as root, which every permission lets through: the refusal is injected (the
// fs call that meets it, or the stat and uid the message reads), the rest is real.
import fs from 'node:fs';
import { join } from 'node:path';
import { DataDirNotUsableError, explainDataDirAccess, type FileOwnership } from '../src/data-dir-ownership';
import { lockServiceDataDir } from '../src/data-dir-lock';
import { testTempDir } from '../../../test/support/cleanup';

const refused = (path: string, syscall = 'open', code = 'EACCES') => Object.assign(new Error(`${code}: permission denied, ${syscall} '${path}'`), { code, path, syscall });

describe('explainDataDirAccess', () => {
  const ownedBy = (owners: Record<string, { uid: number; mode: number }>, processUid = 1000): FileOwnership => ({
    stat: (path) => {
      const found = owners[path];
      if (!found) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      return found;
    },
    processUid: () => processUid,
  });

  it("names the file, its owner's uid, the service's uid and the chown that mends it", () => {
    const err = explainDataDirAccess(refused('/srv/data/cards/cards.db'), '/srv/data', ownedBy({ '/srv/data/cards/cards.db': { uid: 0, mode: 0o100600 } }));
    expect(err).toBeInstanceOf(DataDirNotUsableError);
    expect((err as Error).message).toBe(
      'cannot use /srv/data/cards/cards.db (EACCES): it belongs to uid 0, and this service runs as uid 1000. A data dir restored or copied as another user (cp -r as root) keeps that user\'s files: give them to the service\'s user (chown -R 1000 /srv/data) and start again',
    );
    expect(err).toMatchObject({ path: '/srv/data/cards/cards.db', ownerUid: 0, processUid: 1000 });
  });

  it('names the directory when the file could not be made in it (the lock file of a root-owned data dir)', () => {
    const err = explainDataDirAccess(refused('/srv/data/cards.lock.42.0a1b2c3d.tmp'), '/srv/data', ownedBy({ '/srv/data': { uid: 0, mode: 0o40700 } }));
    expect((err as Error).message).toContain('cannot use /srv/data/cards.lock.42.0a1b2c3d.tmp (its directory /srv/data) (EACCES): it belongs to uid 0, and this service runs as uid 1000');
    expect((err as Error).message).toContain('chown -R 1000 /srv/data');
  });

  it("tells a mode that shuts the owner out apart from another user's file", () => {
    const err = explainDataDirAccess(refused('/srv/data/cards/cards.db'), '/srv/data', ownedBy({ '/srv/data/cards/cards.db': { uid: 1000, mode: 0o100400 } }));
    expect((err as Error).message).toContain('it belongs to uid 1000, the uid this service runs as, but its mode 0400 shuts that user out');
    expect((err as Error).message).toContain('chmod -R u+rwX /srv/data');
  });

  it('gives any other error back as it is', () => {
    const full = Object.assign(new Error('ENOSPC'), { code: 'ENOSPC', path: '/srv/data/x' });
    expect(explainDataDirAccess(full, '/srv/data', ownedBy({}))).toBe(full);
  });
});

describe('lockServiceDataDir in a data dir of another user', () => {
  afterEach(() => jest.restoreAllMocks());

  it('fails the start naming the lock file, its directory owner, the uid the service runs as and the chown', () => {
    const dir = testTempDir('ownership-');
    const owner = fs.statSync(dir).uid;
    jest.spyOn(process, 'getuid').mockReturnValue(owner + 1000);
    const write = fs.writeFileSync;
    jest.spyOn(fs, 'writeFileSync').mockImplementation((path, ...rest) => {
      if (String(path).startsWith(join(dir, 'cards.lock.'))) throw refused(String(path));
      return write(path, ...rest);
    });
    expect(() => lockServiceDataDir(dir, 'cards')).toThrow(`it belongs to uid ${owner}, and this service runs as uid ${owner + 1000}`);
    expect(() => lockServiceDataDir(dir, 'cards')).toThrow(`(its directory ${dir})`);
    expect(() => lockServiceDataDir(dir, 'cards')).toThrow(`chown -R ${owner + 1000} ${dir}`);
  });

  it("fails the start naming a store file of another user, and leaves no lock behind", () => {
    const dir = testTempDir('ownership-');
    fs.mkdirSync(join(dir, 'cards'));
    fs.writeFileSync(join(dir, 'cards', 'cards.db'), '');
    const owner = fs.statSync(dir).uid;
    jest.spyOn(process, 'getuid').mockReturnValue(owner + 1000);
    const access = fs.accessSync;
    jest.spyOn(fs, 'accessSync').mockImplementation((path, mode) => {
      if (String(path) === join(dir, 'cards', 'cards.db')) throw refused(String(path), 'access');
      return access(path, mode);
    });
    expect(() => lockServiceDataDir(dir, 'cards')).toThrow(new RegExp(`cannot use ${join(dir, 'cards', 'cards.db')} \\(EACCES\\): it belongs to uid ${owner}, and this service runs as uid ${owner + 1000}.*chown -R ${owner + 1000} ${dir}`));
    expect(fs.existsSync(join(dir, 'cards.lock'))).toBe(false);
  });
});
