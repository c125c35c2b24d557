/**
 * Unit vectors of the indexed cards in one growable Float32Array, with a sign-bit code per vector.
 * Ranking is exact for small scopes; for large ones the Hamming distance between sign codes picks candidates
 * (a cheap first pass, ~40x less work than dot products) that are then ranked by their exact cosine.
 */
export class VectorMatrix {
  private data: Float32Array;
  private codes: Uint32Array;
  readonly words: number;

  constructor(readonly dimensions: number, capacity = 1024) {
    this.words = Math.ceil(dimensions / 32);
    this.data = new Float32Array(capacity * dimensions);
    this.codes = new Uint32Array(capacity * this.words);
  }

  ensureCapacity(slots: number): void {
    if (slots * this.dimensions <= this.data.length) return;
    let capacity = this.data.length / this.dimensions;
    while (capacity < slots) capacity *= 2;
    const data = new Float32Array(capacity * this.dimensions);
    data.set(this.data);
    const codes = new Uint32Array(capacity * this.words);
    codes.set(this.codes);
    this.data = data;
    this.codes = codes;
  }

  set(slot: number, vector: Float32Array): void {
    this.ensureCapacity(slot + 1);
    const d = this.dimensions;
    this.data.set(vector.subarray(0, d), slot * d);
    const w = slot * this.words;
    for (let i = 0; i < this.words; i++) this.codes[w + i] = 0;
    for (let j = 0; j < d; j++) if (vector[j]! > 0) this.codes[w + (j >>> 5)]! |= 1 << (j & 31);
  }

  dot(slot: number, query: Float32Array): number {
    const d = this.dimensions;
    const data = this.data;
    let s = 0;
    for (let j = 0, o = slot * d; j < d; j++, o++) s += data[o]! * query[j]!;
    return s;
  }

  /** Sign code of a query vector. */
  codeOf(query: Float32Array): Uint32Array {
    const code = new Uint32Array(this.words);
    for (let j = 0; j < this.dimensions; j++) if (query[j]! > 0) code[j >>> 5]! |= 1 << (j & 31);
    return code;
  }

  /** Hamming distance of each listed slot's code to `code`. */
  hammingAll(slots: Int32Array, code: Uint32Array): Uint16Array {
    // Uint16: codes of large models (1536 dimensions) have distances above 255.
    const out = new Uint16Array(slots.length);
    const codes = this.codes;
    const w = this.words;
    if (w === 4) {
      const [c0, c1, c2, c3] = code as unknown as [number, number, number, number];
      for (let i = 0; i < slots.length; i++) {
        const o = slots[i]! * 4;
        out[i] = popcount(codes[o]! ^ c0) + popcount(codes[o + 1]! ^ c1) + popcount(codes[o + 2]! ^ c2) + popcount(codes[o + 3]! ^ c3);
      }
      return out;
    }
    for (let i = 0; i < slots.length; i++) out[i] = this.hamming(slots[i]!, code);
    return out;
  }

  hamming(slot: number, code: Uint32Array): number {
    let distance = 0;
    const codes = this.codes;
    for (let i = 0, o = slot * this.words; i < this.words; i++, o++) distance += popcount(codes[o]! ^ code[i]!);
    return distance;
  }
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/**
 * The best `size` (score, slot) pairs seen, kept in a min-heap. Equal scores rank by `tieOrder` (negative when the
 * first slot ranks first; the index passes compareTies on its slots' cards), by slot when none is given.
 */
export class TopK {
  private readonly scores: Float64Array;
  private readonly slots: Int32Array;
  private count = 0;

  constructor(
    private readonly size: number,
    private readonly tieOrder: (slotA: number, slotB: number) => number = (a, b) => a - b,
  ) {
    this.scores = new Float64Array(Math.max(1, size));
    this.slots = new Int32Array(Math.max(1, size));
  }

  /** The score a new entry must beat once the heap is full. */
  get floor(): number {
    return this.count < this.size ? -Infinity : this.scores[0]!;
  }

  push(score: number, slot: number): void {
    if (this.size === 0) return;
    if (this.count < this.size) {
      let i = this.count++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.less(score, slot, this.scores[parent]!, this.slots[parent]!)) break;
        this.scores[i] = this.scores[parent]!;
        this.slots[i] = this.slots[parent]!;
        i = parent;
      }
      this.scores[i] = score;
      this.slots[i] = slot;
      return;
    }
    if (!this.less(this.scores[0]!, this.slots[0]!, score, slot)) return;
    let i = 0;
    while (true) {
      const left = 2 * i + 1;
      if (left >= this.count) break;
      const right = left + 1;
      const child = right < this.count && this.less(this.scores[right]!, this.slots[right]!, this.scores[left]!, this.slots[left]!) ? right : left;
      if (!this.less(this.scores[child]!, this.slots[child]!, score, slot)) break;
      this.scores[i] = this.scores[child]!;
      this.slots[i] = this.slots[child]!;
      i = child;
    }
    this.scores[i] = score;
    this.slots[i] = slot;
  }

  /** Best first; equal scores in tieOrder, so results are stable. */
  sorted(): { score: number; slot: number }[] {
    const out: { score: number; slot: number }[] = [];
    for (let i = 0; i < this.count; i++) out.push({ score: this.scores[i]!, slot: this.slots[i]! });
    return out.sort((a, b) => b.score - a.score || this.tieOrder(a.slot, b.slot));
  }

  /** Ordering of the heap: lower score is "less"; on equal scores the slot ranking later in tieOrder is less (loses). */
  private less(scoreA: number, slotA: number, scoreB: number, slotB: number): boolean {
    return scoreA < scoreB || (scoreA === scoreB && this.tieOrder(slotA, slotB) > 0);
  }
}
