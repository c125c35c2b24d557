import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { Logger } from 'pino';
import { loadConfig } from '../config';
import { errorMessage } from '../errors';
import { createDeadLetters } from '../events/create-dead-letters';
import type { DeadLetter, DeadLetterSelection } from '../events/dead-letters';
import type { CommandOutput } from './operator-command';

export const USAGE = `Usage: dead-letters <list|replay> [options]

  list     the dead letters of the event bus (embedded log under DATA_DIR, or Kafka when KAFKA_BROKERS is set)
  replay   hands dead letters back to the consumer group that failed them (a dry run unless --yes)

Options:
  --topic <topic>   only letters of this topic (e.g. files.file.v1)
  --group <group>   only letters of this consumer group (e.g. files-ingestion)
  --id <id>         only this letter, as listed (repeatable)
  --all             list: also letters already replayed
  --json            list: one JSON object per line
  --yes             replay: do it (without it, only shows what would be replayed)

Reads DATA_DIR, KAFKA_BROKERS, KAFKA_NAMESPACE and KAFKA_PARTITIONS like the services.`;

const EnvSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  KAFKA_BROKERS: z.string().optional(),
  KAFKA_NAMESPACE: z.string().optional(),
  KAFKA_PARTITIONS: z.string().optional(),
});


function row(letter: DeadLetter): string {
  return [
    letter.id,
    letter.state,
    letter.topic,
    letter.group || '-',
    letter.key,
    letter.eventId ?? '-',
    letter.failedAt.toISOString(),
    `attempts=${letter.attempts}`,
    JSON.stringify(letter.error),
  ].join('  ');
}

function json(letter: DeadLetter): string {
  const { payload, failedAt, ...rest } = letter;
  return JSON.stringify({ ...rest, failedAt: failedAt.toISOString(), payloadBytes: payload.byteLength });
}

function summary(letters: readonly DeadLetter[]): string {
  const count = (state: DeadLetter['state']) => letters.filter((l) => l.state === state).length;
  return `${letters.length} dead letter(s): ${count('dead')} dead, ${count('replay-requested')} replay requested, ${count('replayed')} replayed`;
}

/** Runs `dead-letters <list|replay>`; returns the exit code (0 done, 1 failed, 2 bad usage). */
export async function runDeadLettersCommand(argv: string[], env: Record<string, string | undefined>, logger: Logger, io: CommandOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        topic: { type: 'string' },
        group: { type: 'string' },
        id: { type: 'string', multiple: true },
        all: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        yes: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    io.err(`${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const command = positionals[0];
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length !== 1 || (command !== 'list' && command !== 'replay')) {
    io.err(USAGE);
    return 2;
  }
  const selection: DeadLetterSelection = { topic: values.topic, group: values.group, ids: values.id };
  let deadLetters;
  try {
    deadLetters = createDeadLetters(loadConfig(EnvSchema, env), logger);
  } catch (err) {
    io.err(errorMessage(err));
    return 1;
  }
  try {
    if (command === 'list') {
      const letters = (await deadLetters.list(selection)).filter((l) => values.all || l.state !== 'replayed');
      for (const letter of letters) io.out(values.json ? json(letter) : row(letter));
      if (!values.json) io.out(summary(letters));
      return 0;
    }
    if (!values.yes) {
      const candidates = (await deadLetters.list(selection)).filter((l) => l.state === 'dead');
      for (const letter of candidates) io.out(row(letter));
      io.out(`dry run: ${candidates.length} dead letter(s) would be handed back to the group that failed each; run again with --yes to replay them`);
      return 0;
    }
    const replayed = await deadLetters.replay(selection);
    for (const letter of replayed) io.out(row(letter));
    io.out(`${replayed.length} dead letter(s) handed back to the group that failed each; its running consumers deliver them (see list)`);
    return 0;
  } catch (err) {
    io.err(errorMessage(err));
    return 1;
  } finally {
    await deadLetters.close();
  }
}
