import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { DataDirBackupError, backUpDataDir } from '../data-dir-backup';
import { errorMessage } from '../errors';
import type { CommandOutput } from './operator-command';

export const USAGE = `Usage: backup <target directory>

Copies the embedded DATA_DIR (SQLite stores, event log, file bytes, session secret, mail) into a new directory while
the services run. To restore: stop the services, put the copy in place of DATA_DIR, start them.
Reads DATA_DIR (./data by default) like the services; refuses a deployment on MongoDB, Kafka, S3 or Elasticsearch,
whose state is not in DATA_DIR (docs/deploy.md, "Backups and restore").`;

const ENGINE_VARIABLES = ['MONGO_URL', 'KAFKA_BROKERS', 'S3_ENDPOINT', 'ELASTICSEARCH_URL'] as const;

/** Runs `backup <target>`; returns the exit code (0 done, 1 failed, 2 bad usage). */
export async function runBackupCommand(argv: string[], env: Record<string, string | undefined>, _logger: Logger, io: CommandOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { help: { type: 'boolean', short: 'h', default: false } } });
  } catch (err) {
    io.err(`${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    io.out(USAGE);
    return 0;
  }
  const [target, ...extra] = parsed.positionals;
  if (!target || extra.length > 0) {
    io.err(USAGE);
    return 2;
  }
  const engines = ENGINE_VARIABLES.filter((name) => env[name]);
  if (engines.length > 0) {
    io.err(`${engines.join(', ')} set: that state is not in DATA_DIR; back it up with the engines' own tools (docs/deploy.md, "Backups and restore")`);
    return 1;
  }
  const dataDir = env.DATA_DIR || './data';
  const started = performance.now();
  // The copy holds what the data dir holds: as private as the services keep it (docs/security.md).
  const umask = process.umask(0o077);
  try {
    const result = await backUpDataDir(dataDir, target);
    const gone = result.gone.length > 0 ? `; removed before that moment, so not in the copy: ${result.gone.join(', ')}` : '';
    io.out(`backed up ${dataDir} to ${target} in ${((performance.now() - started) / 1000).toFixed(1)} s: ${result.stores.length} store(s) (${result.stores.join(', ')}) copied at one moment (writes waited ${result.writesHeldMs} ms), ${result.files} other file(s)${gone}`);
    return 0;
  } catch (err) {
    io.err(err instanceof DataDirBackupError ? err.message : `backup failed: ${errorMessage(err)}`);
    return 1;
  } finally {
    process.umask(umask);
  }
}
