import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DataDirLockedError, LOCK_HEARTBEAT_MS, LOCK_STALE_AFTER_MS, lockServiceDataDir } from '../src/data-dir-lock';
import { stopWhenFileEnds, testTempDir } from '../../../test/support/cleanup';

const root = join(__dirname, '../../..');

/** Another process (node itself, no tsx wrapper: its pid is the holder's) taking `service`'s lock in `dir`, once it printed its first line. */
function holder(dir: string, service: string): Promise<{ child: ChildProcess; line: string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fixtures/hold-data-dir-lock-process.ts'), dir, service], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  stopWhenFileEnds(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve({ child, line: out.split('\n')[0]!, exited });
    });
    child.once('exit', (code) => reject(new Error(`the holder exited (${code}) before it printed: ${out}`)));
  });
}

/** Linux: the kernel tells each process's start time (field 22 of /proc/<pid>/stat) and the boot it runs in. */
const onProc = existsSync('/proc/self/stat') && existsSync('/proc/sys/kernel/random/boot_id');
const startTicksOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
};
const bootId = () => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();

/** A live process that holds no lock (an unrelated process that took a dead holder's pid), until killed. */
async function unrelatedProcess(): Promise<{ pid: number; kill: () => Promise<void> }> {
  const child = spawn(process.execPath, ['-e', 'process.stdout.write("up\\n"); setInterval(() => undefined, 60_000)'], { stdio: ['ignore', 'pipe', 'inherit'] });
  stopWhenFileEnds(child);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise((resolve) => child.stdout!.once('data', resolve));
  return {
    pid: child.pid!,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * A process that has exited but is not reaped (a zombie): the short-lived child of a shell that then execs into sleep,
 * which never waits for it. Its pid still answers signal 0; /proc/<pid>/stat says Z. kill() ends the parent, which reaps it.
 */
async function zombieProcess(): Promise<{ pid: number; kill: () => Promise<void> }> {
  const parent = spawn('sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'inherit'] });
  stopWhenFileEnds(parent);
  const exited = new Promise((resolve) => parent.once('exit', resolve));
  const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()))));
  const stateOf = () => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  };
  for (let i = 0; i < 250 && stateOf() !== 'Z'; i++) await new Promise((r) => setTimeout(r, 20));
  expect(stateOf()).toBe('Z');
  return {
    pid,
    kill: async () => {
      parent.kill('SIGKILL');
      await exited;
    },
  };
}

/** The pid of a process that has ended and been reaped: no process has it (until the kernel gives it again). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

describe("a service's lock on its embedded stores in a data dir (one process per store)", () => {
  let dir: string;
  beforeEach(() => (dir = testTempDir('data-dir-lock-')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a second process while the first lives, naming the file and its pid; takes over the lock of one killed', async () => {
    const first = await holder(dir, 'files');
    expect(first.line).toBe('held');
    const path = join(dir, 'files.lock');
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({
      service: 'files',
      pid: first.child.pid,
      host: hostname(),
      startedAt: expect.any(String),
      ...(onProc ? { startTicks: startTicksOf(first.child.pid!), bootId: bootId() } : {}),
    });
    try {
      // Another process: refused, exit code 3.
      const second = await holder(dir, 'files');
      expect(await second.exited).toBe(3);
      expect(second.line).toContain(`refused another files process (pid ${first.child.pid} on this host`);
      expect(second.line).toContain(path);
      // This process too.
      expect(() => lockServiceDataDir(dir, 'files')).toThrow(DataDirLockedError);
      expect(() => lockServiceDataDir(dir, 'files')).toThrow(`pid ${first.child.pid}`);
      // Another service of the same data dir is not held back (each has its own lock; events.db takes none).
      const cards = lockServiceDataDir(dir, 'cards');
      cards.release();
    } finally {
      first.child.kill('SIGKILL');
      await first.exited;
    }
    // The holder was killed (no chance to remove its lock): a dead pid on this host, taken over.
    expect(existsSync(path)).toBe(true);
    const lock = lockServiceDataDir(dir, 'files');
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    lock.release();
    expect(existsSync(path)).toBe(false);
  }, 60_000);

  it('refuses a lock of another host (its process cannot be asked), saying how to take it back', () => {
    const path = join(dir, 'search.lock');
    writeFileSync(path, JSON.stringify({ service: 'search', pid: process.pid, host: 'elsewhere.example', startedAt: '2026-01-01T00:00:00.000Z' }));
    expect(() => lockServiceDataDir(dir, 'search')).toThrow(`another search process (pid ${process.pid} on host elsewhere.example, started 2026-01-01T00:00:00.000Z) holds ${path}`);
    expect(() => lockServiceDataDir(dir, 'search')).toThrow(`delete ${path} and start again`);
    expect(readFileSync(path, 'utf8')).toContain('elsewhere.example');
  });

  it('takes over a lock of another host whose holder stopped touching it (a pod replaced after a SIGKILL, under a new host name)', () => {
    const path = join(dir, 'cards.lock');
    writeFileSync(path, JSON.stringify({ service: 'cards', pid: 1, host: 'cards-7f9c-old-pod', startedAt: '2026-01-01T00:00:00.000Z' }));
    const silentSince = new Date(Date.now() - LOCK_STALE_AFTER_MS - 5_000);
    utimesSync(path, silentSince, silentSince);
    const lock = lockServiceDataDir(dir, 'cards');
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    lock.release();
    expect(existsSync(path)).toBe(false);
  });

  it('touches a held lock every heartbeat, so another host sees its holder alive', () => {
    jest.useFakeTimers({ doNotFake: ['Date'] });
    try {
      const path = join(dir, 'files.lock');
      const lock = lockServiceDataDir(dir, 'files');
      const long = new Date(Date.now() - 10 * LOCK_STALE_AFTER_MS);
      utimesSync(path, long, long);
      jest.advanceTimersByTime(LOCK_HEARTBEAT_MS);
      expect(Date.now() - statSync(path).mtimeMs).toBeLessThan(LOCK_STALE_AFTER_MS);
      lock.release();
    } finally {
      jest.useRealTimers();
    }
  });

  it("takes over a lock naming this host and this process's own pid that this process does not hold (a container restarted with the same pid)", () => {
    const path = join(dir, 'notifications.lock');
    writeFileSync(path, JSON.stringify({ service: 'notifications', pid: process.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z' }));
    const lock = lockServiceDataDir(dir, 'notifications');
    expect(JSON.parse(readFileSync(path, 'utf8')).startedAt).not.toBe('2026-01-01T00:00:00.000Z');
    lock.release();
    expect(existsSync(path)).toBe(false);
  });

  it('is held once per process: a start in the same process (the all-in-one, a test) shares it until the last release', () => {
    const path = join(dir, 'identity.lock');
    const a = lockServiceDataDir(dir, 'identity');
    const b = lockServiceDataDir(join(dir, '.'), 'identity');
    a.release();
    a.release();
    expect(existsSync(path)).toBe(true);
    b.release();
    expect(existsSync(path)).toBe(false);
  });

  it('a lock that cannot be written (a full disk) leaves no temporary file beside it', () => {
    // The module's own node:fs (jest hands test and module the same core module): the write of the lock's temporary
    // file makes the file and fails part way, as on ENOSPC.
    const fs = jest.requireActual<typeof import('node:fs')>('node:fs');
    const write = fs.writeFileSync;
    const full = jest.spyOn(fs, 'writeFileSync').mockImplementation((file, data, options) => {
      if (!String(file).endsWith('.tmp')) return write(file, data, options);
      write(file, String(data).slice(0, 10), options);
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    });
    try {
      expect(() => lockServiceDataDir(dir, 'files')).toThrow('ENOSPC');
    } finally {
      full.mockRestore();
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  it("sweeps at start what a dead start of the service left beside its lock (<service>.lock.<pid>.<hex>.tmp or .stale of a dead pid of this host), nothing else", async () => {
    const dead = await deadPid();
    const other = await unrelatedProcess();
    const oldTime = new Date(Date.now() - LOCK_STALE_AFTER_MS - 5_000);
    const content = (host: string, pid: number) => JSON.stringify({ service: 'files', pid, host, startedAt: '2026-01-01T00:00:00.000Z' });
    const leave = (name: string, text: string, old = false) => {
      writeFileSync(join(dir, name), text);
      if (old) utimesSync(join(dir, name), oldTime, oldTime);
    };
    try {
      leave(`files.lock.${dead}.0badc0de.tmp`, content(hostname(), dead));
      leave(`files.lock.${dead}.0000cafe.stale`, content(hostname(), dead));
      leave(`files.lock.${dead}.00c0ffee.tmp`, '{"servi', true); // cut by a full disk, long ago
      // Kept: a cut write not yet old (it may be another host's, being written), another host's, a live pid's, another service's.
      leave(`files.lock.${dead}.0000beef.tmp`, '{"servi');
      leave(`files.lock.${dead}.0000f00d.tmp`, content('another-host', dead));
      leave(`files.lock.${other.pid}.0000abcd.tmp`, content(hostname(), other.pid), true);
      leave(`cards.lock.${dead}.0000dead.tmp`, content(hostname(), dead), true);
      const lock = lockServiceDataDir(dir, 'files');
      expect(readdirSync(dir).sort()).toEqual(
        ['cards.lock.' + dead + '.0000dead.tmp', 'files.lock', `files.lock.${dead}.0000beef.tmp`, `files.lock.${dead}.0000f00d.tmp`, `files.lock.${other.pid}.0000abcd.tmp`].sort(),
      );
      lock.release();
    } finally {
      await other.kill();
    }
  });

  (onProc ? it : it.skip)('takes over a lock whose holder has ended but is not reaped (a zombie: its pid still answers signal 0, /proc says Z)', async () => {
    const zombie = await zombieProcess();
    try {
      const path = join(dir, 'notifications.lock');
      writeFileSync(path, JSON.stringify({ service: 'notifications', pid: zombie.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', startTicks: startTicksOf(zombie.pid), bootId: bootId() }));
      const lock = lockServiceDataDir(dir, 'notifications');
      expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ pid: process.pid });
      lock.release();
      // A lock of an earlier release (no start time) naming the zombie: taken over too.
      writeFileSync(path, JSON.stringify({ service: 'notifications', pid: zombie.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z' }));
      lockServiceDataDir(dir, 'notifications').release();
      expect(existsSync(path)).toBe(false);
    } finally {
      await zombie.kill();
    }
  });

  (onProc ? describe : describe.skip)("a live pid on this host (Linux: /proc tells the process's start time)", () => {
    let other: Awaited<ReturnType<typeof unrelatedProcess>>;
    beforeEach(async () => (other = await unrelatedProcess()));
    afterEach(() => other.kill());
    const lockOf = (service: string, fields: Record<string, unknown>) =>
      JSON.stringify({ service, pid: other.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', ...fields });

    it("takes over a lock whose pid now names a process started at another time (the dead holder's pid reused)", () => {
      const path = join(dir, 'files.lock');
      writeFileSync(path, lockOf('files', { startTicks: String(Number(startTicksOf(other.pid)) - 1), bootId: bootId() }));
      const lock = lockServiceDataDir(dir, 'files');
      expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ pid: process.pid, startTicks: startTicksOf(process.pid), bootId: bootId() });
      lock.release();
      expect(existsSync(path)).toBe(false);
    });

    it('takes over a lock written in another boot of this host, whatever its pid now names', () => {
      const path = join(dir, 'cards.lock');
      writeFileSync(path, lockOf('cards', { startTicks: startTicksOf(other.pid), bootId: '00000000-0000-0000-0000-000000000000' }));
      const lock = lockServiceDataDir(dir, 'cards');
      expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ pid: process.pid });
      lock.release();
    });

    it('refuses a lock naming that pid with its start time and boot (the holder itself)', () => {
      const path = join(dir, 'search.lock');
      writeFileSync(path, lockOf('search', { startTicks: startTicksOf(other.pid), bootId: bootId() }));
      expect(() => lockServiceDataDir(dir, 'search')).toThrow(`another search process (pid ${other.pid} on this host`);
      expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ pid: other.pid });
    });

    it("refuses a lock of an earlier release (no start time) naming a live pid, as before: it cannot tell it is another process", () => {
      const path = join(dir, 'identity.lock');
      writeFileSync(path, lockOf('identity', {}));
      expect(() => lockServiceDataDir(dir, 'identity')).toThrow(`another identity process (pid ${other.pid} on this host`);
      expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ pid: other.pid });
    });
  });
});
