import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { stopWhenFileEnds } from '../../../test/support/cleanup';

const root = join(__dirname, '../../..');

/** The fixture's process (node itself, so signals reach it alone), with a way to wait for a line it prints. */
function slowStopper() {
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fixtures/slow-stop-process.ts')], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  stopWhenFileEnds(child);
  let out = '';
  const waiters: { line: string; resolve: () => void }[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const w of waiters.filter((w) => out.split('\n').includes(w.line))) w.resolve();
  });
  const printed = (line: string) => new Promise<void>((resolve) => (out.split('\n').includes(line) ? resolve() : waiters.push({ line, resolve })));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  return { child, printed, exited, output: () => out };
}

describe('stopping on signals', () => {
  it('a repeated SIGTERM (a process group signalled through tsx) lets the stop in progress finish', async () => {
    const p = slowStopper();
    await p.printed('ready');
    p.child.kill('SIGTERM');
    await p.printed('stopping');
    p.child.kill('SIGTERM');
    // The second signal is handled (or not) before the line that lets the stop finish is read.
    await new Promise((r) => setImmediate(r));
    p.child.stdin!.end('go\n');
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(p.output()).toContain('stopped');
  });

  it('a second Ctrl-C exits at once, through the exit hooks (code 1, not killed by the signal)', async () => {
    const p = slowStopper();
    await p.printed('ready');
    p.child.kill('SIGINT');
    await p.printed('stopping');
    p.child.kill('SIGINT');
    expect(await p.exited).toEqual({ code: 1, signal: null });
    expect(p.output()).not.toContain('stopped');
  });
});
