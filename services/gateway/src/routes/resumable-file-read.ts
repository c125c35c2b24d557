import { setTimeout as sleep } from 'node:timers/promises';
import { ClientError, Status } from 'nice-grpc';
import type { files } from '@cards/proto';
import type { GatewayClients } from '../clients';

/**
 * How a ReadFile call ends early without saying anything about the file: its own deadline, or its connection cut
 * (a GOAWAY at the connection's max age ends it CANCELLED or UNAVAILABLE after the grace, a pod going away).
 */
const ENDED_EARLY = new Set<Status>([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED, Status.CANCELLED]);
/** Calls in a row that may end early without a byte before the read gives up (the files service is not answering). */
const CALLS_WITHOUT_PROGRESS = 3;

/** The file read again (to go on after a call ended early) is not the one the answer began with. */
export class FileChangedDuringReadError extends Error {
  constructor(fileId: string, detail: string) {
    super(`file ${fileId} changed while it was read: ${detail}`);
    this.name = 'FileChangedDuringReadError';
  }
}

export interface FileRead {
  file: files.File;
  /** The file's bytes from the first on, across as many ReadFile calls as it takes. */
  content: AsyncIterable<Uint8Array>;
  /** Ends the call under way, whether the content was read, partly read or not at all. */
  close(): Promise<void>;
}

type Messages = AsyncIterator<files.ReadFileResponse>;

function endedEarly(err: unknown): boolean {
  return err instanceof ClientError && ENDED_EARLY.has(err.code);
}

async function headerOf(messages: Messages): Promise<files.File | undefined> {
  const first = await messages.next();
  return !first.done && first.value.part?.$case === 'file' ? first.value.part.value : undefined;
}

async function closeQuietly(messages: Messages): Promise<void> {
  // A call that ran out of time reports it again when closed; it has already been dealt with.
  await messages.return?.().catch(() => undefined);
}

/**
 * Reads a file with ReadFile calls of at most `callMs` each. The header (visibility checked, so a missing or someone
 * else's private file fails here with the service's status) comes from the first call. When a call ends by its
 * deadline or a cut connection while bytes are still wanted, the next one starts from the byte reached, so a reader of
 * any speed gets every byte once, in order; each call must stay within the services' connection-age grace. A file
 * deleted or made private between two calls is still read whole (`resume`: files sends the bytes while it holds them,
 * a deleted file's for FILE_DELETED_BYTES_GRACE_MS); one whose bytes are gone, or changed in size, fails the content
 * (NOT_FOUND, FileChangedDuringReadError).
 * Resolves undefined when the service sent no header.
 */
export async function openResumableFileRead(client: GatewayClients['files'], request: { fileId: string; callerId?: string }, callMs: number): Promise<FileRead | undefined> {
  // A call going on with the read (every call after the first, also one from byte 0 when the first was cut before its
  // first chunk) asks files to resume it: a file deleted or made private since the read began is still sent whole while
  // files holds its bytes, instead of the answer being cut part way (or, cut before a byte, failing after its 200).
  const call = (offset: number, resume: boolean): Messages => client.readFile({ ...request, offset, resume }, { deadline: callMs })[Symbol.asyncIterator]();
  let current: Messages | undefined = call(0, false);
  let file: files.File | undefined;
  try {
    file = await headerOf(current);
  } finally {
    if (!file) await closeQuietly(current);
  }
  if (!file) return undefined;
  const { id, size } = { id: file.id, size: Number(file.size) };

  async function* content(): AsyncGenerator<Uint8Array> {
    let offset = 0;
    let callsWithoutProgress = 0;
    try {
      for (;;) {
        let progressed = false;
        try {
          if (!current) {
            current = call(offset, true);
            const again = await headerOf(current);
            if (!again || again.id !== id || Number(again.size) !== size) throw new FileChangedDuringReadError(id, again ? `its size is now ${again.size}, was ${size}` : 'no header');
          }
          for (let message = await current.next(); !message.done; message = await current.next()) {
            if (message.value.part?.$case !== 'chunk' || message.value.part.value.byteLength === 0) continue;
            offset += message.value.part.value.byteLength;
            progressed = true;
            yield message.value.part.value;
          }
          return;
        } catch (err) {
          if (!endedEarly(err)) throw err;
          if (offset >= size) return;
          callsWithoutProgress = progressed ? 0 : callsWithoutProgress + 1;
          if (callsWithoutProgress >= CALLS_WITHOUT_PROGRESS) throw err;
          await closeQuietly(current!);
          current = undefined;
          if (callsWithoutProgress > 0) await sleep(100 * 2 ** callsWithoutProgress);
        }
      }
    } finally {
      if (current) await closeQuietly(current);
      current = undefined;
    }
  }
  const bytes = content();
  return {
    file,
    content: bytes,
    async close() {
      await bytes.return(undefined);
      // Never started (an answer that failed before its body): the first call is still open.
      if (current) await closeQuietly(current);
      current = undefined;
    },
  };
}
