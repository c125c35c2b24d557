import { createHash } from 'node:crypto';
import sanitizeHtml from 'sanitize-html';
import { Parser } from 'htmlparser2';
import { InvalidArgumentError, refuseIfProblem } from '@cards/platform';
import {
  BLOCK_TAGS,
  characterCount,
  collapseTextLines,
  freeTextProblem,
  hasUnspacedScript,
  UNSPACED_SCRIPT_CLASS,
  hasVisibleText,
  linkProblemText,
  nameProblem,
  splitTags,
  tagsProblem,
  withoutControlCharacters,
  MAX_COLLECTION_DESCRIPTION_CHARS,
  MAX_COLLECTION_NAME_CHARS,
  MAX_CONTENT_CHARS,
  MAX_HTML_CHARS,
  MAX_LINK_CHARS,
  MAX_TAG_CHARS,
  MAX_TAGS,
  MAX_WORDS,
  MIN_WORDS_EXCLUSIVE,
  wellFormedProblem,
  wordCount,
  WORDS_COUNTED,
} from '@cards/card-rules';
import type { CardFingerprint } from './model';
import { blocksKeptApart } from './blocks-apart';
import { wellFormedHtml, type WellFormedHtmlOptions } from './well-formed-html';

// The limits and word counting shared with the web app's card form live in @cards/card-rules.
export { MAX_COLLECTION_DESCRIPTION_CHARS, MAX_COLLECTION_NAME_CHARS, MAX_CONTENT_CHARS, MAX_HTML_CHARS, MAX_LINK_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_WORDS, MIN_WORDS_EXCLUSIVE, wordCount };
export const MAX_OC_FILE_PATH_CHARS = 1024;
/** Word-shingle Jaccard similarity at which a new card is a near copy of an existing one. */
export const NEAR_COPY_JACCARD = 0.9;
export const SHINGLE_WORDS = 3;
export const SKETCH_SIZE = 16;

/** How deep card HTML elements may nest (browsers stop nesting at 512). */
export const MAX_NESTING_DEPTH = 512;
const HEADINGS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'];
/** Disallowed elements removed with their text (sanitize-html's default list); others are unwrapped. */
const NON_TEXT_TAGS = ['script', 'style', 'textarea', 'option'];
/**
 * Block elements that keep a writing direction: a right-to-left paragraph pasted from Word or Google Docs carries
 * dir="rtl" (a paragraph starting with a Latin word or a number would otherwise show left-to-right).
 */
const DIRECTED_BLOCKS = ['p', 'ul', 'ol', 'li', 'blockquote', ...HEADINGS];
const DIRECTIONS = ['rtl', 'ltr', 'auto'];
/** A block's dir attribute as kept: rtl, ltr or auto (any case, spaces around), else none. */
function directionOf(attribs: sanitizeHtml.Attributes): sanitizeHtml.Attributes {
  const dir = attribs.dir?.trim().toLowerCase();
  return dir && DIRECTIONS.includes(dir) ? { dir } : {};
}
const keepDirection = (tagName: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Tag => ({ tagName, attribs: directionOf(attribs) });
/** sanitize-html options for card HTML (DESIGN.md's allow-list). */
export const CARD_SANITIZE_OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: ['p', 'br', 'b', 'strong', 'i', 'em', 'u', 'mark', 'span', 'ul', 'ol', 'li', 'blockquote', ...HEADINGS, 'a'],
  // ol start="n": a numbered list a card made from a document continues from the card before it (Files splitter).
  // dir on blocks: only rtl, ltr or auto (the transforms below drop any other value before this list is applied).
  allowedAttributes: {
    a: ['href'],
    ol: ['start', { name: 'dir', multiple: false, values: DIRECTIONS }],
    ...Object.fromEntries(DIRECTED_BLOCKS.filter((tag) => tag !== 'ol').map((tag) => [tag, [{ name: 'dir', multiple: false, values: DIRECTIONS }]])),
  },
  transformTags: {
    ...Object.fromEntries(DIRECTED_BLOCKS.map((tag) => [tag, keepDirection])),
    ol: (tagName, attribs): sanitizeHtml.Tag => ({ tagName, attribs: { ...(/^\d{1,9}$/.test(attribs.start ?? '') ? { start: attribs.start! } : {}), ...directionOf(attribs) } }),
  },
  allowedSchemes: ['http', 'https'],
  allowedSchemesByTag: {},
  allowedSchemesAppliedToAttributes: ['href'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
  nonTextTags: NON_TEXT_TAGS,
  // Elements nested deeper are unwrapped (their text stays): parsing the text out of the HTML costs time in proportion
  // to the nesting depth for every element, so a body of 100,000 nested tags took the service's one thread for seconds.
  nestingLimit: MAX_NESTING_DEPTH,
};
const BLOCKS = new Set(BLOCK_TAGS);

/** How card HTML is written out before sanitize-html reads it: its nesting limit, and what it drops past it. */
export const CARD_WELL_FORMED_OPTIONS: WellFormedHtmlOptions = { maxDepth: MAX_NESTING_DEPTH, hiddenContent: new Set(NON_TEXT_TAGS) };

/** The card HTML reduced to the allow-list (scripts, styles, event handlers and non-http(s) links removed). */
export function sanitizeCardHtml(html: string): string {
  // sanitize-html's parser (htmlparser2 8) searches all open elements for every end tag that closes none of them,
  // so 20,000 unclosed tags followed by 20,000 stray end tags held the service's thread for seconds. It reads
  // the same document written out well-formed, no deeper than the nesting limit, in linear time.
  // The allow-list unwraps tables and other blocks (div, dl, pre ...), which glued their texts ("YearRate20194.5%"):
  // their rows become paragraphs and their texts are kept apart first (blocks-apart.ts, as the web editor does).
  return sanitizeHtml(blocksKeptApart(wellFormedHtml(html, CARD_WELL_FORMED_OPTIONS)), CARD_SANITIZE_OPTIONS);
}

const SOFT_HYPHEN = /\u00ad/g;

/**
 * The plain text of (sanitized) HTML: entities decoded, one line per block, whitespace collapsed, soft hyphens (U+00AD,
 * where a line may break: the HTML keeps them) dropped, so "hyphen&shy;ated" is the word "hyphenated" to search and
 * to copy detection.
 */
export function textOfHtml(html: string): string {
  let text = '';
  const parser = new Parser(
    {
      ontext: (t) => {
        text += t;
      },
      onopentag: (name) => {
        if (BLOCKS.has(name)) text += '\n';
      },
      onclosetag: (name) => {
        if (BLOCKS.has(name)) text += '\n';
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  return collapseTextLines(text.replace(SOFT_HYPHEN, ''));
}

/** Sanitizes card HTML and derives its content, enforcing the word and length limits (400 otherwise). */
export function cardTextFromHtml(rawHtml: string): { cardHtml: string; content: string } {
  if (rawHtml.length > MAX_HTML_CHARS) throw new InvalidArgumentError(`card_html: must be at most ${MAX_HTML_CHARS} characters`);
  // Unlike the stray control characters pasted and extracted text often carries, an unpaired surrogate means the sending
  // program broke the text (ingestion replaces those a parser makes): refused, as in every other free-text field.
  refuseIfProblem('card_html', wellFormedProblem(rawHtml));
  // Pasted and extracted text carries stray control characters (NUL, ESC, NEL from PDFs): dropped rather than refused,
  // as HTML parsing drops NUL. After sanitizing, which decodes references to them (&#1;) into the characters.
  const cardHtml = withoutControlCharacters(sanitizeCardHtml(rawHtml));
  const content = textOfHtml(cardHtml);
  const words = wordCount(content);
  // Also when an existing card's HTML is sent again: a card stored under the count before (punctuation and symbols
  // counted) opens, lists and deletes as before, but an edit of its HTML is judged by this count.
  if (words <= MIN_WORDS_EXCLUSIVE) throw new InvalidArgumentError(`card_html: must contain more than ${MIN_WORDS_EXCLUSIVE} words of text (found ${words}; ${WORDS_COUNTED})`);
  if (words > MAX_WORDS) throw new InvalidArgumentError(`card_html: must contain at most ${MAX_WORDS} words of text (found ${words})`);
  const characters = characterCount(content);
  if (characters > MAX_CONTENT_CHARS) throw new InvalidArgumentError(`card_html: its text must be at most ${MAX_CONTENT_CHARS} characters (found ${characters})`);
  return { cardHtml, content };
}

/** A card link: empty, or an http(s) URL. */
export function validLink(link: string): string {
  // URL parsing drops tabs and line breaks and percent-encodes other controls, so it would let them into the stored link.
  refuseIfProblem('link', freeTextProblem(link.trim(), 'single-line'));
  // A well-formed absolute http(s) URL as written: "https:/example.com", a space, a backslash or a zero-width or bidi
  // character are refused, where URL parsing alone would take them (decisions.md "A card link is an http(s) URL as written").
  refuseIfProblem('link', linkProblemText(link));
  return link.trim();
}

/** Tags trimmed, split at commas (they are shown comma-joined), empty ones and repeats dropped. */
export function validTags(tags: readonly string[]): string[] {
  const out = splitTags(tags);
  refuseIfProblem('tag_set', tagsProblem(out));
  return out;
}

export function validOcFilePath(path: string | undefined): string | null {
  if (path === undefined || path.length === 0) return null;
  if (path.length > MAX_OC_FILE_PATH_CHARS) throw new InvalidArgumentError(`oc_file_path: must be at most ${MAX_OC_FILE_PATH_CHARS} characters`);
  // Shown to others beside the card, as a file name is: the rule of names (no bidi override making "/docs/\u202Egnp.exe"
  // read "/docs/exe.png", no zero-width or other invisible character but those real text needs).
  refuseIfProblem('oc_file_path', nameProblem(path));
  return path;
}

/**
 * The name trimmed, of 1 to MAX_COLLECTION_NAME_CHARS characters (code points, as characterCount counts them),
 * holding something visible: a name of only zero-width or control characters lists as blank; and following the rule
 * of names shown to others (nameProblem).
 */
export function validCollectionName(name: string): string {
  const trimmed = name.trim();
  if (!hasVisibleText(trimmed)) throw new InvalidArgumentError('name: must not be empty');
  if (characterCount(trimmed) > MAX_COLLECTION_NAME_CHARS) throw new InvalidArgumentError(`name: must be at most ${MAX_COLLECTION_NAME_CHARS} characters`);
  // The rule of every name shown to others (@cards/card-rules), as file names follow: no bidi override, among others.
  refuseIfProblem('name', nameProblem(trimmed));
  return trimmed;
}

export function validCollectionDescription(description: string): string {
  if (characterCount(description) > MAX_COLLECTION_DESCRIPTION_CHARS) throw new InvalidArgumentError(`description: must be at most ${MAX_COLLECTION_DESCRIPTION_CHARS} characters`);
  refuseIfProblem('description', freeTextProblem(description, 'multi-line'));
  return description;
}

/**
 * Case, accents-compatibility forms, punctuation and spacing do not make two cards different. Combining marks do: in
 * Hindi, Bengali, Tamil and the other Indic scripts the vowel signs are marks, so with marks made spaces पढ़ी and पढ़ा
 * (one letter's vowel changed) were one text, and two different Hindi cards were one card's duplicate.
 */
export function normalizeContent(content: string): string {
  return content.normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}\p{M}]+/gu, ' ').trim();
}

/**
 * The content hash cards stored before combining marks counted were stored under (marks made spaces), when it differs
 * from the content's hash now: an exact copy of such a card is looked up under it too, and taken only when its text is
 * the same by normalizeContent (no longer merely the same letters).
 */
export function legacyContentHash(content: string): string | undefined {
  const normalized = legacyNormalizedContent(content);
  return normalized === undefined ? undefined : createHash('sha256').update(normalized).digest('hex');
}

/**
 * The shingle sketch cards stored before combining marks counted were stored under (their words cut at every mark),
 * when the content holds a mark: a near copy of such a card shares too little of its sketch now, so it is looked up
 * under this one too (and compared by the shingles of today's rule).
 */
export function legacySketch(content: string): number[] | undefined {
  const normalized = legacyNormalizedContent(content);
  return normalized === undefined ? undefined : sketchOf(shinglesOfNormalized(normalized));
}

/** normalizeContent as it was before marks counted (marks made spaces), when the content holds one. */
function legacyNormalizedContent(content: string): string | undefined {
  const normalized = content.normalize('NFKC').toLowerCase();
  if (!/\p{M}/u.test(normalized)) return undefined;
  return normalized.replace(/[^\p{L}\p{N}]+/gu, ' ').trim();
}

/** A character of a script written without spaces, or a run of other word characters. */
const SHINGLE_TOKEN = new RegExp(`[${UNSPACED_SCRIPT_CLASS}]|[^${UNSPACED_SCRIPT_CLASS}]+`, 'gu');

/**
 * Word shingles of the normalized content (the words themselves when there are fewer than a shingle's worth). In a
 * script written without spaces (Chinese, Japanese, Thai ...) each character is a token, so its shingles are character
 * trigrams: split at spaces, a whole passage was one word, and a card differing from another by one character shared
 * no shingle with it. A shingle is its words joined by one space.
 */
export function shinglesOf(content: string): Set<string> {
  return shinglesOfNormalized(normalizeContent(content));
}

function shinglesOfNormalized(normalized: string): Set<string> {
  const out = new Set<string>();
  if (normalized === '') return out;
  if (hasUnspacedScript(normalized)) return tokenShingles(normalized.split(' ').flatMap((w) => (hasUnspacedScript(w) ? (w.match(SHINGLE_TOKEN) ?? []) : [w])), out);
  // Words of a spaced script only: normalizeContent leaves them separated by single spaces, so a shingle is the span of
  // the text from its first word to its third (a slice, no joining), as a large card's duplicate checks shingle it and up
  // to 50 candidates on the service's thread. The same strings as joining the words (shingle-comparisons.test.ts).
  const starts = [0];
  for (let at = normalized.indexOf(' '); at !== -1; at = normalized.indexOf(' ', at + 1)) starts.push(at + 1);
  const words = starts.length;
  const endOf = (word: number) => (word + 1 < words ? starts[word + 1]! - 1 : normalized.length);
  if (words < SHINGLE_WORDS) {
    for (let i = 0; i < words; i++) out.add(normalized.slice(starts[i], endOf(i)));
    return out;
  }
  for (let i = 0; i + SHINGLE_WORDS <= words; i++) out.add(normalized.slice(starts[i], endOf(i + SHINGLE_WORDS - 1)));
  return out;
}

/** Shingles of tokens (SHINGLE_WORDS of them joined by a space), or the tokens themselves when there are fewer. */
function tokenShingles(words: readonly string[], out: Set<string>): Set<string> {
  if (words.length < SHINGLE_WORDS) {
    for (const w of words) out.add(w);
    return out;
  }
  for (let i = 0; i + SHINGLE_WORDS <= words.length; i++) out.add(words.slice(i, i + SHINGLE_WORDS).join(' '));
  return out;
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let shared = 0;
  for (const s of small) if (large.has(s)) shared++;
  return shared / (a.size + b.size - shared);
}

/**
 * One text compared with many by shingles (a card's duplicate checks: up to 50 candidates of up to 29,000 characters
 * each): the text is shingled once, and each other text once however often it comes back (the checks before and after
 * a card's insert find the same candidates by sketch). `similarity(other)` is jaccard(shinglesOf(text), shinglesOf(other)).
 */
export class ShingleComparison {
  readonly shingles: Set<string>;
  private readonly known = new Map<string, number>();

  constructor(readonly text: string) {
    this.shingles = shinglesOf(text);
  }

  similarity(other: string): number {
    let j = this.known.get(other);
    if (j === undefined) {
      j = jaccard(this.shingles, shinglesOf(other));
      this.known.set(other, j);
    }
    return j;
  }
}

/** Whether two card texts are copies by content alone: the same normalized text, or word-shingle Jaccard >= NEAR_COPY_JACCARD. */
export function isNearCopy(a: string, b: string): boolean {
  return normalizeContent(a) === normalizeContent(b) || jaccard(shinglesOf(a), shinglesOf(b)) >= NEAR_COPY_JACCARD;
}

/** 32-bit FNV-1a; only used to pick a sketch, never for identity. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The hash of the normalized content (exact duplicates) and a bottom-k MinHash sketch of its shingles (`shingles`:
 * shinglesOf(content), when the caller has them already): two cards with Jaccard >= 0.9 share most of their sketch,
 * unrelated cards almost none.
 */
export function fingerprintOf(content: string, shingles: ReadonlySet<string> = shinglesOf(content)): CardFingerprint {
  const contentHash = createHash('sha256').update(normalizeContent(content)).digest('hex');
  return { contentHash, sketch: sketchOf(shingles) };
}

function sketchOf(shingles: ReadonlySet<string>): number[] {
  const hashes = [...new Set([...shingles].map(fnv1a))].sort((a, b) => a - b);
  return hashes.slice(0, SKETCH_SIZE);
}

/** How many sketch values a stored card must share with a new one to be checked exactly. */
export const SKETCH_MIN_SHARED = 4;
