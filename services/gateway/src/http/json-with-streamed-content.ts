import type { Response } from 'express';
import { streamAnswer } from './stream-answer';
import { base64UrlChunks, base64UrlLength } from './base64url-chunks';

/** Thrown when the bytes streamed are not as many as announced; the answer has begun, so its connection is cut. */
export class ContentSizeMismatchError extends Error {
  constructor(announced: number, received: string) {
    super(`the file service announced ${announced} bytes and sent ${received}`);
    this.name = 'ContentSizeMismatchError';
  }
}

async function* exactly(byteCount: number, chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let received = 0;
  for await (const chunk of chunks) {
    received += chunk.byteLength;
    if (received > byteCount) throw new ContentSizeMismatchError(byteCount, `more (${received} so far)`);
    yield chunk;
  }
  if (received !== byteCount) throw new ContentSizeMismatchError(byteCount, String(received));
}

/** The two ends of the answer around the base64url text, and its head: status 200, type, Content-Length. */
function writeHead(res: Response, fields: Record<string, unknown>, name: string, byteCount: number): { opening: string; closing: string } {
  const members = JSON.stringify(fields);
  const opening = `${members === '{}' ? '{' : `${members.slice(0, -1)},`}${JSON.stringify(name)}:"`;
  const closing = '"}';
  res.status(200);
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', String(Buffer.byteLength(opening) + base64UrlLength(byteCount) + closing.length));
  return { opening, closing };
}

/**
 * Answers a HEAD with the head sendJsonWithBase64UrlMember gives the GET (200, its type and Content-Length), from
 * the content's size alone: nothing of the content is needed, so none is asked for.
 */
export function sendHeadOfJsonWithBase64UrlMember(res: Response, fields: Record<string, unknown>, name: string, byteCount: number): void {
  writeHead(res, fields, name, byteCount);
  res.end();
}

/**
 * Answers 200 with `fields` as a JSON object ending in the member `name` holding the base64url text of `content`,
 * written as the bytes arrive: the same bytes `res.json({ ...fields, [name]: bytes.toString('base64url') })` sends,
 * without the file, its text and the stringified answer (~6 times the file) in memory at once, and read no faster
 * than the client takes it. `byteCount` gives the Content-Length up front. Anything wrong once the answer has
 * begun (the stream fails, or sends another number of bytes than announced) can only cut the connection: the client
 * sees a broken answer, never valid JSON with other content. A HEAD request gets the head only.
 */
export async function sendJsonWithBase64UrlMember(res: Response, fields: Record<string, unknown>, name: string, byteCount: number, content: AsyncIterable<Uint8Array>): Promise<void> {
  const { opening, closing } = writeHead(res, fields, name, byteCount);
  if (res.req.method === 'HEAD') {
    res.end();
    return;
  }
  async function* body(): AsyncGenerator<string> {
    yield opening;
    yield* base64UrlChunks(exactly(byteCount, content));
    yield closing;
  }
  await streamAnswer(res, body());
}
