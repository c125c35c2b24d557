import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * What a test file leaves to be cleaned up when it ends: test/support/test-environment.js (every suite's jest
 * environment) kills the children still running, waits for them, then removes the directories — after the file's
 * last afterAll, whether its tests passed, failed or timed out. Outside jest (bench scripts starting a system) the
 * directories go when the process exits and children are the caller's to stop.
 */
interface Registry {
  dirs: string[];
  children: ChildProcess[];
}

function registry(): Registry | undefined {
  return (globalThis as { __cardsTestCleanup?: Registry }).__cardsTestCleanup;
}

const outsideJest: string[] = [];

/** Removes `path` (recursively) when the test file ends. */
export function removeWhenFileEnds(path: string): void {
  const own = registry();
  if (own) {
    own.dirs.push(path);
    return;
  }
  if (outsideJest.length === 0) process.once('exit', () => outsideJest.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  outsideJest.push(path);
}

/** A new directory `<tmpdir>/<prefix>XXXXXX`, removed when the test file ends: what tests use instead of mkdtempSync. */
export function testTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  removeWhenFileEnds(dir);
  return dir;
}

/** Kills `child` (SIGKILL) if it is still running when the test file ends, and waits for it before any directory goes. */
export function stopWhenFileEnds(child: ChildProcess): void {
  registry()?.children.push(child);
}
