import { randomBytes } from 'node:crypto';
import { ClientError, Status } from 'nice-grpc';
import type { files } from '@cards/proto';
import type { GatewayClients } from '../src/clients';
import { FileChangedDuringReadError, openResumableFileRead } from '../src/routes/resumable-file-read';

const PATH = '/files.v1.FileService/ReadFile';
const bytes = randomBytes(100_000);
const header = (size = bytes.length) => ({ id: 'f', size }) as files.File;

/** What one ReadFile call does, given the offset asked and whether it resumes a read begun: messages, then an optional error. */
type Call = (offset: number, resume: boolean) => { messages: files.ReadFileResponse[]; error?: Error };

/** A files client whose n-th ReadFile call follows calls[n] (the last one repeats); records each call's offset. */
function fakeFiles(calls: Call[]): { client: GatewayClients['files']; offsets: number[] } {
  const offsets: number[] = [];
  const client = {
    readFile(request: files.GetFileRequest) {
      const offset = request.offset ?? 0;
      const { messages, error } = calls[Math.min(offsets.length, calls.length - 1)]!(offset, request.resume ?? false);
      offsets.push(offset);
      return (async function* () {
        yield* messages;
        if (error) throw error;
      })();
    },
  };
  return { client: client as unknown as GatewayClients['files'], offsets };
}

const chunks = (from: number, count: number, size = 10_000): files.ReadFileResponse[] =>
  Array.from({ length: count }, (_, i) => bytes.subarray(from + i * size, from + (i + 1) * size))
    .filter((c) => c.length > 0)
    .map((value) => ({ part: { $case: 'chunk', value } }));
const withHeader = (messages: files.ReadFileResponse[], size?: number): files.ReadFileResponse[] => [{ part: { $case: 'file', value: header(size) } }, ...messages];
const cut = (code: Status) => new ClientError(PATH, code, 'ended');

async function readAll(content: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const part of content) parts.push(part);
  return Buffer.concat(parts);
}

describe('openResumableFileRead', () => {
  it.each([
    ['DEADLINE_EXCEEDED', Status.DEADLINE_EXCEEDED],
    ['UNAVAILABLE', Status.UNAVAILABLE],
    ['CANCELLED', Status.CANCELLED],
  ])('goes on from the byte reached when a call ends %s, every byte once', async (_name, code) => {
    // Each call gives 3 chunks from its offset, then ends early.
    const { client, offsets } = fakeFiles([(offset) => ({ messages: withHeader(chunks(offset, 3)), error: cut(code) })]);
    const read = (await openResumableFileRead(client, { fileId: 'f' }, 1000))!;
    expect((await readAll(read.content)).equals(bytes)).toBe(true);
    expect(offsets).toEqual([0, 30_000, 60_000, 90_000]);
  });

  it('fails the content with the service\'s answer when the file is gone or private on the next call, and with FileChangedDuringReadError when its size changed', async () => {
    const gone = fakeFiles([() => ({ messages: withHeader(chunks(0, 2)), error: cut(Status.DEADLINE_EXCEEDED) }), () => ({ messages: [], error: cut(Status.NOT_FOUND) })]);
    await expect(readAll((await openResumableFileRead(gone.client, { fileId: 'f' }, 1000))!.content)).rejects.toMatchObject({ code: Status.NOT_FOUND });
    const resized = fakeFiles([() => ({ messages: withHeader(chunks(0, 2)), error: cut(Status.UNAVAILABLE) }), (offset) => ({ messages: withHeader(chunks(offset, 20), 5) })]);
    await expect(readAll((await openResumableFileRead(resized.client, { fileId: 'f' }, 1000))!.content)).rejects.toBeInstanceOf(FileChangedDuringReadError);
  });

  it('reads a file deleted after the read began whole, also when the first call was cut before its first chunk', async () => {
    // The file is deleted once the first call has sent its header: files sends its bytes only to a call resuming a read.
    const deletedAfterHeader: Call = (offset, resume) => (resume ? { messages: withHeader(chunks(offset, 20)) } : { messages: [], error: cut(Status.NOT_FOUND) });
    for (const firstCall of [() => ({ messages: withHeader([]), error: cut(Status.UNAVAILABLE) }), () => ({ messages: withHeader(chunks(0, 2)), error: cut(Status.UNAVAILABLE) })]) {
      const { client, offsets } = fakeFiles([firstCall, deletedAfterHeader]);
      const read = (await openResumableFileRead(client, { fileId: 'f' }, 1000))!;
      // Before, a call from byte 0 did not ask to resume: the read cut before a byte failed NOT_FOUND after its 200.
      expect((await readAll(read.content)).equals(bytes)).toBe(true);
      expect(offsets.length).toBe(2);
    }
  });

  it('gives up after three calls in a row that end early without a byte, and never calls again after another failure', async () => {
    const silent = fakeFiles([() => ({ messages: withHeader(chunks(0, 1)), error: cut(Status.UNAVAILABLE) }), () => ({ messages: [], error: cut(Status.UNAVAILABLE) })]);
    await expect(readAll((await openResumableFileRead(silent.client, { fileId: 'f' }, 1000))!.content)).rejects.toMatchObject({ code: Status.UNAVAILABLE });
    expect(silent.offsets).toEqual([0, 10_000, 10_000, 10_000]);
    const broken = fakeFiles([() => ({ messages: withHeader(chunks(0, 1)), error: cut(Status.INTERNAL) })]);
    await expect(readAll((await openResumableFileRead(broken.client, { fileId: 'f' }, 1000))!.content)).rejects.toMatchObject({ code: Status.INTERNAL });
    expect(broken.offsets).toEqual([0]);
  });

  it('answers undefined without a header, and the first call\'s own failure (NOT_FOUND) before any content', async () => {
    expect(await openResumableFileRead(fakeFiles([() => ({ messages: chunks(0, 1) })]).client, { fileId: 'f' }, 1000)).toBeUndefined();
    await expect(openResumableFileRead(fakeFiles([() => ({ messages: [], error: cut(Status.NOT_FOUND) })]).client, { fileId: 'f' }, 1000)).rejects.toMatchObject({ code: Status.NOT_FOUND });
  });
});
