import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';

/**
 * Writes `chunks` as the answer's body, one at a time (highWaterMark 1: nothing is read ahead while the chunk before
 * is still waiting for the client). When the client goes away nothing is left to answer and nothing went wrong here:
 * the answer is ended as destroyed (closed already, so nothing more happens to the connection), because the pipeline
 * never destroys an answer that closed first, and a write's request slot waits for its answer's end or destruction
 * (request-admission.ts whenWorkEnds): a POST answered in pages whose client left mid-answer held its slot for good.
 */
export async function streamAnswer(res: Response, chunks: AsyncIterable<string>): Promise<void> {
  try {
    await pipeline(Readable.from(chunks, { highWaterMark: 1 }), res);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') throw err;
    res.destroy();
  }
}
