// How the images start (no container runtime here): the Dockerfile's CMD, run here with this workspace's tsx in place of
// the image's global one, is one node process that gets SIGTERM itself and drains, with a busy event loop too; the
// cards service's HTML workers find tsx from that process's execArgv.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tsxCjsApiPath } from '../../services/cards/src/adapters/worker-threads/worker-card-html-cleaner';
import { ROOT } from './helm';
import { IMAGE_GLOBAL_MODULES, imageCommand, localCommand } from './image-command';
import { stopWhenFileEnds, testTempDir } from '../support/cleanup';

/** A service that blocks its event loop 150 ms at a time (a 20 MiB upload blocks the gateway's ~130 ms) and drains on SIGTERM. */
const BUSY_SERVICE = `
const blockMs: number = 150;
process.on('SIGTERM', () => {
  console.log('draining');
  setTimeout(() => { console.log('drained'); process.exit(0); }, 50);
});
setInterval(() => { const end = Date.now() + blockMs; while (Date.now() < end); }, 10);
console.log('ready');
`;

describe('the image start command', () => {
  const dir = testTempDir('image-start-');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is node itself with tsx's loader from the image's global install, tsx at the workspace's version", () => {
    const command = imageCommand();
    expect(command).toEqual(['node', '--import', `${IMAGE_GLOBAL_MODULES}/tsx/dist/loader.mjs`, 'src/main.ts']);
    // The loader is what `node --import tsx` loads (tsx's main export), of the tsx the image installs.
    const tsx = JSON.parse(readFileSync(join(ROOT, 'node_modules/tsx/package.json'), 'utf8')) as { version: string; exports: Record<string, unknown> };
    expect(`./${command[2]!.slice(`${IMAGE_GLOBAL_MODULES}/tsx/`.length)}`).toBe(tsx.exports['.']);
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toContain(`ARG TSX_VERSION=${tsx.version}\n`);
  });

  it('gets SIGTERM itself and drains, its event loop busy 150 ms at a time (no wrapper that SIGKILLs it)', async () => {
    const app = join(dir, 'app');
    mkdirSync(join(app, 'src'), { recursive: true });
    writeFileSync(join(app, 'src/main.ts'), BUSY_SERVICE);
    const { file, args } = localCommand(imageCommand());
    const child = spawn(file, args, { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
    stopWhenFileEnds(child);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const deadline = Date.now() + 20_000;
    while (!output.includes('ready') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const exit = await exited;
    clearTimeout(timer);
    expect({ exit, output }).toEqual({ exit: { code: 0, signal: null }, output: 'ready\ndraining\ndrained\n' });
  }, 30_000);

  it("lets the cards service's HTML workers find tsx's CommonJS API from the image's execArgv", () => {
    // The image's /usr/local/lib/node_modules/tsx, here a link to the workspace's tsx under a directory of its own.
    const prefix = join(dir, 'image');
    const globalModules = join(prefix, IMAGE_GLOBAL_MODULES);
    mkdirSync(globalModules, { recursive: true });
    symlinkSync(join(ROOT, 'node_modules/tsx'), join(globalModules, 'tsx'));
    const [node, ...args] = imageCommand().map((arg) => arg.split(IMAGE_GLOBAL_MODULES).join(globalModules));
    expect(node).toBe('node');
    const execArgv = args.slice(0, args.indexOf('src/main.ts'));
    // Started from /app, where the pruned tree has no tsx: found only beside the loader the process was started with.
    expect(tsxCjsApiPath(execArgv, ['/'])).toBe(realpathSync(require.resolve('tsx/cjs/api')));
  });
});
