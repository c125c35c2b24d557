/**
 * The server's card rules (the limits, block elements and word counting of @cards/card-rules, which the
 * cards service enforces), applied in the form so a person learns what is wrong before sending. The
 * server stays the authority and re-checks everything.
 */
import { CELL_LINE_TAGS, characterCount, codePointName, collapseTextLines, linkProblem, linkProblemText, type LinkProblem, MAX_CONTENT_CHARS, MAX_HTML_CHARS, MAX_LINK_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_WORDS, MIN_WORDS_EXCLUSIVE, nameProblem, splitTags, TABLE_CELL_SEPARATOR, tagsProblem, wellFormedProblem, wordCount } from '@cards/card-rules';
import { isolated } from './bidi';
import { BROKEN_CHARACTER, freeTextMessage } from './free-text';
import { parseInertHtml, SEPARATED_BLOCK } from './inert-html';

/**
 * Elements whose start and end break the text into lines, as the cards service keeps them: the allow-list's blocks and
 * the dropped ones whose text it keeps apart (SEPARATED_BLOCK_TAGS, blocks-apart.ts; CELL_LINE_TAGS is both lists).
 */
const LINE_BREAKING = new Set(CELL_LINE_TAGS);

/**
 * The plain text the server derives from card HTML: one line per block, whitespace collapsed. As the cards service
 * reads it (blocks-apart.ts, then the allow-list): the dropped blocks (div, dt, pre, xmp, a table's parts outside a
 * table ...) keep their text apart, a table is a line per row with text (its caption first), its cells separated by
 * TABLE_CELL_SEPARATOR; as the inert reader writes it (./inert-html), a ruby's annotation (rt) follows its base in
 * parentheses, rp dropped, and an option's text is left out.
 */
export function textOfHtml(html: string): string {
  // Read inertly: nothing runs or loads, and no style attribute or handler reaches the parser (the CSP would log it).
  const body = parseInertHtml(html);
  let text = '';
  const walk = (node: Node) => {
    if (node.nodeType === Node.TEXT_NODE) text += node.textContent ?? '';
    else if (node.nodeType === Node.ELEMENT_NODE) {
      const element = node as Element;
      const tag = element.tagName.toLowerCase();
      if (tag === 'script' || tag === 'style') return;
      if (tag === 'table') return tableText(element as HTMLTableElement);
      const breaks = LINE_BREAKING.has(tag) || tag === 'br' || element.hasAttribute(SEPARATED_BLOCK);
      if (breaks) text += '\n';
      node.childNodes.forEach(walk);
      if (breaks) text += '\n';
    }
  };
  const tableText = (table: HTMLTableElement) => {
    const hasText = (cell: Element) => /\S/u.test(cell.textContent ?? '');
    const lines: Element[][] = [...table.querySelectorAll(':scope > caption')].filter(hasText).map((caption) => [caption]);
    for (const row of table.rows) if ([...row.cells].some(hasText)) lines.push([...row.cells]);
    for (const cells of lines) {
      text += '\n';
      cells.forEach((cell, i) => {
        if (i > 0) text += TABLE_CELL_SEPARATOR;
        cell.childNodes.forEach(walk);
      });
      text += '\n';
    }
  };
  walk(body);
  return collapseTextLines(text);
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Plain text typed by a person becomes paragraphs; text that already holds HTML tags is sent as it is. */
export function htmlFromInput(input: string): string {
  if (/<[a-z][^>]*>/i.test(input)) return input;
  return htmlOfPlainText(input);
}

/**
 * Plain text as card HTML: a blank line starts a paragraph, a single line break is a <br> (the HTML view and a paste).
 * `trim: false` keeps the spaces at a paragraph's ends (a paste), not its line breaks.
 */
export function htmlOfPlainText(input: string, { trim = true } = {}): string {
  return input
    .replace(/\r\n?/g, '\n')
    .split(/\n[^\S\n]*\n\s*/)
    .map((p) => (trim ? p.trim() : p.replace(/^\n+|\n+$/g, '')))
    .filter((p) => p.trim().length > 0)
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
  else if (link) problems.link = `The link ${linkFaultText(draft.link, link)}.`;
  const tags = tagsMessage(tagsFromInput(draft.tags));
  if (tags) problems.tags = tags;
  return problems;
}

/** What is wrong with a link besides its length and scheme, said so that a person sees where to look. */
function linkFaultText(link: string, problem: Exclude<LinkProblem, 'too-long' | 'not-http'>): string {
  switch (problem) {
    case 'space': {
      const at = link.trim().search(/\s/u);
      return `has a space in it (after "${link.trim().slice(Math.max(0, at - 30), at)}"): write it without spaces, or a space as %20`;
    }
    case 'backslash':
      return 'has a backslash (\\) in it: web addresses use / instead';
    case 'invisible-character': {
      const hidden = [...link].find((c) => linkProblem(`https://example.com/${c}`) === 'invisible-character' || (c.trim() === '' && c !== ' '));
      return `holds an invisible character${hidden ? ` (${codePointName(hidden)})` : ''}, probably pasted in: type the address again or remove it`;
    }
    case 'not-full-url':
      return 'must be written in full: http:// or https://, then the site’s name, such as https://example.com/page';
    case 'credentials':
      return 'has a user name or password in it (“user:password@” before the site’s name): leave it out, everyone would see it';
    case 'host':
      return 'has a site name that cannot exist (an empty part as in “x..com”, a hyphen at a part’s start or end, or a part longer than 63 characters)';
    case 'look-alike-host':
      return `has a site name that reads as another one: ${linkProblemText(link)?.replace(/^must be an http or https URL whose host reads as the site it opens: /, '') ?? ''}`;
  }
}

/** The link field's message for an address it cannot take, naming what is wrong; null when it is a full http(s) address. */
export function linkFieldMessage(href: string): string | null {
  const value = href.trim();
  const problem = value === '' ? 'not-http' : linkProblem(value);
  if (problem === null) return null;
  if (problem === 'too-long') return `A link may be at most ${MAX_LINK_CHARS} characters.`;
  if (problem === 'not-http') return 'Enter a full http:// or https:// address, such as https://example.com/page.';
  return `The address ${linkFaultText(href, problem)}.`;
}

/** "1st", "2nd", "3rd", "4th", "11th", "21st"… */
function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}

// Characters that cannot be seen (format, control and other default-ignorable ones): written out as U+XXXX when a tag is quoted.
const HIDDEN_CHARACTER = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029]/gu;

/** A tag with its hidden characters written out ("ab<U+202E>cd"), so a bidi override in it cannot reorder the message. */
export function visibleTag(tag: string): string {
  return tag.replace(HIDDEN_CHARACTER, (c) => `<${codePointName(c)}>`);
}

/**
 * The form's message for tags (as tagsFromInput leaves them) the server refuses (@cards/card-rules tagsProblem, which
 * both the cards and the files services apply), naming the tag by its position and quoting it with its hidden
 * characters written out; null when the server accepts them. `maxTags`: the service's limit (the files service's is lower).
 */
export function tagsMessage(tags: readonly string[], maxTags = MAX_TAGS): string | null {
  const text = tags.map((t) => freeTextMessage(t, 'single-line')).find((message) => message !== null);
  if (text) return text;
  if (tags.length > maxTags) return `At most ${maxTags} tags.`;
  if (tags.some((t) => characterCount(t) > MAX_TAG_CHARS)) return `Each tag may be at most ${MAX_TAG_CHARS} characters.`;
  if (!tagsProblem(tags, maxTags)) return null;
  for (const [i, tag] of tags.entries()) {
    const problem = nameProblem(tag);
    if (problem) return `Tags: the ${ordinal(i + 1)} tag ("${isolated(visibleTag(tag))}") ${problem}.`;
  }
  return `Tags: ${tagsProblem(tags, maxTags)}.`;
}

/** "a, b,,c" -> ["a", "b", "c"]: trimmed, empty ones and repeats dropped. */
export function tagsFromInput(input: string): string[] {
  return splitTags([input]);
}
