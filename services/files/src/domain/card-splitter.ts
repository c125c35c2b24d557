import { escapeHtml, freeTextProblem, hasUnspacedScript, hasVisibleText, holdsWord, linkProblem, MIN_WORDS_EXCLUSIVE, wordCount, wordStartsInRun, withLoneSurrogatesReplaced, withoutControlCharacters } from '@cards/card-rules';
import { cutHtmlAtWords } from './html-words';
import type { CardDraft, DocumentBlock, ListPlace, ParsedDocument } from './model';

/** A card holds more than MIN_WORDS_EXCLUSIVE words (the cards service's rule) and at most 400 (DESIGN.md "Files"). */
export const MIN_CARD_WORDS = MIN_WORDS_EXCLUSIVE + 1;
export const MAX_CARD_WORDS = 400;

// Ends at whitespace, an invisible format character (a zero-width space after it) or a backslash too: the cards service
// refuses a link holding one.
const URL_IN_TEXT = /\bhttps?:\/\/[^\s\p{Cf}\\<>"'()[\]{}]+[^\s\p{Cf}\\<>"'()[\]{}.,;:!?]/iu;

/** Words as the cards service counts them (a script written without spaces by the words its readers see). */
export const countWords = wordCount;

/**
 * The words of normalized text (normalizeSpace) as countWords tells them apart, each with the space that follows it, so
 * a range of them joined is its text (joinWords): a run of a script written without spaces is cut into its words, with
 * nothing between them.
 */
export function wordsOf(text: string): string[] {
  const runs = text.split(' ');
  if (!hasUnspacedScript(text)) return runs.map((run, i) => (i + 1 < runs.length ? `${run} ` : run));
  const words: string[] = [];
  runs.forEach((run, i) => {
    const starts = wordStartsInRun(run);
    starts.forEach((start, k) => words.push(run.slice(start, starts[k + 1]) + (k + 1 === starts.length && i + 1 < runs.length ? ' ' : '')));
  });
  return words;
}

/**
 * The words (wordsOf) of each block splitLongParagraph returns, as its paragraph's were cut: packParagraphs takes them
 * rather than segment the text again (a run of an unspaced script costs a dictionary segmentation each time, and a
 * piece of a run might be segmented a little differently at its edges than the run was).
 */
const WORDS_OF_PIECE = new WeakMap<DocumentBlock, string[]>();

function withWords(block: DocumentBlock, words: string[]): DocumentBlock {
  WORDS_OF_PIECE.set(block, words);
  return block;
}

/** Words [start, end) of wordsOf, as wordsOf gives those of their text. */
function sliceWords(words: readonly string[], start: number, end: number): string[] {
  const slice = words.slice(start, end);
  if (slice.length > 0) slice[slice.length - 1] = slice[slice.length - 1]!.trimEnd();
  return slice;
}

/** The text of words [start, end) of wordsOf. */
function joinWords(words: readonly string[], start: number, end: number): string {
  return words.slice(start, end).join('').trimEnd();
}

const SOFT_HYPHEN = /\u00ad/g;

/**
 * Parsed text as cards take it: control characters dropped, unpaired surrogates replaced (see withoutControls), and
 * soft hyphens (U+00AD, a hyphenation hint) dropped, so "soft\u00adhyphen" is the word it shows and is found as.
 */
function cleaned(text: string): string {
  return withLoneSurrogatesReplaced(withoutControlCharacters(text)).replace(SOFT_HYPHEN, '');
}

interface Section {
  heading: DocumentBlock | null;
  paragraphs: DocumentBlock[];
}

/** A heading this long is body text set in a heading style: it would leave no room for a card's text. */
const MAX_HEADING_WORDS = MAX_CARD_WORDS / 2;

/** A heading that starts a section: its text titles the cards made from the paragraphs under it, and alone makes none. */
export function isSectionHeading(block: DocumentBlock): boolean {
  return block.kind === 'heading' && countWords(block.text) <= MAX_HEADING_WORDS;
}

/** What a document holds for cards: nothing visible, only section headings (which make no card), or body text. */
export type TextPresence = 'none' | 'headings' | 'body';

/** TextPresence of blocks as splitIntoCards reads them; the upload check applies the same rule. */
export function textPresenceOf(blocks: readonly DocumentBlock[]): TextPresence {
  let presence: TextPresence = 'none';
  for (const block of blocks) {
    if (!hasVisibleText(block.text)) continue;
    if (!isSectionHeading(block)) return 'body';
    presence = 'headings';
  }
  return presence;
}

/**
 * Turns a parsed document into card drafts (DESIGN.md "Files"):
 * - each heading starts a new section, and the heading text becomes the cards' title tag;
 * - a section is cut into cards of 71-400 words (counting the heading each card repeats): a short run of
 *   paragraphs is merged into the next block of the same heading, a short tail into the previous one, and a
 *   section under 71 words in total is skipped;
 * - cards end at paragraph ends; only where no such cut keeps every card within 71-400 words does one end at
 *   a sentence end, and only where that fails too inside a sentence;
 * - a document without headings is one untitled section, i.e. split at paragraph boundaries into 71-400-word cards;
 * - the last section is emitted like every other;
 * - a paragraph cut into pieces gives each piece the links anchored in it, and its inline HTML cut at the same words;
 * - a card's link is the first http(s) link of its paragraphs (hyperlink targets first, then URLs written in the text).
 */
export function splitIntoCards(document: ParsedDocument): CardDraft[] {
  const sections: Section[] = [];
  let current: Section = { heading: null, paragraphs: [] };
  for (const block of document.blocks.map(withoutControls)) {
    if (!hasVisibleText(block.text)) continue;
    if (isSectionHeading(block)) {
      sections.push(current);
      current = { heading: block, paragraphs: [] };
    } else {
      current.paragraphs.push({ ...block, kind: 'paragraph' });
    }
  }
  sections.push(current);

  const drafts: CardDraft[] = [];
  for (const section of sections) {
    const title = section.heading ? normalizeSpace(section.heading.text) : null;
    const headingWords = title ? countWords(title) : 0;
    const maxWords = MAX_CARD_WORDS - headingWords;
    const paragraphs = section.paragraphs.flatMap((p) => splitLongParagraph(p, maxWords));
    for (const group of packParagraphs(paragraphs, Math.max(1, MIN_CARD_WORDS - headingWords), maxWords)) {
      drafts.push(draftFrom(drafts.length, section.heading, title, group));
    }
  }
  return drafts;
}

/**
 * Why splitIntoCards made no card of the document, for its uploader: no passage of more than 70 words, and how its text
 * falls into sections. A card holds the text of one section (a heading and what follows it up to the next heading; the
 * heading's words count) and a section of 70 words or fewer makes none (DESIGN.md "Files": short blocks merge into the
 * next block of the same heading, never across a heading), so a document of many short sections (a Q&A of one heading
 * per question) makes no card even when its whole text is long; the same text without headings (its PDF) makes one.
 */
export function noCardReason(document: ParsedDocument): string {
  const reason = `the document holds no passage of more than ${MIN_WORDS_EXCLUSIVE} words, so no card was made`;
  const sizes: number[] = [];
  let current: number | null = null;
  let headed = false;
  for (const block of document.blocks.map(withoutControls)) {
    if (!hasVisibleText(block.text)) continue;
    if (isSectionHeading(block)) {
      if (current !== null) sizes.push(current);
      current = countWords(normalizeSpace(block.text));
      headed = true;
    } else current = (current ?? 0) + countWords(normalizeSpace(block.text));
  }
  if (current !== null) sizes.push(current);
  const total = sizes.reduce((a, b) => a + b, 0);
  if (!headed || sizes.length === 1) return `${reason}: its text has ${total} words`;
  const longest = Math.max(...sizes);
  return (
    `${reason}: its ${total} words are in ${sizes.length} sections (a heading and the text under it), the longest of ${longest} words, ` +
    `and a card holds more than ${MIN_WORDS_EXCLUSIVE} words of one section; put short sections under one heading to make a card of them`
  );
}

/**
 * The block without control characters (NEL, DEL and the like, from pasted or converted text) and with each unpaired
 * surrogate (a parser decoding UTF-16 text or a character reference to one) replaced by U+FFFD: the cards service drops
 * control characters from a card's HTML but refuses a tag or link holding one and any text holding an unpaired
 * surrogate, and the person who uploaded the document cannot correct what a parser made of it (a hyperlink target
 * breaking either rule is passed over by firstLink). A word of control characters alone goes, so the words links are
 * anchored at are counted again.
 */
function withoutControls(block: DocumentBlock): DocumentBlock {
  const text = cleaned(block.text);
  const html = block.html?.replace(SOFT_HYPHEN, '');
  const withText = html === undefined ? { ...block, text } : { ...block, text, html };
  if (!block.linkWords) return withText;
  // The reader anchored links at runs of non-whitespace; a run may now be no word, or (unspaced script) several.
  const kept: number[] = [];
  let count = 0;
  for (const run of normalizeSpace(block.text).split(' ')) {
    kept.push(count);
    const left = cleaned(run);
    if (left.length > 0) count += wordStartsInRun(left).length;
  }
  return { ...withText, linkWords: block.linkWords.map((i) => kept[i] ?? count) };
}

/** Words per piece where a card has to end inside a sentence. */
const PIECE_WORDS = 10;
/** What ending a card after a piece costs: a paragraph end nothing, a sentence end less than a cut inside one. */
const CUT_COST = { paragraph: 0, sentence: 1, inside: 2, afterHeading: 1000 } as const;
const SENTENCE_END = /[.!?。！？]["')\]」』”’）]* ?$/;

/** Words [start, end) of one paragraph, placed in a card as a unit. */
interface Piece {
  paragraph: number;
  start: number;
  end: number;
  /** The words of [start, end) that countWords counts (a run of punctuation or symbols alone is none). */
  words: number;
  /** Cost of ending a card right after this piece. */
  cut: number;
}

/** How many of words [start, end) of wordsOf countWords counts: each is one word, or none when it holds no letter or number. */
function countedWords(words: readonly string[], start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) if (holdsWord(words[i]!)) n++;
  return n;
}

/** Whole paragraphs, or (fine) pieces of at most PIECE_WORDS words that end at the latest where a sentence ends. */
function piecesOf(paragraphs: readonly DocumentBlock[], paragraphWords: string[][], fine: boolean): Piece[] {
  const pieces: Piece[] = [];
  // After a PDF's heading-like paragraph (DocumentBlock.keepWithNext) a cut costs more than any other: a card ending with
  // it leaves its text to the next card.
  const endCost = (paragraph: number) => (paragraphs[paragraph]!.keepWithNext ? CUT_COST.afterHeading : CUT_COST.paragraph);
  paragraphWords.forEach((words, paragraph) => {
    if (!fine) {
      pieces.push({ paragraph, start: 0, end: words.length, words: countedWords(words, 0, words.length), cut: endCost(paragraph) });
      return;
    }
    let start = 0;
    words.forEach((word, i) => {
      const end = i + 1;
      const sentenceEnd = SENTENCE_END.test(word);
      if (end === words.length || sentenceEnd || end - start === PIECE_WORDS) {
        pieces.push({ paragraph, start, end, words: countedWords(words, start, end), cut: end === words.length ? endCost(paragraph) : sentenceEnd ? CUT_COST.sentence : CUT_COST.inside });
        start = end;
      }
    });
  });
  return pieces;
}

/**
 * Groups of minWords..maxWords words. Cards end at paragraph ends when that works for the whole section
 * (the usual case, decided on whole paragraphs); otherwise on pieces, where it costs least in total. A card ends
 * after a PDF's heading-like paragraph (keepWithNext) only where nothing else works, even cutting inside paragraphs.
 * Empty when there are fewer than minWords words.
 */
function packParagraphs(paragraphs: DocumentBlock[], minWords: number, maxWords: number): DocumentBlock[][] {
  const paragraphWords = paragraphs.map((p) => WORDS_OF_PIECE.get(p) ?? wordsOf(normalizeSpace(p.text)));
  let best: { pieces: Piece[]; groups: [number, number][]; cost: number } | null = null;
  for (const fine of [false, true]) {
    const pieces = piecesOf(paragraphs, paragraphWords, fine);
    const found = cheapestGroups(pieces, minWords, maxWords);
    if (found && (!best || found.cost < best.cost)) best = { pieces, ...found };
    // Cuts at paragraph ends only, unless one of them is after a heading-like paragraph: cuts inside paragraphs may
    // avoid that.
    if (best && best.cost < CUT_COST.afterHeading) break;
  }
  return best ? best.groups.map(([from, to]) => blocksOf(paragraphs, paragraphWords, best.pieces, from, to)) : [];
}

/**
 * Consecutive pieces [from, to) of minWords..maxWords words each, with the least total cut cost; among
 * equally good cuts each group takes as much as it can, so a short run of paragraphs merges into the next
 * block and a short tail into the previous one; with that total cost. Null when there is no such grouping. Linear: the possible
 * ends of a group starting at i form a window that only moves left as i does.
 */
function cheapestGroups(pieces: Piece[], minWords: number, maxWords: number): { groups: [number, number][]; cost: number } | null {
  const n = pieces.length;
  const prefix = [0];
  for (const piece of pieces) prefix.push(prefix[prefix.length - 1]! + piece.words);
  const words = (from: number, to: number) => prefix[to]! - prefix[from]!;
  // cost[i]: least total cost of grouping pieces i..; end[i]: where the first of those groups ends.
  const cost = new Array<number>(n + 1).fill(Infinity);
  const end = new Array<number>(n + 1).fill(n);
  cost[n] = 0;
  const costEndingAt = (j: number) => cost[j]! + (j === n ? 0 : pieces[j - 1]!.cut);
  // Possible ends j in [low, high] with a finite cost, by increasing costEndingAt (ties: larger j first).
  const window: number[] = [];
  let low = n + 1;
  let high = n;
  for (let i = n - 1; i >= 0; i--) {
    while (high > i && words(i, high) > maxWords) high--;
    while (low - 1 > i && words(i, low - 1) >= minWords) {
      low--;
      if (cost[low] === Infinity) continue;
      while (window.length > 0 && costEndingAt(window[window.length - 1]!) > costEndingAt(low)) window.pop();
      window.push(low);
    }
    while (window.length > 0 && window[0]! > high) window.shift();
    if (window.length > 0) {
      cost[i] = costEndingAt(window[0]!);
      end[i] = window[0]!;
    }
  }
  if (n === 0 || cost[0] === Infinity) return null;
  const groups: [number, number][] = [];
  for (let i = 0; i < n; i = end[i]!) groups.push([i, end[i]!]);
  return { groups, cost: cost[0]! };
}

/** The paragraphs of pieces [from, to): whole ones as they are, a cut one as the words it keeps (cutBlock). */
function blocksOf(paragraphs: DocumentBlock[], paragraphWords: string[][], pieces: Piece[], from: number, to: number): DocumentBlock[] {
  const blocks: DocumentBlock[] = [];
  for (let i = from; i < to; ) {
    const index = pieces[i]!.paragraph;
    let j = i;
    while (j < to && pieces[j]!.paragraph === index) j++;
    const words = paragraphWords[index]!;
    const start = pieces[i]!.start;
    const end = pieces[j - 1]!.end;
    const paragraph = paragraphs[index]!;
    if (start === 0 && end === words.length) blocks.push(paragraph);
    else blocks.push(cutBlock(paragraph, words, [[start, end]])[0]!);
    i = j;
  }
  return blocks;
}

/** A paragraph longer than a card is cut at sentence ends, or at word boundaries when a sentence is that long. */
function splitLongParagraph(paragraph: DocumentBlock, maxWords: number): DocumentBlock[] {
  const text = normalizeSpace(paragraph.text);
  const words = wordsOf(text);
  // Each of wordsOf's words is one word for countWords, or none when it holds no letter or number (segmenting once is enough).
  const wordsIn = (start: number, end: number) => countedWords(words, start, end);
  if (wordsIn(0, words.length) <= maxWords) return [withWords({ ...paragraph, text }, words)];
  // Units [start, end) of words: sentences, which end at . ! or ? (maybe closed by quotes or brackets), so "3.5" stays one word.
  const units: [number, number][] = [];
  let sentenceStart = 0;
  words.forEach((word, i) => {
    if (i + 1 < words.length && !SENTENCE_END.test(word)) return;
    const end = i + 1;
    const length = end - sentenceStart;
    if (length <= maxWords) units.push([sentenceStart, end]);
    else {
      // A "sentence" longer than a card: cut it into equal parts at word boundaries.
      const size = Math.ceil(length / Math.ceil(length / maxWords));
      for (let at = sentenceStart; at < end; at += size) units.push([at, Math.min(end, at + size)]);
    }
    sentenceStart = end;
  });
  // Pieces of about equal size, so no tiny remainder is left over.
  const total = units.reduce((n, [start, end]) => n + wordsIn(start, end), 0);
  const target = Math.ceil(total / Math.ceil(total / maxWords));
  const pieces: [number, number][] = [];
  let piece: [number, number] | null = null;
  let pieceWords = 0;
  for (const [start, end] of units) {
    const n = wordsIn(start, end);
    if (piece && (pieceWords + n > maxWords || pieceWords >= target)) {
      pieces.push(piece);
      piece = null;
      pieceWords = 0;
    }
    piece = piece ? [piece[0], end] : [start, end];
    pieceWords += n;
  }
  if (piece) pieces.push(piece);
  return cutBlock({ ...paragraph, text }, words, pieces);
}

/**
 * The words [start, end) of each range of a paragraph (its `words`, in order and apart) as paragraphs of their own,
 * each with the links anchored in it: its inline HTML cut at the same words (so it keeps the <a> of its links, and its
 * emphasis), or for a format without inline HTML by the words the reader anchored its links at. A paragraph whose
 * HTML does not match its text, or without either, gives its links to the piece that starts it.
 */
function cutBlock(paragraph: DocumentBlock, words: string[], ranges: [number, number][]): DocumentBlock[] {
  const textOf = ([start, end]: [number, number]) => joinWords(words, start, end);
  // A list item cut into pieces: the piece that starts it is the item; the rest are further paragraphs of it.
  const listOf = ([start]: [number, number]) => ({
    ...(paragraph.list ? { list: start === 0 ? paragraph.list : { ...paragraph.list, continues: true as const } } : {}),
    // Each piece keeps the paragraph's direction.
    ...(paragraph.dir ? { dir: paragraph.dir } : {}),
  });
  const cut = paragraph.html ? cutHtmlAtWords(paragraph.html, ranges) : null;
  if (cut && cut.words === words.length && cut.anchors === paragraph.links.length) {
    return ranges.map((range, i) => {
      const part = cut.parts[i]!;
      return withWords({ kind: 'paragraph', text: textOf(range), html: part.html, links: part.anchors.map((k) => paragraph.links[k]!), ...listOf(range) }, sliceWords(words, ...range));
    });
  }
  const anchoredAt = !paragraph.html && paragraph.linkWords?.length === paragraph.links.length ? paragraph.linkWords : null;
  return ranges.map(([start, end]) =>
    withWords(
      {
        kind: 'paragraph',
        text: textOf([start, end]),
        links: anchoredAt ? paragraph.links.filter((_, k) => anchoredAt[k]! >= start && anchoredAt[k]! < end) : start === 0 ? paragraph.links : [],
        ...listOf([start, end]),
      },
      sliceWords(words, start, end),
    ),
  );
}

function draftFrom(index: number, heading: DocumentBlock | null, title: string | null, paragraphs: DocumentBlock[]): CardDraft {
  const level = Math.min(6, Math.max(1, heading?.level ?? 2));
  const parts: string[] = [];
  const texts: string[] = [];
  if (title) {
    parts.push(`<h${level}${dirAttribute(heading)}>${escapeHtml(title)}</h${level}>`);
    texts.push(title);
  }
  const lists = new ListWriter(parts);
  for (const p of paragraphs) {
    const html = p.html || escapeHtml(p.text);
    if (p.list) lists.item(p.list, html, dirAttribute(p));
    else {
      lists.closeAll();
      parts.push(`<p${dirAttribute(p)}>${html}</p>`);
    }
    texts.push(p.text);
  }
  lists.closeAll();
  const text = texts.join('\n');
  return { index, title, html: parts.join('\n'), text, link: firstLink(paragraphs), wordCount: countWords(text) };
}

/** A block's direction as its element's attribute: dir="rtl" where the document sets the block right to left, else none. */
function dirAttribute(block: DocumentBlock | null): string {
  return block?.dir === 'rtl' ? ' dir="rtl"' : '';
}

/**
 * Writes list items into a card's HTML parts as ul/ol and li: consecutive items of one list (same kind and level, numbers
 * following on) share one list element, an item of a deeper level opens a list inside the open item, a further paragraph
 * of an item (ListPlace.continues) is a p inside its li, and a numbered list that does not start at 1 (the rest of a list
 * the previous card began) says where it starts (ol start="n"). A further paragraph whose item the card does not hold
 * (the previous card did) is a paragraph of its own. A right-to-left item or paragraph carries its dir (`dir`: ' dir="rtl"'
 * or empty) on its li or p.
 */
class ListWriter {
  private readonly open: { ordered: boolean; level: number; next: number; item: boolean }[] = [];
  private html = '';

  constructor(private readonly parts: string[]) {}

  item(place: ListPlace, html: string, dir = ''): void {
    if (place.continues) {
      this.continueItem(place, html, dir);
      return;
    }
    let top = this.open[this.open.length - 1];
    while (top && (top.level > place.level || (top.level === place.level && (top.ordered !== place.ordered || top.next !== place.number)))) {
      this.closeTop();
      top = this.open[this.open.length - 1];
    }
    if (!top || top.level < place.level) {
      const start = place.ordered && place.number !== 1 ? ` start="${place.number}"` : '';
      this.html += place.ordered ? `<ol${start}>` : '<ul>';
      top = { ordered: place.ordered, level: place.level, next: place.number, item: false };
      this.open.push(top);
    } else if (top.item) this.html += '</li>';
    this.html += `<li${dir}>${html}`;
    top.item = true;
    top.next = place.number + 1;
  }

  private continueItem(place: ListPlace, html: string, dir: string): void {
    const holds = (list: (typeof this.open)[number]) => list.level === place.level && list.ordered === place.ordered && list.item && list.next === place.number + 1;
    const at = this.open.findIndex(holds);
    if (at < 0) {
      this.closeAll();
      this.parts.push(`<p${dir}>${html}</p>`);
      return;
    }
    // Lists inside the item (a deeper level) end before its next paragraph.
    while (this.open.length > at + 1) this.closeTop();
    this.html += `<p${dir}>${html}</p>`;
  }

  closeAll(): void {
    while (this.open.length > 0) this.closeTop();
    if (this.html) this.parts.push(this.html);
    this.html = '';
  }

  private closeTop(): void {
    const list = this.open.pop()!;
    this.html += `${list.item ? '</li>' : ''}${list.ordered ? '</ol>' : '</ul>'}`;
  }
}

function firstLink(paragraphs: DocumentBlock[]): string {
  for (const p of paragraphs) {
    // A target the cards service would refuse as a link (control character, not written in full, invisible character,
    // too long) is passed over: the passage keeps its card, with the next link that is fine.
    const marked = p.links.find(acceptedLink);
    if (marked) return marked;
    const inText = URL_IN_TEXT.exec(p.text)?.[0];
    if (inText && acceptedLink(inText)) return inText;
  }
  return '';
}

function acceptedLink(link: string): boolean {
  return /^https?:\/\//i.test(link) && freeTextProblem(link, 'single-line') === null && linkProblem(link) === null;
}

export function normalizeSpace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
