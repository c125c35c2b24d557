import { spawn, type ChildProcess } from 'node:child_process';
import { stopWhenFileEnds } from './cleanup';

export interface NodeProcess {
  child: ChildProcess;
  /** What it wrote to stdout and stderr, the newest part when it wrote a lot. */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/**
 * `node --import <loader> <entry>`: a service's TypeScript entry point run the way production runs it, with no
 * wrapper process (the tsx CLI runs a child of its own, which hides a SIGKILL), output collected for errors.
 */
export function spawnNodeEntry(entry: string, options: { cwd: string; env: NodeJS.ProcessEnv; loader?: string; keepChars?: number }): NodeProcess {
  const child = spawn(process.execPath, ['--import', options.loader ?? 'tsx', entry], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  // Killed when the test file ends if its afterAll did not stop it (a failed start, a timeout).
  stopWhenFileEnds(child);
  const keep = options.keepChars ?? 1_000_000;
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 2 * keep) output = output.slice(-keep);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | null>((r) => {
    if (child.exitCode !== null || child.signalCode !== null) r(child.exitCode);
    else child.once('exit', (code) => r(code));
  });
  return { child, output: () => output, exited };
}
