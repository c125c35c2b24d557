// What the gateway's byte scan of a JSON body (json-shape.ts jsonScanProblem: values, depth and duplicate keys,
// run before JSON.parse on every body) costs, beside the scan without the duplicate-key check (its loop before
// the check, copied below) and JSON.parse of the same bytes: on the largest body the gateway takes (an upload of
// MAX_FILE_BYTES = 20 MiB, base64url, with 99 tags), a card body, and an object of 9,999 keys (the most the value
// bound lets through). Median of many runs. Usage: pnpm exec tsx bench/json-scan-bench.ts
import { performance } from 'node:perf_hooks';
import { API_JSON_SHAPE, jsonScanProblem } from '../services/gateway/src/http/json-shape';

/** The scan as it was before it looked at keys: containers, separators and depth outside strings. */
function shapeOnly(bytes: Buffer, maxValues: number, maxDepth: number): string | null {
  let values = 0;
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte === 0x22) {
      let end = bytes.indexOf(0x22, i + 1);
      while (end !== -1) {
        let backslashes = 0;
        while (bytes[end - 1 - backslashes] === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
        end = bytes.indexOf(0x22, end + 1);
      }
      if (end === -1) return null;
      i = end;
    } else if (byte === 0x7b || byte === 0x5b) {
      if (++depth > maxDepth) return 'depth';
      if (++values > maxValues) return 'values';
    } else if (byte === 0x2c) {
      if (++values > maxValues) return 'values';
    } else if (byte === 0x7d || byte === 0x5d) depth--;
  }
  return null;
}

function median(run: () => unknown, rounds: number): number {
  for (let i = 0; i < Math.min(rounds, 5); i++) run();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(rounds / 2)]!;
}

const bodies: [string, Buffer, number][] = [
  ['upload of 20 MiB (99 tags)', Buffer.from(JSON.stringify({ base64_docx_file: Buffer.alloc(20 * 1024 * 1024, 7).toString('base64url'), file_name: 'a, [b].docx', file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', private: false, tag_set: Array.from({ length: 99 }, (_, i) => `tag "${i}", {x}`) })), 31],
  ['card (300 words, 100 tags)', Buffer.from(JSON.stringify({ card_html: `<p>${'word '.repeat(300)}</p>`, link: 'https://example.com/a', private: false, tag_set: Array.from({ length: 100 }, (_, i) => `t${i}`) })), 2001],
  ['object of 9,999 keys', Buffer.from(JSON.stringify(Object.fromEntries(Array.from({ length: 9_999 }, (_, i) => [`key-number-${i}-xxxxxxxx`, i])))), 101],
];
for (const [name, bytes, rounds] of bodies) {
  const scan = median(() => jsonScanProblem(bytes, API_JSON_SHAPE), rounds);
  const before = median(() => shapeOnly(bytes, API_JSON_SHAPE.maxValues, API_JSON_SHAPE.maxDepth), rounds);
  const parse = median(() => JSON.parse(bytes.toString('utf8')), Math.min(rounds, 31));
  console.log(`${name}, ${bytes.length} bytes: scan ${scan.toFixed(3)} ms (without the key check ${before.toFixed(3)} ms), JSON.parse ${parse.toFixed(3)} ms`);
}
