import { MIN_WORDS_EXCLUSIVE, wordCount } from '@cards/card-rules';
import type { CardDraft, DocumentBlock, ParsedDocument } from './model';

/** A card holds more than MIN_WORDS_EXCLUSIVE words (the cards service's rule); paragraph-split cards hold at most 400. */
export const MIN_CARD_WORDS = MIN_WORDS_EXCLUSIVE + 1;
export const MAX_CARD_WORDS = 400;

const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"'()[\]{}]+[^\s<>"'()[\]{}.,;:!?]/i;

/** Words as the cards service counts them. */
export const countWords = wordCount;

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

interface Section {
  heading: DocumentBlock | null;
  paragraphs: DocumentBlock[];
}

/**
 * Turns a parsed document into card drafts (DESIGN.md "Files"):
 * - each heading starts a new section, and the heading text becomes the cards' title tag;
 * - a section's paragraphs are packed in order into cards of at most 400 words; a card is closed only
 *   once it holds at least 71 words, so a short run of paragraphs is merged into the next block of the
 *   same heading; a short tail joins the section's previous card; a section under 71 words in total is skipped;
 * - a document without headings is one untitled section, i.e. split at paragraph boundaries into 71-400-word cards;
 * - the last section is emitted like every other;
 * - a card's link is the first http(s) link of its paragraphs (hyperlink targets first, then URLs written in the text).
 */
export function splitIntoCards(document: ParsedDocument): CardDraft[] {
  const sections: Section[] = [];
  let current: Section = { heading: null, paragraphs: [] };
  for (const block of document.blocks) {
    if (block.text.trim().length === 0) continue;
    if (block.kind === 'heading') {
      sections.push(current);
      current = { heading: block, paragraphs: [] };
    } else {
      current.paragraphs.push(block);
    }
  }
  sections.push(current);

  const drafts: CardDraft[] = [];
  for (const section of sections) {
    const title = section.heading ? normalizeSpace(section.heading.text) : null;
    const headingWords = title ? countWords(title) : 0;
    for (const group of packParagraphs(section.paragraphs.flatMap(splitLongParagraph), headingWords)) {
      drafts.push(draftFrom(drafts.length, section.heading, title, group));
    }
  }
  return drafts;
}

/**
 * Greedy packing: 71..400 words per group (counting the heading words each card repeats). A group
 * under 71 words is not closed: it grows into the next block, or, when that would pass 400 words, it
 * joins the previous group if that one has room. A short tail joins the previous group.
 */
function packParagraphs(paragraphs: DocumentBlock[], baseWords: number): DocumentBlock[][] {
  const groups: { blocks: DocumentBlock[]; words: number }[] = [];
  let group: DocumentBlock[] = [];
  let words = baseWords;
  for (const paragraph of paragraphs) {
    const n = countWords(paragraph.text);
    if (group.length > 0 && words + n > MAX_CARD_WORDS) {
      const previous = groups[groups.length - 1];
      if (words >= MIN_CARD_WORDS) {
        groups.push({ blocks: group, words });
        group = [];
        words = baseWords;
      } else if (previous && previous.words + words - baseWords <= MAX_CARD_WORDS) {
        previous.blocks.push(...group);
        previous.words += words - baseWords;
        group = [];
        words = baseWords;
      }
    }
    group.push(paragraph);
    words += n;
  }
  if (group.length > 0) {
    const last = groups[groups.length - 1];
    if (words >= MIN_CARD_WORDS) groups.push({ blocks: group, words });
    else if (last) {
      last.blocks.push(...group);
      last.words += words - baseWords;
    }
  }
  return groups.map((g) => g.blocks);
}

/** A paragraph longer than a card is cut at sentence ends, or at word boundaries when a sentence is that long. */
function splitLongParagraph(paragraph: DocumentBlock): DocumentBlock[] {
  const text = normalizeSpace(paragraph.text);
  if (countWords(text) <= MAX_CARD_WORDS) return [{ ...paragraph, text }];
  // Cut pieces are plain text: inline HTML cannot be cut at sentence ends safely.
  const sentences = text.match(/[^.!?]+(?:[.!?]+["')\]]*\s*|$)/g) ?? [text];
  const units: string[] = [];
  for (const sentence of sentences) {
    const sentenceWords = sentence.trim().split(/\s+/).filter(Boolean);
    if (sentenceWords.length <= MAX_CARD_WORDS) {
      if (sentenceWords.length > 0) units.push(sentenceWords.join(' '));
      continue;
    }
    // A "sentence" longer than a card: cut it into equal parts at word boundaries.
    const parts = Math.ceil(sentenceWords.length / MAX_CARD_WORDS);
    const size = Math.ceil(sentenceWords.length / parts);
    for (let i = 0; i < sentenceWords.length; i += size) units.push(sentenceWords.slice(i, i + size).join(' '));
  }
  // Pieces of about equal size, so no tiny remainder is left over.
  const total = units.reduce((n, u) => n + countWords(u), 0);
  const target = Math.ceil(total / Math.ceil(total / MAX_CARD_WORDS));
  const pieces: string[] = [];
  let piece: string[] = [];
  let pieceWords = 0;
  for (const unit of units) {
    const n = countWords(unit);
    if (piece.length > 0 && (pieceWords + n > MAX_CARD_WORDS || pieceWords >= target)) {
      pieces.push(piece.join(' '));
      piece = [];
      pieceWords = 0;
    }
    piece.push(unit);
    pieceWords += n;
  }
  if (piece.length > 0) pieces.push(piece.join(' '));
  let linksGiven = false;
  return pieces.map((p) => {
    // Hyperlink targets belong to the piece that starts the paragraph; URLs in text travel with their text.
    const links = linksGiven ? [] : paragraph.links;
    linksGiven = true;
    return { kind: 'paragraph' as const, text: p, links };
  });
}

function draftFrom(index: number, heading: DocumentBlock | null, title: string | null, paragraphs: DocumentBlock[]): CardDraft {
  const level = Math.min(6, Math.max(1, heading?.level ?? 2));
  const parts: string[] = [];
  const texts: string[] = [];
  if (title) {
    parts.push(`<h${level}>${escapeHtml(title)}</h${level}>`);
    texts.push(title);
  }
  for (const p of paragraphs) {
    parts.push(`<p>${p.html || escapeHtml(p.text)}</p>`);
    texts.push(p.text);
  }
  const text = texts.join('\n');
  return { index, title, html: parts.join('\n'), text, link: firstLink(paragraphs), wordCount: countWords(text) };
}

function firstLink(paragraphs: DocumentBlock[]): string {
  for (const p of paragraphs) {
    const marked = p.links.find((l) => /^https?:\/\//i.test(l));
    if (marked) return marked;
    const inText = URL_IN_TEXT.exec(p.text)?.[0];
    if (inText) return inText;
  }
  return '';
}

export function normalizeSpace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
