/**
 * The card text editor's engine: ProseMirror with a schema holding exactly what the cards service's sanitizer keeps
 * (services/cards/src/domain/rules.ts CARD_SANITIZE_OPTIONS: p, br, b/strong, i/em, u, mark, ul, ol[start], li,
 * blockquote, h1-h6 (the blocks with dir rtl, ltr or auto), a[href] with http(s) links; span is kept there too, but without attributes it means nothing, so
 * it is read as its text). Whatever comes in, the card's stored HTML or a paste from a word processor or a web page,
 * is read through this schema: other elements become their text, styles and attributes are dropped, and a bold or
 * italic written as a style (as Google Docs and Word write them) becomes <strong> or <em>. The server cleans again.
 *
 * Loaded on demand (dynamic import) by the card form only, so the rest of the app does not carry it.
 */
import { baseKeymap, lift, setBlockType, toggleMark, wrapIn } from 'prosemirror-commands';
import { closeHistory, history, redo, undo } from 'prosemirror-history';
import { keymap } from 'prosemirror-keymap';
import { DOMParser as PMDOMParser, DOMSerializer, Fragment, Schema, Slice, type Attrs, type MarkType, type Node as PMNode, type NodeType, type ResolvedPos } from 'prosemirror-model';
import { liftListItem, sinkListItem, splitListItem, wrapInList } from 'prosemirror-schema-list';
import { EditorState, TextSelection, type Command, type Transaction } from 'prosemirror-state';
import { EditorView } from 'prosemirror-view';
import { CELL_LINE_TAGS, SEPARATED_BLOCK_TAGS, TABLE_CELL_SEPARATOR } from '@cards/card-rules';
import { htmlOfPlainText } from './card-rules';
import { inertHtml, parseInertHtml, SEPARATED_BLOCK } from './inert-html';
import 'prosemirror-view/style/prosemirror.css';

/**
 * An href the editor keeps: an absolute http(s) address. The server would keep a relative one too, but on a card page
 * it points into this app, and word processors write their notes and bookmarks as such links (#_ftn1): their text stays.
 */
export function keptHref(href: string | null): string | null {
  if (href === null) return null;
  const value = href.trim();
  if (!/^https?:\/\/[^/\\\s]/i.test(value)) return null;
  try {
    new URL(value);
  } catch {
    return null;
  }
  return value;
}

/** One CSS property of an element's (renamed) style attribute, lower-cased; '' when absent. */
function styleOf(dom: HTMLElement, property: string): string {
  const style = dom.getAttribute('data-pasted-style') ?? '';
  for (const declaration of style.split(';')) {
    const colon = declaration.indexOf(':');
    if (colon > 0 && declaration.slice(0, colon).trim().toLowerCase() === property) return declaration.slice(colon + 1).trim().toLowerCase();
  }
  return '';
}

const YELLOW = /(^|\s)(yellow|#ff0|#ffff00|rgb\(255,\s*255,\s*0\))(\s|!|$)/;
const BOLD_WEIGHT = /^(bold(er)?|[6-9]\d\d)$/;
/** A styled element of a paste that means a mark: matched without consuming it, so one span can be bold and italic. */
const styled = (test: (dom: HTMLElement) => boolean) => ({ tag: '[data-pasted-style]', consuming: false, getAttrs: (dom: HTMLElement) => test(dom) && null });

/**
 * A block's writing direction as the server keeps it (dir rtl, ltr or auto: a right-to-left paragraph pasted from Word
 * or Google Docs says dir="rtl"); null, the default, writes none (the paragraph takes its first letter's direction, see
 * styles.css), so typed text is stored without a dir on every paragraph.
 */
const DIRECTION = { dir: { default: null } };
function directionOf(dom: HTMLElement): { dir: string | null } {
  const dir = dom.getAttribute('dir')?.trim().toLowerCase() ?? '';
  return { dir: dir === 'rtl' || dir === 'ltr' || dir === 'auto' ? dir : null };
}
const withDirection = (node: PMNode, attrs: Record<string, string> = {}): Record<string, string> => (node.attrs.dir ? { ...attrs, dir: node.attrs.dir as string } : attrs);

export const cardSchema = new Schema({
  nodes: {
    doc: { content: 'block+' },
    paragraph: { attrs: DIRECTION, content: 'inline*', group: 'block', parseDOM: [{ tag: 'p', getAttrs: directionOf }], toDOM: (node) => ['p', withDirection(node), 0] },
    heading: {
      attrs: { level: { default: 2 }, ...DIRECTION },
      content: 'inline*',
      group: 'block',
      defining: true,
      parseDOM: [1, 2, 3, 4, 5, 6].map((level) => ({ tag: `h${level}`, getAttrs: (dom: HTMLElement) => ({ level, ...directionOf(dom) }) })),
      toDOM: (node) => [`h${node.attrs.level as number}`, withDirection(node), 0],
    },
    blockquote: { attrs: DIRECTION, content: 'block+', group: 'block', defining: true, parseDOM: [{ tag: 'blockquote', getAttrs: directionOf }], toDOM: (node) => ['blockquote', withDirection(node), 0] },
    bullet_list: { attrs: DIRECTION, content: 'list_item+', group: 'block', parseDOM: [{ tag: 'ul', getAttrs: directionOf }], toDOM: (node) => ['ul', withDirection(node), 0] },
    ordered_list: {
      attrs: { order: { default: 1 }, ...DIRECTION },
      content: 'list_item+',
      group: 'block',
      parseDOM: [{ tag: 'ol', getAttrs: (dom) => ({ order: /^\d{1,9}$/.test(dom.getAttribute('start') ?? '') ? Number(dom.getAttribute('start')) : 1, ...directionOf(dom) }) }],
      toDOM: (node) => ['ol', withDirection(node, node.attrs.order === 1 ? {} : { start: String(node.attrs.order) }), 0],
    },
    // Any block, as the server keeps it (<li><h3>...</h3><p>...</p></li>); a list item's text is wrapped in a paragraph.
    list_item: { attrs: DIRECTION, content: 'block+', defining: true, parseDOM: [{ tag: 'li', getAttrs: directionOf }], toDOM: (node) => ['li', withDirection(node), 0] },
    text: { group: 'inline' },
    hard_break: { inline: true, group: 'inline', selectable: false, parseDOM: [{ tag: 'br' }], toDOM: () => ['br'] },
  },
  marks: {
    link: {
      attrs: { href: {} },
      inclusive: false,
      parseDOM: [{ tag: 'a[href]', getAttrs: (dom) => (keptHref(dom.getAttribute('href')) === null ? false : { href: keptHref(dom.getAttribute('href')) }) }],
      toDOM: (mark) => ['a', { href: mark.attrs.href as string }, 0],
    },
    strong: {
      parseDOM: [
        { tag: 'strong' },
        // Google Docs wraps a whole paste in <b style="font-weight:normal">.
        { tag: 'b', getAttrs: (dom) => styleOf(dom, 'font-weight') !== 'normal' && null },
        styled((dom) => BOLD_WEIGHT.test(styleOf(dom, 'font-weight'))),
      ],
      toDOM: () => ['strong', 0],
    },
    em: { parseDOM: [{ tag: 'em' }, { tag: 'i' }, styled((dom) => styleOf(dom, 'font-style') === 'italic')], toDOM: () => ['em', 0] },
    underline: { parseDOM: [{ tag: 'u' }, styled((dom) => /underline/.test(styleOf(dom, 'text-decoration') || styleOf(dom, 'text-decoration-line')))], toDOM: () => ['u', 0] },
    // Word writes a highlight as background:yellow (mso-highlight), Google Docs as background-color:#ffff00.
    mark: { parseDOM: [{ tag: 'mark' }, styled((dom) => YELLOW.test(`${styleOf(dom, 'background')} ${styleOf(dom, 'background-color')} ${styleOf(dom, 'mso-highlight')}`))], toDOM: () => ['mark', 0] },
  },
});

const { nodes, marks } = cardSchema;

/**
 * Elements that end a line inside a table cell (a row becomes one paragraph, so a cell's blocks become lines in it):
 * @cards/card-rules CELL_LINE_TAGS, the list the cards service's sanitizer makes a table's rows by too.
 */
const CELL_BLOCKS = new Set(CELL_LINE_TAGS.map((tag) => tag.toUpperCase()));

/**
 * A cell's content as inline nodes: its blocks' content one after another, a line break between a block and the text
 * before or after it (whitespace alone is no text), none at the end.
 */
function inlineContent(node: Node, out: Node[], after = { block: false }): Node[] {
  // A line break after text since the last one (whitespace between blocks, as Word writes it, starts no line).
  const lineBreak = (doc: Document) => {
    for (let i = out.length - 1; i >= 0 && out[i]!.nodeName !== 'BR'; i--) {
      if (out[i]!.textContent?.trim()) {
        out.push(doc.createElement('br'));
        return;
      }
    }
  };
  for (const child of [...node.childNodes]) {
    if (child instanceof Element && CELL_BLOCKS.has(child.tagName)) {
      lineBreak(child.ownerDocument);
      inlineContent(child, out, after);
      after.block = true;
    } else {
      if (after.block && child.textContent?.trim()) {
        lineBreak(child.ownerDocument!);
        after.block = false;
      }
      out.push(child);
    }
  }
  while (out.length > 0 && out[out.length - 1]!.nodeName === 'BR') out.pop();
  return out;
}

/**
 * Tables (a card holds none) as text rows: each row one paragraph, its cells' text separated by ' | ', a caption a
 * paragraph of its own; rows without text are left out. Reading the cells' text one after another glued them together
 * ("YearRate20194.5%", Google Sheets, Word).
 */
function tablesAsRows(body: HTMLElement): void {
  const doc = body.ownerDocument;
  // The innermost first: a table in a cell becomes rows (then lines) of that cell.
  for (const table of [...body.querySelectorAll('table')].reverse()) {
    const paragraphs: Node[] = [];
    const caption = (table as HTMLTableElement).caption;
    if (caption && caption.textContent?.trim()) {
      const p = doc.createElement('p');
      p.append(...inlineContent(caption, []));
      paragraphs.push(p);
    }
    for (const row of [...(table as HTMLTableElement).rows]) {
      const cells = [...row.cells];
      if (cells.every((cell) => !cell.textContent?.trim())) continue;
      const p = doc.createElement('p');
      cells.forEach((cell, i) => {
        if (i > 0) p.append(TABLE_CELL_SEPARATOR);
        p.append(...inlineContent(cell, []));
      });
      paragraphs.push(p);
    }
    table.replaceWith(...paragraphs);
  }
}

/**
 * Elements the allow-list drops whose content is a block of its own (@cards/card-rules SEPARATED_BLOCK_TAGS, the list
 * the cards service keeps texts apart by), other than the ones ProseMirror's parser already reads as blocks (div, pre,
 * hr, dl, dd, figure, section...: renaming those changes nothing) and a table's parts (tablesAsRows reads them).
 */
const SEPARATED = new Set(SEPARATED_BLOCK_TAGS.filter((tag) => !['div', 'pre', 'hr', 'caption', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th'].includes(tag)).map((tag) => tag.toUpperCase()));
/** Where text is one block's (a line break keeps texts apart there); LINE_ROOTS with pre, whose lines are kept. */
const INLINE_ROOTS = new Set(['P', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6']);
const LINE_ROOTS = new Set([...INLINE_ROOTS, 'PRE']);
/** Where a block may stand (a dropped block read as one there). */
const BLOCK_ROOTS = new Set(['BODY', 'DIV', 'LI', 'UL', 'OL', 'BLOCKQUOTE']);
/** Marks a line break this pass put in, left out again where no text stands on one side of it. */
const SEPARATING = 'data-separating';
/** SEPARATING's value on a pre's line ends: kept between the pre's lines of text, an empty line's too (a second <br>). */
const PRE_LINE = 'pre-line';

/** Whether `element` stands in a paragraph or heading (its nearest enclosing block is one), not where blocks stand. */
function inParagraph(element: Element): boolean {
  for (let up = element.parentElement; up; up = up.parentElement) {
    if (INLINE_ROOTS.has(up.tagName)) return true;
    if (BLOCK_ROOTS.has(up.tagName) || up.tagName === 'PRE') return false;
  }
  return false;
}

function separatingBreak(doc: Document, kind = ''): HTMLElement {
  const br = doc.createElement('br');
  br.setAttribute(SEPARATING, kind);
  return br;
}

/** `element` replaced by a new `tagName` element holding its children and its (kept, inert) attributes. */
function renamed(element: Element, tagName: string): HTMLElement {
  const replacement = element.ownerDocument.createElement(tagName);
  for (const { name, value } of [...element.attributes]) replacement.setAttribute(name, value);
  replacement.append(...element.childNodes);
  element.replaceWith(replacement);
  return replacement;
}

/**
 * The other dropped blocks keep their text apart, as the cards service's sanitizer keeps them (blocks-apart.ts):
 * ProseMirror reads <details>, <summary>, <nav>, <main>, <dt>, <search>, <center>, <menu>, <legend>... as inline, so
 * "<details><summary>Sum</summary>Body</details>" was "SumBody". Where blocks stand, each is read as a <div> (a
 * paragraph of its own); in a paragraph or heading it is a line of it (a line break where its text and its neighbour's
 * would run together). A <pre>'s lines stay lines (ProseMirror joins them with a space), its empty lines between lines
 * of text too (two line breaks), as the cards service keeps them (blocks-apart.ts Sink.preLineEnd).
 */
function separatedBlocksApart(body: HTMLElement): void {
  const doc = body.ownerDocument;
  for (const element of [...body.querySelectorAll('*')]) {
    const tag = element.tagName;
    const pre = tag === 'PRE';
    if (pre) {
      const walker = doc.createTreeWalker(element, NodeFilter.SHOW_TEXT);
      const texts: Text[] = [];
      for (let node = walker.nextNode(); node; node = walker.nextNode()) if (node.textContent?.includes('\n')) texts.push(node as Text);
      for (const text of texts) {
        const lines = (text.textContent ?? '').split(/\r\n?|\n/);
        text.replaceWith(...lines.flatMap((line, i) => (i === 0 ? [line] : [separatingBreak(doc, PRE_LINE), line])));
      }
    }
    // A block the inert reader wrote as a marked span (an xmp, a table's part outside a table) is one of them too.
    if (!(pre || tag === 'HR' || SEPARATED.has(tag) || element.hasAttribute(SEPARATED_BLOCK))) continue;
    if (inParagraph(element)) {
      if (tag === 'HR') element.replaceWith(separatingBreak(doc));
      else {
        const span = renamed(element, 'span');
        span.before(separatingBreak(doc));
        span.after(separatingBreak(doc));
      }
    } else if (!pre && tag !== 'HR') {
      renamed(element, 'div');
    }
  }
  for (const root of body.querySelectorAll('p, h1, h2, h3, h4, h5, h6, pre')) {
    if (root.parentElement?.closest('p, h1, h2, h3, h4, h5, h6, pre')) continue;
    separatingBreaksKeptBetweenText(root);
  }
}

/**
 * The line breaks separatedBlocksApart put in `root` kept only between text (whitespace alone is no text): none at its
 * start or end, no two in a row, but for a pre's line ends (PRE_LINE), each kept between text of the root: an empty line.
 */
function separatingBreaksKeptBetweenText(root: Element): void {
  const walker = root.ownerDocument.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  const nodes: Node[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) if (node.nodeType === Node.TEXT_NODE || node.nodeName === 'BR') nodes.push(node);
  const isText = (node: Node) => node.nodeType === Node.TEXT_NODE && Boolean(node.textContent?.trim());
  let textBefore = false;
  let anyTextBefore = false;
  nodes.forEach((node, i) => {
    if (node.nodeType === Node.TEXT_NODE) {
      textBefore ||= isText(node);
      anyTextBefore ||= textBefore;
      return;
    }
    const br = node as Element;
    if (br.hasAttribute(SEPARATING)) {
      const preLine = br.getAttribute(SEPARATING) === PRE_LINE;
      let textAfter = false;
      for (let j = i + 1; j < nodes.length && (preLine || nodes[j]!.nodeName !== 'BR') && !textAfter; j++) textAfter = isText(nodes[j]!);
      br.removeAttribute(SEPARATING);
      if (!(preLine ? anyTextBefore : textBefore) || !textAfter) {
        br.remove();
        return;
      }
    }
    textBefore = false;
  });
}

/** The bullet or number Word writes as text before a list paragraph's text ("·&nbsp;&nbsp;", "o ", "1.", "a)", "iv."). */
const WORD_LIST_MARKER = /^[\s\u00a0]*([·•▪■●◦§o\-–]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)]|\(?[ivxlcdmIVXLCDM]{1,7}[.)])[\s\u00a0]+/;

/** Removes the first `count` characters of an element's text. */
function dropLeadingText(element: Element, count: number): void {
  const walker = element.ownerDocument.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node && count > 0; node = walker.nextNode()) {
    const text = node.textContent ?? '';
    node.textContent = text.slice(count);
    count -= Math.min(count, text.length);
  }
}

/**
 * Word's list paragraphs (<p class=MsoListParagraph style="mso-list:l0 level1 lfo1">, the bullet written as text:
 * "·&nbsp;&nbsp;&nbsp;") as list items, nested by their level; numbered ones (1., a), iv.) as a numbered list.
 */
function wordListsAsLists(body: HTMLElement): void {
  const doc = body.ownerDocument;
  let stack: { list: HTMLElement; level: number }[] = [];
  let previous: Element | null = null;
  for (const p of [...body.querySelectorAll('p')]) {
    const style = p.getAttribute('data-pasted-style') ?? '';
    const level = /mso-list:\s*l\d+\s+level(\d)/i.exec(style);
    const marker = WORD_LIST_MARKER.exec(p.textContent ?? '');
    const listParagraph = level !== null || /MsoListParagraph/i.test(p.getAttribute('data-pasted-class') ?? '') || /^[\s\u00a0]*·\u00a0/.test(p.textContent ?? '');
    if (!listParagraph || !marker) continue;
    dropLeadingText(p, marker[0].length);
    let before = p.previousSibling;
    while (before && before.nodeType === Node.TEXT_NODE && !before.textContent?.trim()) before = before.previousSibling;
    if (before !== previous) stack = [];
    const depth = level ? Number(level[1]) : 1;
    const kind = marker[1] !== 'o' && /[0-9a-zA-Z]/.test(marker[1]!) ? 'ol' : 'ul';
    while (stack.length > 0 && stack[stack.length - 1]!.level > depth) stack.pop();
    if (stack.length === 0 || stack[stack.length - 1]!.level < depth) {
      const list = doc.createElement(kind);
      if (stack.length === 0) p.before(list);
      else (stack[stack.length - 1]!.list.lastElementChild ?? stack[stack.length - 1]!.list).append(list);
      stack.push({ list, level: depth });
    }
    const item = doc.createElement('li');
    stack[stack.length - 1]!.list.append(item);
    // The paragraph goes into the item; the list stands where the run of paragraphs began.
    item.append(p);
    previous = stack[0]!.list;
  }
}

/**
 * Stands for the spaces that end a paragraph's or heading's text while ProseMirror's parser reads it (it drops
 * whitespace at a block's end, as HTML shows it): a noncharacter, which no text holds (one that does has it read as a
 * space).
 */
const KEPT_SPACE = '\ufdd0';

/** Elements whose text is a block of its own (a line where they stand in a paragraph): a space ending it ends no text typed. */
const OWN_BLOCKS = new Set(CELL_LINE_TAGS.map((tag) => tag.toUpperCase()));

/**
 * The spaces (U+0020 only) that end the text of each paragraph and heading after some text, kept as KEPT_SPACE: the
 * space a person typed last ("Some words ", then the HTML view and back) stays. Whitespace holding a line break or a tab
 * lays out the HTML and goes, as before; so do spaces ending a dropped block's text in the paragraph (a line of it) and
 * a table's (its rows are made of its cells' text). Read before those are rewritten. Whether any was kept.
 */
function endSpacesKept(body: HTMLElement): boolean {
  let kept = false;
  for (const block of body.querySelectorAll('p, h1, h2, h3, h4, h5, h6')) {
    if (block.closest('table')) continue;
    const walker = block.ownerDocument.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    let last: Node | null = null;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) last = node;
    const value = last?.textContent ?? '';
    const spaces = / +$/.exec(value);
    if (!last || !spaces || !/\S/.test(spaces.index > 0 ? value.slice(0, spaces.index) : (block.textContent ?? ''))) continue;
    let inOwnBlock = false;
    for (let up = last.parentElement; up && up !== block && !inOwnBlock; up = up.parentElement) inOwnBlock = OWN_BLOCKS.has(up.tagName) || up.hasAttribute(SEPARATED_BLOCK);
    if (inOwnBlock) continue;
    last.textContent = value.slice(0, spaces.index) + KEPT_SPACE;
    kept = true;
  }
  return kept;
}

/** The node with each KEPT_SPACE in its text back as a space. */
function keptSpacesRestored(node: PMNode): PMNode {
  if (node.isText) return node.text!.includes(KEPT_SPACE) ? cardSchema.text(node.text!.split(KEPT_SPACE).join(' '), node.marks) : node;
  if (node.childCount === 0) return node;
  const children: PMNode[] = [];
  node.forEach((child) => children.push(keptSpacesRestored(child)));
  return node.copy(Fragment.fromArray(children));
}

/**
 * HTML from outside read inertly (./inert-html), with tables, the other dropped blocks and Word's list paragraphs
 * rewritten to what a card holds; the spaces ending a paragraph's or heading's text kept (endSpacesKept: whether any).
 */
function domOfHtml(html: string): { body: HTMLElement; endSpaces: boolean } {
  const body = parseInertHtml(html);
  const endSpaces = endSpacesKept(body);
  tablesAsRows(body);
  separatedBlocksApart(body);
  wordListsAsLists(body);
  return { body, endSpaces };
}

/** Card HTML (the stored card's, or typed in the HTML view) as an editor document, through the schema; a space ending a paragraph's or heading's text kept. */
export function documentOfHtml(html: string): PMNode {
  const { body, endSpaces } = domOfHtml(html);
  const doc = PMDOMParser.fromSchema(cardSchema).parse(body);
  return endSpaces ? keptSpacesRestored(doc) : doc;
}

/**
 * Pasted plain text as the HTML view reads it (./card-rules htmlOfPlainText): a blank line starts a paragraph, a single
 * line break is a line break.
 */
export function sliceOfPlainText(text: string, $context: ResolvedPos): Slice {
  // The spaces around the text stay: a word pasted after another keeps the space between them.
  const parsed = PMDOMParser.fromSchema(cardSchema).parseSlice(parseInertHtml(htmlOfPlainText(text, { trim: false })), { preserveWhitespace: true, context: $context });
  return Slice.maxOpen(parsed.content, true);
}

/**
 * A paste of several blocks keeps them blocks (docs/web.md): ProseMirror joins the first pasted block's text to the
 * paragraph at the cursor and the last one's to the text after it whatever they are, so a pasted heading became part
 * of the paragraph ("LeftTitle") and a list's last item took the paragraph's rest. Here a pasted paragraph at either end
 * still joins the text at the cursor, as word processors join it, but a heading, list or quote there stays whole: the
 * slice is closed at that end and the paragraph is split around it. Part of one block (text, part of one list item
 * copied in the editor) is inline text and goes in at the cursor, as before.
 */
export function blocksKeptWhole(slice: Slice): Slice {
  const first = slice.content.firstChild;
  if (!first || first.isInline) return slice;
  // One block open down to one textblock at both ends: inline text.
  let node: PMNode = first;
  let depth = 1;
  while (!node.isTextblock && node.childCount === 1) {
    node = node.firstChild!;
    depth++;
  }
  if (slice.content.childCount === 1 && node.isTextblock && depth <= slice.openStart && depth <= slice.openEnd) return slice;
  const joins = (edge: PMNode, open: number) => open === 1 && edge.type === nodes.paragraph;
  const openStart = joins(first, slice.openStart) ? slice.openStart : 0;
  const openEnd = joins(slice.content.lastChild!, slice.openEnd) ? slice.openEnd : 0;
  return openStart === slice.openStart && openEnd === slice.openEnd ? slice : new Slice(slice.content, openStart, openEnd);
}

/** The document as card HTML: only allow-listed elements; '' when it holds no text. */
export function htmlOfDocument(doc: PMNode): string {
  if (doc.textContent.trim() === '' && doc.childCount <= 1) return '';
  const holder = document.createElement('div');
  holder.appendChild(DOMSerializer.fromSchema(cardSchema).serializeFragment(doc.content));
  return holder.innerHTML;
}

/** The paste of HTML, cleaned as documentOfHtml cleans: what the editor would insert. For tests and the HTML view. */
export function cleanHtml(html: string): string {
  return htmlOfDocument(documentOfHtml(html));
}

export type BlockKind = 'paragraph' | 'h1' | 'h2' | 'h3' | 'h4' | 'h5' | 'h6' | 'mixed';

/** What the toolbar shows as pressed at the selection. */
export interface FormatState {
  strong: boolean;
  em: boolean;
  underline: boolean;
  mark: boolean;
  link: string | null;
  bulletList: boolean;
  orderedList: boolean;
  blockquote: boolean;
  block: BlockKind;
  /** Whether each text style can apply to the selection (false for one it already has, too). */
  blocks: Record<Exclude<BlockKind, 'mixed'>, boolean>;
  canUndo: boolean;
  canRedo: boolean;
}

function markActive(state: EditorState, type: MarkType): boolean {
  const { from, $from, to, empty } = state.selection;
  if (empty) return Boolean(type.isInSet(state.storedMarks ?? $from.marks()));
  return state.doc.rangeHasMark(from, to, type);
}

function insideNode(state: EditorState, type: NodeType): boolean {
  const { $from } = state.selection;
  for (let d = $from.depth; d > 0; d--) if ($from.node(d).type === type) return true;
  return false;
}

/** The innermost list around the selection. */
function innermostList(state: EditorState): NodeType | null {
  const { $from } = state.selection;
  for (let d = $from.depth; d > 0; d--) {
    const type = $from.node(d).type;
    if (type === nodes.bullet_list || type === nodes.ordered_list) return type;
  }
  return null;
}

function linkAt(state: EditorState): string | null {
  const { from, to } = linkAround(state) ?? state.selection;
  let href: string | null = null;
  state.doc.nodesBetween(from, to, (node) => {
    const mark = marks.link.isInSet(node.marks);
    if (mark && href === null) href = mark.attrs.href as string;
  });
  return href;
}

export function formatState(state: EditorState): FormatState {
  const { $from, $to } = state.selection;
  let block: BlockKind = 'paragraph';
  const parent = $from.parent;
  if (parent !== $to.parent) block = 'mixed';
  else if (parent.type === nodes.heading) block = `h${parent.attrs.level as number}` as BlockKind;
  const list = innermostList(state);
  return {
    strong: markActive(state, marks.strong),
    em: markActive(state, marks.em),
    underline: markActive(state, marks.underline),
    mark: markActive(state, marks.mark),
    link: linkAt(state),
    bulletList: list === nodes.bullet_list,
    orderedList: list === nodes.ordered_list,
    blockquote: insideNode(state, nodes.blockquote),
    block,
    blocks: { paragraph: setBlock('paragraph')(state), h1: setBlock('h1')(state), h2: setBlock('h2')(state), h3: setBlock('h3')(state), h4: setBlock('h4')(state), h5: setBlock('h5')(state), h6: setBlock('h6')(state) },
    canUndo: undo(state),
    canRedo: redo(state),
  };
}

/** A list button: wraps the selection in that list, turns the list around it into that kind, or lifts it out. */
function toggleList(type: NodeType): Command {
  return (state, dispatch) => {
    const current = innermostList(state);
    if (current === type) return liftListItem(nodes.list_item)(state, dispatch);
    if (current) {
      const { $from } = state.selection;
      for (let d = $from.depth; d > 0; d--) {
        if ($from.node(d).type === current) {
          if (dispatch) dispatch(state.tr.setNodeMarkup($from.before(d), type, type === nodes.ordered_list ? { order: 1 } : null));
          return true;
        }
      }
    }
    return wrapInList(type)(state, dispatch);
  };
}

function toggleBlockquote(): Command {
  return (state, dispatch) => (insideNode(state, nodes.blockquote) ? lift(state, dispatch) : wrapIn(nodes.blockquote)(state, dispatch));
}

/** Sets the selection's blocks to a paragraph or a heading of the level. */
export function setBlock(kind: Exclude<BlockKind, 'mixed'>): Command {
  return kind === 'paragraph' ? setBlockType(nodes.paragraph) : setBlockType(nodes.heading, { level: Number(kind.slice(1)) } as Attrs);
}

/** The extent of the link at an empty selection (its neighbouring text nodes with the same link mark), or null. */
function linkAround(state: EditorState): { from: number; to: number } | null {
  const { $from, empty } = state.selection;
  if (!empty) return null;
  const start = $from.start();
  let run: { from: number; to: number; href: unknown } | null = null;
  let found: { from: number; to: number } | null = null;
  $from.parent.forEach((child, offset) => {
    const childFrom = start + offset;
    const childTo = childFrom + child.nodeSize;
    const mark = marks.link.isInSet(child.marks);
    if (!mark) run = null;
    else if (run && run.href === mark.attrs.href && run.to === childFrom) run.to = childTo;
    else run = { from: childFrom, to: childTo, href: mark.attrs.href };
    if (run && run.from <= $from.pos && run.to >= $from.pos && (run.from < $from.pos || run.to > $from.pos)) found = { from: run.from, to: run.to };
  });
  return found;
}

/** Links the selection (or the link the cursor is in) to href; with no selection, inserts href as linked text. */
export function setLink(href: string): Command {
  return (state, dispatch) => {
    const { from, to } = linkAround(state) ?? state.selection;
    if (!dispatch) return true;
    const mark = marks.link.create({ href });
    if (from === to) {
      const tr = state.tr.insert(from, cardSchema.text(href, [mark]));
      dispatch(tr.setSelection(TextSelection.create(tr.doc, from + href.length)).removeStoredMark(marks.link).scrollIntoView());
      return true;
    }
    dispatch(state.tr.removeMark(from, to, marks.link).addMark(from, to, mark).scrollIntoView());
    return true;
  };
}

/** Removes links from the selection, or the whole link the cursor is in. */
export const removeLink: Command = (state, dispatch) => {
  const { from, to } = linkAround(state) ?? state.selection;
  if (from === to) return false;
  if (dispatch) dispatch(state.tr.removeMark(from, to, marks.link));
  return true;
};

export const commands = {
  strong: toggleMark(marks.strong),
  em: toggleMark(marks.em),
  underline: toggleMark(marks.underline),
  mark: toggleMark(marks.mark),
  bulletList: toggleList(nodes.bullet_list),
  orderedList: toggleList(nodes.ordered_list),
  blockquote: toggleBlockquote(),
  undo,
  redo,
};

export interface CardEditorOptions {
  /** The contenteditable element's attributes (id, aria-labelledby, aria-describedby...). */
  attributes: Record<string, string>;
  /** Called with the card HTML after each change of the document, and with the state after every transaction. */
  onChange(html: string): void;
  onState(state: FormatState): void;
  /** Mod-K: the page asks for a link address. */
  onLinkRequest(): void;
}

/** A card editor in `place`, holding `html` read through the schema. Tab still moves focus out of it. */
export function createCardEditor(place: HTMLElement, html: string, options: CardEditorOptions): EditorView {
  const hardBreak: Command = (state, dispatch) => {
    if (dispatch) dispatch(state.tr.replaceSelectionWith(nodes.hard_break.create()).scrollIntoView());
    return true;
  };
  const state = EditorState.create({
    doc: documentOfHtml(html),
    plugins: [
      history(),
      keymap({
        'Mod-z': undo,
        'Shift-Mod-z': redo,
        'Mod-y': redo,
        'Mod-b': commands.strong,
        'Mod-i': commands.em,
        'Mod-u': commands.underline,
        'Mod-Shift-h': commands.mark,
        'Mod-Shift-8': commands.bulletList,
        'Mod-Shift-7': commands.orderedList,
        'Mod-Shift-9': commands.blockquote,
        'Mod-Alt-0': setBlock('paragraph'),
        'Mod-Alt-2': setBlock('h2'),
        'Mod-Alt-3': setBlock('h3'),
        'Mod-Alt-4': setBlock('h4'),
        'Mod-k': () => {
          options.onLinkRequest();
          return true;
        },
        'Shift-Enter': hardBreak,
        Enter: splitListItem(nodes.list_item),
        'Mod-]': sinkListItem(nodes.list_item),
        'Mod-[': liftListItem(nodes.list_item),
      }),
      keymap(baseKeymap),
    ],
  });
  const view: EditorView = new EditorView(place, {
    state,
    attributes: editorAttributes(options.attributes),
    // A paste from elsewhere is cleaned to the allow-list before ProseMirror reads it; one copied inside the editor
    // (ProseMirror marks it data-pm-slice) is already clean and keeps its shape.
    // Either way it is read inertly first (./inert-html), so no style or handler reaches a parser.
    transformPastedHTML: (html) => (html.includes('data-pm-slice') ? inertHtml(html) : cleanHtml(html)),
    clipboardTextParser: (text, $context) => sliceOfPlainText(text, $context),
    transformPasted: (slice) => blocksKeptWhole(slice),
    dispatchTransaction(tr: Transaction) {
      const next = view.state.apply(tr);
      view.updateState(next);
      if (tr.docChanged) options.onChange(htmlOfDocument(next.doc));
      options.onState(formatState(next));
    },
  });
  options.onState(formatState(view.state));
  return view;
}

/** Replaces the view's document with `html` read through the schema, as one undoable change. */
export function replaceDocument(view: EditorView, html: string): void {
  const doc = documentOfHtml(html);
  // Its own step in the history, not joined to the typing just before it.
  view.dispatch(closeHistory(view.state.tr).replaceWith(0, view.state.doc.content.size, doc.content));
}

/** The editable element's attributes: the page's (id, label, description, invalid) and the editor's own. */
export function editorAttributes(attributes: Record<string, string>): Record<string, string> {
  return { ...attributes, role: 'textbox', 'aria-multiline': 'true', class: 'rich-text' };
}

/** Runs a toolbar command on the view and, unless told not to, gives the editor focus back. */
export function run(view: EditorView, command: Command, { focus = true } = {}): boolean {
  const done = command(view.state, view.dispatch, view);
  if (focus) view.focus();
  return done;
}
