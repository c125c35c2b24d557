import { execFileSync } from 'node:child_process';

/** The pnpm that runs this suite (`pnpm test` sets npm_execpath), or one on PATH. */
export function hasPnpm(): boolean {
  if (process.env.npm_execpath && /pnpm/.test(process.env.npm_execpath)) return true;
  try {
    execFileSync('pnpm', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
