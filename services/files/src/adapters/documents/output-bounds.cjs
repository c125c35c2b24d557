// CommonJS, beside parser-worker.mjs (which requires it), so the worker needs no TypeScript loader and the tests can
// require it too.
'use strict';

// A general guard on what is sent back (a copy outside the worker's heap limit, in the service's thread): a reading is at
// most OUTPUT_GROWTH times what the document's file holds, unpacked (a .docx's parts as its zip lists them: the HTML of
// its text, escaped, and its pictures in base64), plus OUTPUT_SLACK; else the reading made text the file does not hold
// (a number written out at length, a text placed again and again) and the document is refused rather than read so.
// A PDF's paragraphs are each bounded so (its streams are packed, its text may exceed its file, never one paragraph).
const OUTPUT_GROWTH = 8;
const OUTPUT_SLACK = 64 * 1024;

/** The sum of the entries' uncompressed sizes in a zip's central directory (the file's size when none is found). */
function unpackedSize(bytes) {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let end = buffer.length - 22; end >= Math.max(0, buffer.length - 22 - 0xffff); end--) {
    if (buffer.readUInt32LE(end) !== 0x06054b50) continue;
    const entries = buffer.readUInt16LE(end + 10);
    let at = buffer.readUInt32LE(end + 16);
    let total = 0;
    for (let i = 0; i < entries && at + 46 <= buffer.length && buffer.readUInt32LE(at) === 0x02014b50; i++) {
      total += buffer.readUInt32LE(at + 24);
      at += 46 + buffer.readUInt16LE(at + 28) + buffer.readUInt16LE(at + 30) + buffer.readUInt16LE(at + 32);
    }
    return Math.max(total, buffer.length);
  }
  return buffer.length;
}

/** The result, or an error when it is larger than the document's file can hold (see OUTPUT_GROWTH). */
function boundedOutput(op, bytes, result) {
  const limit = OUTPUT_GROWTH * (op === 'docx-html' ? unpackedSize(bytes) : bytes.byteLength) + OUTPUT_SLACK;
  const sizes = op === 'pdf-blocks' ? result.map((block) => Math.max(block.text?.length ?? 0, block.html?.length ?? 0)) : typeof result === 'string' ? [result.length] : [];
  const largest = sizes.reduce((most, size) => Math.max(most, size), 0);
  if (largest > limit) throw new Error(`the reading made more text than the file holds (${largest} characters from a file of ${bytes.byteLength} bytes)`);
  return result;
}

module.exports = { boundedOutput, unpackedSize, OUTPUT_GROWTH, OUTPUT_SLACK };
