import { hasUnspacedScript, wordStartsInRun } from '@cards/card-rules';

/** One part of a block's inline HTML, cut at word boundaries. */
export interface HtmlPart {
  html: string;
  /** Ordinals (from 0, in order of appearance in the whole HTML) of the <a> elements with text in this part. */
  anchors: number[];
}

/** A block's inline HTML cut into parts, with the number of words and of <a> elements of the whole. */
export interface HtmlCut {
  parts: HtmlPart[];
  words: number;
  anchors: number;
}

/**
 * The inline HTML the document readers build (block-collector): escaped text, a with href, strong, em and u, and <br>
 * (a table cell's line break: whitespace between words, dropped where a cut falls on it).
 */
const TOKEN = /<a href="[^"]*">|<(?:strong|em|u)>|<\/(?:a|strong|em|u)>|<br>|&(?:amp|lt|gt|quot);|[^<&]+|[<&]/gy;
const LINE_BREAK = '<br>';
const CONTROL = /\p{Cc}/u;
const WHITESPACE = /\s/u;
const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"' };

interface OpenElement {
  name: string;
  tag: string;
  anchor: number | null;
}

/**
 * Cuts inline HTML into the words of each range [start, end) (word = a run of non-whitespace in its text, control
 * characters dropped as splitIntoCards drops them from the text, a run of a script written without spaces cut into its
 * words as wordsOf cuts it), ranges in order and apart. Each part is well-formed:
 * an element open across a cut is closed at the end of one part and opened again at the start of the next, so a link
 * cut in two stays a link in both. Null for markup the readers never build.
 */
export function cutHtmlAtWords(html: string, ranges: readonly (readonly [number, number])[]): HtmlCut | null {
  const starts = wordStartsInside(html);
  if (starts === undefined) return null;
  // Offset (code units) in the text of the next character that is whitespace or not a control character.
  let at = 0;
  const parts = ranges.map(() => ({ html: '', anchors: new Set<number>() }));
  const open: OpenElement[] = [];
  // open[0, shown) are open in the part being written; the rest are opened there when text next lands in it.
  let shown = 0;
  let word = -1;
  let inWord = false;
  let anchors = 0;
  let current = -1;
  let range = 0;

  const partOfWord = (w: number) => {
    while (range < ranges.length && ranges[range]![1] <= w) range++;
    return range < ranges.length && ranges[range]![0] <= w ? range : -1;
  };
  /** The part holding the space after word w: the one holding both w and the next word. */
  const partOfSpaceAfter = (w: number) => {
    const part = partOfWord(w);
    return part >= 0 && w + 1 < ranges[part]![1] ? part : -1;
  };
  const closeShown = () => {
    for (let i = shown - 1; i >= 0; i--) parts[current]!.html += `</${open[i]!.name}>`;
    shown = 0;
  };
  const write = (part: number, text: string) => {
    if (part !== current) {
      if (current >= 0) closeShown();
      current = part;
    }
    for (; shown < open.length; shown++) {
      const element = open[shown]!;
      parts[part]!.html += element.tag;
      if (element.anchor !== null) parts[part]!.anchors.add(element.anchor);
    }
    parts[part]!.html += text;
  };
  const close = (name: string) => {
    const at = open.map((e) => e.name).lastIndexOf(name);
    if (at < 0) return;
    for (let i = shown - 1; i >= at; i--) parts[current]!.html += `</${open[i]!.name}>`;
    open.splice(at, 1);
    shown = Math.min(shown, at);
  };
  const character = (raw: string, decoded: string) => {
    if (WHITESPACE.test(decoded)) {
      at += decoded.length;
      inWord = false;
      const part = partOfSpaceAfter(word);
      if (part >= 0) write(part, raw);
      return;
    }
    if (CONTROL.test(decoded)) return;
    const startsWord = starts?.has(at) === true;
    at += decoded.length;
    if (!inWord || startsWord) {
      word++;
      inWord = true;
    }
    const part = partOfWord(word);
    if (part >= 0) write(part, raw);
  };

  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < html.length) {
    const token = TOKEN.exec(html)?.[0];
    if (token === undefined || token === '<' || token === '&') return null;
    if (token === LINE_BREAK) {
      character(token, ' ');
    } else if (token.startsWith('<a ')) {
      open.push({ name: 'a', tag: token, anchor: anchors++ });
    } else if (token.startsWith('</')) {
      close(token.slice(2, -1));
    } else if (token.startsWith('<')) {
      open.push({ name: token.slice(1, -1), tag: token, anchor: null });
    } else if (token.startsWith('&')) {
      character(token, ENTITIES[token]!);
    } else {
      for (const c of token) character(c, c);
    }
  }
  if (current >= 0) closeShown();
  return { parts: parts.map((p) => ({ html: p.html, anchors: [...p.anchors].sort((a, b) => a - b) })), words: word + 1, anchors };
}

/**
 * Offsets in the HTML's text (whitespace and every character but control characters, entities decoded) where a word
 * starts inside a run of non-whitespace (wordStartsInRun); null when its text has no script written without spaces,
 * undefined for markup the readers never build.
 */
function wordStartsInside(html: string): Set<number> | null | undefined {
  let text = '';
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < html.length) {
    const token = TOKEN.exec(html)?.[0];
    if (token === undefined || token === '<' || token === '&') return undefined;
    if (token.startsWith('&')) text += ENTITIES[token]!;
    else if (token === LINE_BREAK) text += ' ';
    else if (!token.startsWith('<')) for (const c of token) if (WHITESPACE.test(c) || !CONTROL.test(c)) text += c;
  }
  if (!hasUnspacedScript(text)) return null;
  const starts = new Set<number>();
  const run = /\S+/gu;
  for (let match = run.exec(text); match; match = run.exec(text)) {
    for (const start of wordStartsInRun(match[0]).slice(1)) starts.add(match.index + start);
  }
  return starts;
}
