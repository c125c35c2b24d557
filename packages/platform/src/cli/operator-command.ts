import { createLogger, logLevelOf, type Logger } from '../logger';

/** Where an operator's command writes: its output (stdout) and its complaints (stderr). */
export interface CommandOutput {
  out(line: string): void;
  err(line: string): void;
}

/** An operator's command: its arguments and environment in, an exit code out (0 done, 1 failed, 2 bad usage). */
export type OperatorCommand = (argv: string[], env: Record<string, string | undefined>, logger: Logger, io: CommandOutput) => Promise<number>;

/**
 * Runs `command` as the script's whole work, with this process's arguments and environment. Log lines go to stderr,
 * so stdout holds only the command's output; what it answers, or 1 when it throws, is the exit code.
 */
export function runOperatorCommand(name: string, command: OperatorCommand): void {
  const logger = createLogger(name, process.env.LOG_LEVEL?.trim() ? logLevelOf() : 'warn', process.stderr);
  command(process.argv.slice(2), process.env, logger, {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  }).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
