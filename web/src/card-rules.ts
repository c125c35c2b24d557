/**
 * The server's card rules (the limits, block elements and word counting of @cards/card-rules, which the
 * cards service enforces), applied in the form so a person learns what is wrong before sending. The
 * server stays the authority and re-checks everything.
 */
import { BLOCK_TAGS, characterCount, collapseTextLines, linkProblem, MAX_CONTENT_CHARS, MAX_HTML_CHARS, MAX_LINK_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_WORDS, MIN_WORDS_EXCLUSIVE, splitTags, wellFormedProblem, wordCount } from '@cards/card-rules';
import { BROKEN_CHARACTER, freeTextMessage } from './free-text';

const BLOCKS = new Set(BLOCK_TAGS);

/** The plain text the server derives from card HTML: one line per block, whitespace collapsed. */
export function textOfHtml(html: string): string {
  // DOMParser documents are inert: no scripts run and no images load.
  const doc = new DOMParser().parseFromString(html, 'text/html');
  let text = '';
  const walk = (node: Node) => {
    if (node.nodeType === Node.TEXT_NODE) text += node.textContent ?? '';
    else if (node.nodeType === Node.ELEMENT_NODE) {
      const tag = (node as Element).tagName.toLowerCase();
      if (tag === 'script' || tag === 'style') return;
      if (BLOCKS.has(tag)) text += '\n';
      node.childNodes.forEach(walk);
      if (BLOCKS.has(tag)) text += '\n';
    }
  };
  walk(doc.body);
  return collapseTextLines(text);
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Plain text typed by a person becomes paragraphs; text that already holds HTML tags is sent as it is. */
export function htmlFromInput(input: string): string {
  if (/<[a-z][^>]*>/i.test(input)) return input;
  return input
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .map((p) => `<p>${escapeHtml(p).replace(/\n/g, '<br>')}</p>`)
    .join('');
}

export interface CardDraft {
  text: string;
  link: string;
  tags: string;
}

/** Problems with a draft, keyed by field; empty when the server should accept it. */
export function cardDraftProblems(draft: CardDraft): Partial<Record<keyof CardDraft, string>> {
  const problems: Partial<Record<keyof CardDraft, string>> = {};
  const html = htmlFromInput(draft.text);
  const content = textOfHtml(html);
  const words = wordCount(content);
  // The server drops the text's control characters as paste noise but refuses it with half a surrogate pair.
  if (wellFormedProblem(html)) problems.text = BROKEN_CHARACTER;
  else if (html.length > MAX_HTML_CHARS) problems.text = `The card is too long: at most ${MAX_HTML_CHARS} characters of HTML.`;
  else if (words <= MIN_WORDS_EXCLUSIVE) problems.text = `A card needs more than ${MIN_WORDS_EXCLUSIVE} words of text (now ${words}).`;
  else if (words > MAX_WORDS) problems.text = `A card may hold at most ${MAX_WORDS} words (now ${words}).`;
  else if (characterCount(content) > MAX_CONTENT_CHARS) problems.text = `A card's text may be at most ${MAX_CONTENT_CHARS} characters (now ${characterCount(content)}).`;
  const link = linkProblem(draft.link);
  const linkText = freeTextMessage(draft.link.trim(), 'single-line');
  if (linkText) problems.link = linkText;
  else if (link === 'too-long') problems.link = `The link may be at most ${MAX_LINK_CHARS} characters.`;
  else if (link === 'not-http') problems.link = 'The link must be an http:// or https:// address.';
  else if (link) problems.link = 'The link must be a full http:// or https:// address (such as https://example.com/page), without spaces, backslashes or invisible characters.';
  const tags = tagsFromInput(draft.tags);
  const tagText = tags.map((t) => freeTextMessage(t, 'single-line')).find((message) => message !== null);
  if (tagText) problems.tags = tagText;
  else if (tags.length > MAX_TAGS) problems.tags = `At most ${MAX_TAGS} tags.`;
  else if (tags.some((t) => characterCount(t) > MAX_TAG_CHARS)) problems.tags = `Each tag may be at most ${MAX_TAG_CHARS} characters.`;
  return problems;
}

/** "a, b,,c" -> ["a", "b", "c"]: trimmed, empty ones and repeats dropped. */
export function tagsFromInput(input: string): string[] {
  return splitTags([input]);
}
