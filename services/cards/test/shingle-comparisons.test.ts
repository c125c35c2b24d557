import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { hasUnspacedScript, UNSPACED_SCRIPT_CLASS } from '@cards/card-rules';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { CardService } from '../src/application/card-service';
import { fingerprintOf, isNearCopy, jaccard, NEAR_COPY_JACCARD, normalizeContent, ShingleComparison, shinglesOf, SKETCH_SIZE } from '../src/domain/rules';
import { sqliteCardServiceDeps } from './uninvolved-deps';

// The shingles and sketch as they were computed before shinglesOf took the spans of the normalized text (kept here
// verbatim): every duplicate decision and every stored sketch rests on them, so the faster one must give the same sets.
const SHINGLE_TOKEN = new RegExp(`[${UNSPACED_SCRIPT_CLASS}]|[^${UNSPACED_SCRIPT_CLASS}]+`, 'gu');
function shinglesBefore(content: string): Set<string> {
  const words = normalizeContent(content)
    .split(' ')
    .flatMap((w) => (hasUnspacedScript(w) ? (w.match(SHINGLE_TOKEN) ?? []) : w.length > 0 ? [w] : []));
  const out = new Set<string>();
  if (words.length < 3) {
    for (const w of words) out.add(w);
    return out;
  }
  for (let i = 0; i + 3 <= words.length; i++) out.add(words.slice(i, i + 3).join(' '));
  return out;
}
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
function fingerprintBefore(content: string) {
  const contentHash = createHash('sha256').update(normalizeContent(content)).digest('hex');
  const hashes = [...new Set([...shinglesBefore(content)].map(fnv1a))].sort((a, b) => a - b);
  return { contentHash, sketch: hashes.slice(0, SKETCH_SIZE) };
}

/** Pieces of card text: spaced and unspaced scripts side by side, what normalization folds or drops, and edges. */
const PIECES = [
  'word', 'Word', 'WORDS', 'more', 'text', 'a', 'b', 'x1', '42', '٣٤', '１２', 'ﬁne', 'Straße', 'İstanbul', 'ǅ', 'é', 'e\u0301', 'naïve',
  'Ελληνικά', 'русский', 'עברית', 'العربية', 'हिन्दी', '한국어', '日本語', '漢字', 'ひらがな', 'カタカナ', 'ｶﾀｶﾅ', 'ภาษาไทย', 'ພາສາລາວ', 'ខ្មែរ', 'မြန်မာ',
  '\u{1F600}', '\u{20000}', '\uD800', ' ', '  ', '\n', '\t', '\u00a0', '\u3000', ',', '.', '!', '-', "'", '’', '_', '&', '\u200b', '\u00ad', '',
];
const text = fc.array(fc.constantFrom(...PIECES), { maxLength: 80 }).map((pieces) => pieces.join(''));
const spacedText = fc.array(fc.constantFrom(...PIECES), { maxLength: 80 }).map((pieces) => pieces.join(' '));
const sorted = (set: ReadonlySet<string>) => [...set].sort();

describe('shingles of a card text', () => {
  it('are the same as before, in every script and with every separator (so are the sketch and the similarity)', () => {
    fc.assert(
      fc.property(fc.oneof(text, spacedText, fc.string({ maxLength: 60 }), fc.string({ unit: 'grapheme', maxLength: 40 })), (content) => {
        expect(sorted(shinglesOf(content))).toEqual(sorted(shinglesBefore(content)));
        expect(fingerprintOf(content)).toEqual(fingerprintBefore(content));
      }),
      { numRuns: 3000 },
    );
  });

  it('compare as jaccard of the shingles before, and decide near copies alike, one text against many', () => {
    fc.assert(
      fc.property(fc.oneof(text, spacedText), fc.array(fc.oneof(text, spacedText), { maxLength: 6 }), (content, others) => {
        const comparison = new ShingleComparison(content);
        for (const other of [...others, ...others, content]) {
          const before = jaccard(shinglesBefore(content), shinglesBefore(other));
          expect(comparison.similarity(other)).toBe(before);
          expect(comparison.similarity(other) >= NEAR_COPY_JACCARD).toBe(before >= NEAR_COPY_JACCARD);
          expect(isNearCopy(content, other)).toBe(normalizeContent(content) === normalizeContent(other) || before >= NEAR_COPY_JACCARD);
        }
        expect(fingerprintOf(content, comparison.shingles)).toEqual(fingerprintBefore(content));
      }),
      { numRuns: 500 },
    );
  });

  it('are the same as before for large texts near the limits (words, and characters of unspaced scripts)', () => {
    const words = Array.from({ length: 3_200 }, (_, i) => `Wort${(i * 7919) % 2000}${i % 7 === 0 ? ',' : ''}`).join(' ');
    const han = Array.from({ length: 9_000 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 131) % 2000)) + (i % 40 === 0 ? '。' : '')).join('');
    for (const content of [words, han, `${words.slice(0, 9_000)} ${han.slice(0, 3_000)}`]) {
      expect(sorted(shinglesOf(content))).toEqual(sorted(shinglesBefore(content)));
      expect(fingerprintOf(content)).toEqual(fingerprintBefore(content));
    }
  });
});

describe("a large card's duplicate checks", () => {
  const largeText = (variant: number) =>
    Array.from({ length: 3_200 }, (_, i) => (variant > 0 && i % 100 === variant % 100 ? `vari${variant}x${i}` : `wort${(i * 7919 + (i >> 4)) % 2000}`)).join(' ');

  it('let other work run between candidates, and still find the near copy', async () => {
    const db = openCardsDatabase(':memory:');
    const service = new CardService({
      ...sqliteCardServiceDeps(db),
    });
    const create = (content: string, callerId: string) => service.createCard({ callerId, cardHtml: `<p>${content}</p>`, link: '', private: true, tags: [] });
    for (let v = 0; v < 20; v++) await create(largeText(v), 'alice');
    // The store answers at once (SQLite), so before, nothing else ran until a create's checks of 20 or more candidates
    // of ~27,000 characters (tens of ms) were all done.
    for (const [callerId, duplicate] of [
      ['alice', true],
      ['bob', false],
    ] as const) {
      let otherWorkRan = false;
      const created = create(largeText(1_000), callerId).then((answer) => ({ answer, otherWorkRan }));
      setImmediate(() => (otherWorkRan = true));
      const { answer, otherWorkRan: ranBeforeTheAnswer } = await created;
      expect({ duplicate: answer.duplicate, ranBeforeTheAnswer }).toEqual({ duplicate, ranBeforeTheAnswer: true });
    }
    db.close();
  });
});
