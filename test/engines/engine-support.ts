import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FREE_PORT_HANDED_OUT_MS } from '@cards/platform';
import { stopWhenFileEnds } from '../support/cleanup';

/** Root of the engines layer; downloaded jars and compiled launchers live in CACHE_DIR (gitignored). */
export const ENGINES_DIR = resolve(__dirname);
export const CACHE_DIR = process.env.ENGINES_CACHE_DIR ? resolve(process.env.ENGINES_CACHE_DIR) : join(ENGINES_DIR, 'cache');

/** Thrown when an engine cannot run here; the message is the reason a suite prints when it skips. */
export class EngineUnavailableError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'EngineUnavailableError';
  }
}

/** `ENGINES=off` turns the whole layer off; the embedded adapters never need it. */
export function enginesDisabledReason(): string | undefined {
  const value = (process.env.ENGINES ?? '').toLowerCase();
  return ['off', '0', 'false', 'no'].includes(value) ? 'ENGINES=off' : undefined;
}

function requireTool(command: string, args: string[], name: string): void {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: 30_000 });
  if (result.error || result.status !== 0) throw new EngineUnavailableError(`${name} not found (${command} ${args.join(' ')} failed: ${result.error?.message ?? result.stderr.trim().split('\n')[0]})`);
}

/** Java 17+ is needed to run the engines, javac to compile their launchers. */
export function requireJava(): void {
  requireTool(process.env.JAVA ?? 'java', ['-version'], 'java');
  requireTool(process.env.JAVAC ?? 'javac', ['-version'], 'javac');
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Runs `prepare` once per cache key across processes: jest workers starting the same engine at the same
 * moment wait for the first one instead of downloading twice. A stamp file marks a finished preparation.
 */
function preparedOnce(dir: string, key: string, prepare: (dir: string) => void): void {
  const stamp = join(dir, '.prepared');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === key) return;
  mkdirSync(CACHE_DIR, { recursive: true });
  const lock = `${dir}.lock`;
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock older than 10 minutes belongs to a process that died mid-download.
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 10 * 60_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new EngineUnavailableError(`timed out waiting for ${lock}`);
      sleepSync(500);
    }
  }
  try {
    if (existsSync(stamp) && readFileSync(stamp, 'utf8') === key) return;
    const staging = `${dir}.staging-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    try {
      prepare(staging);
      writeFileSync(join(staging, '.prepared'), key);
      rmSync(dir, { recursive: true, force: true });
      renameSync(staging, dir);
    } catch (err) {
      rmSync(staging, { recursive: true, force: true });
      throw err;
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export interface JavaEngineBuild {
  /** Cache folder name, e.g. "kafka". */
  name: string;
  /** Folder under test/engines holding pom.xml and the launcher's .java sources. */
  sourceDir: string;
}

/**
 * Resolves the engine's jars from Maven Central with `mvn dependency:copy-dependencies` into
 * cache/<name>/libs (Maven's own ~/.m2 keeps the downloads too) and compiles its launcher into
 * cache/<name>/classes. Repeated calls reuse the cache until pom.xml or the sources change.
 * Returns the classpath.
 */
export function prepareJavaEngine(build: JavaEngineBuild): string {
  const disabled = enginesDisabledReason();
  if (disabled) throw new EngineUnavailableError(disabled);
  requireJava();
  const source = join(ENGINES_DIR, build.sourceDir);
  const sources = readdirSync(source).filter((f) => f.endsWith('.java')).sort();
  const hash = createHash('sha256');
  for (const f of ['pom.xml', ...sources]) hash.update(f).update(readFileSync(join(source, f)));
  const key = hash.digest('hex');
  const dir = join(CACHE_DIR, build.name);
  preparedOnce(dir, key, (staging) => {
    requireTool(process.env.MVN ?? 'mvn', ['-v'], 'maven');
    const mvn = spawnSync(
      process.env.MVN ?? 'mvn',
      ['-q', '-B', '-f', join(source, 'pom.xml'), 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${join(staging, 'libs')}`],
      { encoding: 'utf8', timeout: 8 * 60_000 },
    );
    if (mvn.status !== 0) throw new EngineUnavailableError(`maven could not resolve ${build.name} (is Maven Central reachable?): ${(mvn.stdout + mvn.stderr).trim().slice(-800)}`);
    const javac = spawnSync(
      process.env.JAVAC ?? 'javac',
      ['-d', join(staging, 'classes'), '-cp', `${join(staging, 'libs')}/*`, ...sources.map((f) => join(source, f))],
      { encoding: 'utf8', timeout: 120_000 },
    );
    if (javac.status !== 0) throw new Error(`javac failed for the ${build.name} launcher: ${javac.stderr}`);
  });
  return `${join(dir, 'classes')}:${join(dir, 'libs')}/*`;
}

/** The platform's port picker (freePort's), loaded alone by the child process freePortsSync runs. */
const PORT_PICKER = resolve(__dirname, '../../packages/platform/src/loopback-topology.ts');
/** Ports freePortsSync handed out in this process lately, which its next child must not pick again. */
const handedOutSync = new Map<number, number>();

/**
 * Loopback ports that were free a moment ago, picked as the platform's freePort picks them: below the kernel's
 * ephemeral range, since a port the kernel hands out (listen on 0) can be taken as the local port of an outgoing
 * connection before the engine binds it. Found in a child process so callers can stay synchronous; the ports this
 * process had from it within FREE_PORT_HANDED_OUT_MS are not given again.
 */
export function freePortsSync(count: number): number[] {
  const now = Date.now();
  for (const [port, at] of handedOutSync) if (now - at > FREE_PORT_HANDED_OUT_MS) handedOutSync.delete(port);
  const script = `require(${JSON.stringify(PORT_PICKER)}).freePorts(${count}, ${JSON.stringify([...handedOutSync.keys()])})
    .then((ports) => console.log(ports.join(',')), (err) => { console.error(err); process.exit(1); });`;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', cwd: resolve(__dirname, '../..') });
  if (result.status !== 0) throw new Error(`could not find free ports: ${result.error?.message ?? result.stderr}`);
  const ports = result.stdout.trim().split(',').map(Number);
  if (ports.length !== count || !ports.every((port) => Number.isInteger(port) && port > 0)) throw new Error(`could not find free ports: the picker printed ${JSON.stringify(result.stdout)}`);
  for (const port of ports) handedOutSync.set(port, now);
  return ports;
}

/** Blocks until something accepts TCP connections on 127.0.0.1:port, the process dies, or the timeout passes. */
export function waitForPortSync(port: number, pid: number, timeoutMs: number): void {
  const script = `
    const net = require('node:net');
    const deadline = Date.now() + ${timeoutMs};
    const alive = () => { try { process.kill(${pid}, 0); return true; } catch { return false; } };
    (function attempt() {
      if (!alive()) { console.error('exited'); process.exit(2); }
      if (Date.now() > deadline) { console.error('timeout'); process.exit(3); }
      const socket = net.connect(${port}, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); process.exit(0); });
      socket.once('error', () => setTimeout(attempt, 150));
    })();`;
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  if (result.status === 2) throw new Error(`engine process ${pid} exited before listening on ${port}`);
  if (result.status !== 0) throw new Error(`engine did not listen on ${port} within ${timeoutMs} ms`);
}

/**
 * Waits until a just-spawned engine listens on `port`; when it does not, kills it, removes its directory and
 * throws EngineUnavailableError with the engine's last log lines.
 */
export function awaitEngineListening(engine: EngineProcess, name: string, port: number, timeoutMs: number, dir: string): void {
  try {
    waitForPortSync(port, engine.child.pid ?? -1, timeoutMs);
  } catch (err) {
    engine.child.kill('SIGKILL');
    const log = engine.tail();
    rmSync(dir, { recursive: true, force: true });
    throw new EngineUnavailableError(`${name} did not start: ${(err as Error).message}\n${log}`);
  }
}

export interface EngineProcess {
  child: ChildProcess;
  logFile: string;
  /** The last lines the engine wrote, for error messages. */
  tail(lines?: number): string;
  /** Closes the engine's stdin (its watchdog then shuts it down cleanly), SIGKILL after graceMs. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Spawns a JVM whose launcher exits when its stdin closes, so an engine never outlives the test
 * process that started it (even when jest is killed). Output goes to a log file, not a pipe,
 * so a blocked event loop cannot stall the engine.
 */
export function spawnJava(
  classpath: string,
  mainClass: string,
  args: string[],
  opts: { logFile: string; heap: string; jvmArgs?: string[]; cwd?: string; asUnprivilegedUser?: boolean },
): EngineProcess {
  const fd = openSync(opts.logFile, 'a');
  const java = [process.env.JAVA ?? 'java', `-Xmx${opts.heap}`, '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xshare:auto', ...(opts.jvmArgs ?? []), '-cp', classpath, mainClass, ...args];
  // Engines that refuse to run as root (Elasticsearch) are started as nobody when the tests run as root.
  const dropRoot = opts.asUnprivilegedUser && process.getuid?.() === 0;
  const command = dropRoot ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', ...java] : java;
  const child = spawn(command[0]!, command.slice(1), {
    stdio: ['pipe', fd, fd],
    cwd: opts.cwd,
  });
  closeSync(fd);
  stopWhenFileEnds(child);
  child.on('error', () => undefined);
  child.stdin?.on('error', () => undefined);
  const exited = new Promise<void>((r) => {
    if (child.exitCode !== null || child.signalCode !== null) r();
    else child.once('exit', () => r());
  });
  const tail = (lines = 30) => {
    try {
      return readFileSync(opts.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  };
  return {
    child,
    logFile: opts.logFile,
    tail,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin?.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
