// The start command of the Dockerfile's runtime stage, and the same command runnable here (no container runtime):
// the image's global tsx install is this workspace's tsx, its `node` this process's node.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helm';

/** Where `npm install -g` puts packages in the official Node images (their prefix is /usr/local). */
export const IMAGE_GLOBAL_MODULES = '/usr/local/lib/node_modules';

/** The runtime stage's `CMD [...]` (exec form), as its argument list. */
export function imageCommand(dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')): string[] {
  const stages = dockerfile.split(/^(?=FROM\s)/m);
  const runtime = stages.find((stage) => /^FROM\s+\S+\s+AS\s+runtime\s/.test(stage)) ?? '';
  const cmd = /^CMD\s+(\[.*\])\s*$/m.exec(runtime);
  if (!cmd) throw new Error('the runtime stage of the Dockerfile has no exec-form CMD');
  return JSON.parse(cmd[1]!) as string[];
}

/** An image's command run here: `node` is this node, a path into the global modules one into the workspace's, `tsx` its CLI. */
export function localCommand(command: readonly string[]): { file: string; args: string[] } {
  const local = command.map((arg) => arg.split(IMAGE_GLOBAL_MODULES).join(join(ROOT, 'node_modules')));
  const [head, ...rest] = local;
  if (head === 'node') return { file: process.execPath, args: rest };
  if (head === 'tsx') return { file: process.execPath, args: [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), ...rest] };
  throw new Error(`unexpected image command ${command.join(' ')}`);
}
