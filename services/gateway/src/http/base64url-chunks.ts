/** Length of the base64url text of `byteCount` bytes, without padding. */
export function base64UrlLength(byteCount: number): number {
  const rest = byteCount % 3;
  return Math.floor(byteCount / 3) * 4 + (rest === 0 ? 0 : rest + 1);
}

/**
 * The base64url text of a byte stream, a piece per chunk as the chunks arrive, joined equal to encoding all the bytes
 * at once (no padding). Each piece encodes whole 3-byte groups; the 1 or 2 bytes left over wait for the next chunk.
 */
export async function* base64UrlChunks(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  let carried = Buffer.alloc(0);
  for await (const chunk of chunks) {
    const bytes = carried.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([carried, chunk]);
    const whole = bytes.length - (bytes.length % 3);
    if (whole > 0) yield bytes.toString('base64url', 0, whole);
    carried = Buffer.from(bytes.subarray(whole));
  }
  if (carried.length > 0) yield carried.toString('base64url');
}
