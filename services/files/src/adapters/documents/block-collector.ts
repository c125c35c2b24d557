import { createRequire } from 'node:module';
import { DepthLimitedParser } from '@cards/html-parsing';
import type { DocumentBlock, ListPlace } from '../../domain/model';
import { CELL_LINE_TAGS, escapeHtml, hasVisibleText, TABLE_CELL_SEPARATOR } from '@cards/card-rules';

// Plain CommonJS shared with the parser worker's .doc reading (word-documents.mjs), which runs without TypeScript.
const { inScriptForms } = require('./script-forms.cjs') as { inScriptForms(text: string, kind: 'sup' | 'sub'): string | null };

const INLINE_TAGS: Record<string, string> = { strong: 'strong', b: 'strong', em: 'em', i: 'em', u: 'u' };

/** Gathers text into headings and paragraphs while a markup parser walks a document. */
class BlockCollector {
  readonly blocks: DocumentBlock[] = [];
  private current: DocumentBlock | null = null;

  private openLink = false;
  private open: string[] = [];
  /** Written before the block's next visible text: the separator before a table cell's text, or a cell's line break. */
  private pending: Separator | null = null;
  /** Where in the block's HTML the pending text goes: before any element opened since. */
  private pendingAt = 0;
  /** The cells the open table row has had (start() opens a row). */
  private cellsInRow = 0;
  /** Whether the document's paragraph being read is set right to left (direction()). */
  private paragraphRtl = false;

  start(kind: DocumentBlock['kind'], level?: number, list?: ListPlace): void {
    this.end();
    this.current = { kind, text: '', links: [], html: '', ...(kind === 'heading' ? { level } : {}), ...(list ? { list } : {}) };
    this.pending = null;
    this.pendingAt = 0;
    this.cellsInRow = 0;
  }

  /**
   * The direction of the document's paragraph whose text comes next (said at its start, or by the .docx reading's mark
   * before its text): a block is right to left (DocumentBlock.dir) when the paragraph that gives it its first visible text
   * is (a table row: its first cell's paragraph with text; a list item: its paragraph).
   */
  direction(rtl: boolean): void {
    this.paragraphRtl = rtl;
  }

  /** Whether the open block has no visible text yet (a list item's paragraph continues it rather than starting anew). */
  get isBlank(): boolean {
    return this.current !== null && !hasVisibleText(this.current.text);
  }

  /** Whether a block is open (text now goes into it rather than into a new paragraph). */
  get isOpen(): boolean {
    return this.current !== null;
  }

  /**
   * Puts a footnote or endnote (inlineNote) at its reference; one referenced in a heading is the paragraph after the
   * heading, so the heading stays a title (and the cards' tag) and the note's text is body text.
   */
  note(text: string): void {
    text = withoutMarkCharacters(text);
    if (!text) return;
    if (this.current?.kind === 'heading') this.headingNotes.push(text.trim());
    else this.text(text);
  }

  /** Notes referenced in the open heading. */
  private headingNotes: string[] = [];
  /** Blocks of text boxes met inside the open block, which follow it. */
  private boxBlocks: DocumentBlock[] = [];
  /** For each text box being read: the state of the block it sits in, and where its own blocks start. */
  private readonly boxes: { current: DocumentBlock | null; openLink: boolean; open: string[]; pending: Separator | null; pendingAt: number; cellsInRow: number; paragraphRtl: boolean; headingNotes: string[]; boxBlocks: DocumentBlock[]; from: number }[] = [];

  /**
   * A text box (a frame's text) starts inside the open paragraph: its paragraphs are read as blocks of their own and
   * follow that paragraph (as mammoth places a Word text box's), which goes on whole after the box.
   */
  enterBox(): void {
    const { current, openLink, open, pending, pendingAt, cellsInRow, paragraphRtl, headingNotes, boxBlocks } = this;
    this.boxes.push({ current, openLink, open, pending, pendingAt, cellsInRow, paragraphRtl, headingNotes, boxBlocks, from: this.blocks.length });
    this.current = null;
    this.paragraphRtl = false;
    this.openLink = false;
    this.open = [];
    this.pending = null;
    this.pendingAt = 0;
    this.headingNotes = [];
    this.boxBlocks = [];
  }

  leaveBox(): void {
    const outer = this.boxes.pop();
    if (!outer) return;
    this.end();
    const read = this.blocks.splice(outer.from);
    ({ current: this.current, openLink: this.openLink, open: this.open, pending: this.pending, pendingAt: this.pendingAt, cellsInRow: this.cellsInRow, paragraphRtl: this.paragraphRtl, headingNotes: this.headingNotes, boxBlocks: this.boxBlocks } = outer);
    if (this.current) this.boxBlocks.push(...read);
    else this.blocks.push(...read);
  }

  /**
   * The separator written before the next visible text of the open block, when it already holds some (a cell's next
   * line); a line break waiting is not doubled.
   */
  separate(separator: Separator): void {
    if (this.pending || !this.current || !hasVisibleText(this.current.text)) return;
    this.pending = separator;
    this.pendingAt = this.current.html?.length ?? 0;
  }

  /**
   * A table row's cell starts (`count` of them: an .odt's repeated cells): after the row's first, each owes a cell
   * separator, an empty cell's too, so the row's columns stay in place ('Name | | Rate', '| b | c' once the block's
   * whitespace is collapsed), as the cards service writes a table's rows. The separators are written before the row's
   * next visible text, or at the row's end (endRow) when it has some; they take the place of a line break still waiting
   * (the line had no text).
   */
  cell(count = 1): void {
    const block = this.ensure();
    const owed = Math.min(count, this.cellsInRow === 0 ? count - 1 : count);
    this.cellsInRow += count;
    if (owed <= 0) return;
    const cells = (this.pending?.cells ?? 0) + owed;
    if (!this.pending) this.pendingAt = block.html?.length ?? 0;
    this.pending = { text: TABLE_CELL_SEPARATOR.repeat(cells), html: escapeHtml(TABLE_CELL_SEPARATOR).repeat(cells), cells };
  }

  /** A table row ends: the separators of its last empty cells are written when it has text, as the cards service keeps them. */
  endRow(): void {
    if (this.pending?.cells && this.current && hasVisibleText(this.current.text)) {
      this.current.text += this.pending.text;
      this.current.html += this.pending.html;
    }
    this.end();
  }

  private ensure(): DocumentBlock {
    if (!this.current) this.current = { kind: 'paragraph', text: '', links: [], html: '' };
    return this.current;
  }

  /** Opens an inline element (strong, em, u) in the block's HTML. */
  inline(tag: string): void {
    const name = INLINE_TAGS[tag];
    if (!name) return;
    this.releaseScripts();
    this.ensure().html += `<${name}>`;
    this.open.push(name);
  }

  closeInline(tag: string): void {
    const name = INLINE_TAGS[tag];
    if (!name || !this.current) return;
    this.releaseScripts();
    const at = this.open.lastIndexOf(name);
    if (at < 0) return;
    // Close in nesting order so the HTML stays well-formed.
    for (const t of this.open.splice(at).reverse()) this.current.html += `</${t}>`;
  }

  closeLink(): void {
    if (this.openLink) this.releaseScripts();
    if (this.openLink && this.current) this.current.html += '</a>';
    this.openLink = false;
  }

  end(): void {
    while (this.scripts.length > 0) this.endScript();
    this.closeLink();
    for (const t of this.open.splice(0).reverse()) if (this.current) this.current.html += `</${t}>`;
    this.pending = null;
    const block = this.current;
    this.current = null;
    if (!block) return;
    block.text = block.text.replace(/\s+/g, ' ').trim();
    // A cell's line break (the collector's only <br>: text is escaped) has no whitespace beside it, as a line has none
    // at its start or end (the cards service writes a table's rows so: blocks-apart.ts).
    block.html = (block.html ?? '').replace(/\s+/g, ' ').replace(/ ?<br> ?/g, '<br>').trim();
    if (hasVisibleText(block.text)) this.blocks.push(block);
    const notes = this.headingNotes.splice(0).join(' ');
    if (hasVisibleText(notes)) this.blocks.push({ kind: 'paragraph', text: notes, links: [], html: escapeHtml(notes) });
    this.blocks.push(...this.boxBlocks.splice(0));
  }

  /**
   * A line break inside a paragraph (Shift+Enter: a .docx's w:br, an .odt's text:line-break): a <br> in the block's HTML
   * (the card allow-list has it) and a space in its text, written before the block's next visible text, so none starts
   * or ends a block and two in a row are one; in a heading (a title, the cards' tag) a space.
   */
  lineBreak(): void {
    if (this.current?.kind === 'heading' || this.scripts.length > 0) this.text(' ');
    else this.separate(CELL_LINE);
  }

  /**
   * Open superscript or subscript runs, innermost last: their text, written when the run ends (endScript); a released
   * run (markup met inside it) passes its text on as it comes.
   */
  private readonly scripts: { kind: 'sup' | 'sub'; text: string; released: boolean }[] = [];
  /** The runs from this index on are not released (released ones are always the outermost): each is released once. */
  private firstHeld = 0;

  /** A superscript or subscript run starts (.docx <sup>/<sub>, an .odt span raised or lowered). */
  beginScript(kind: 'sup' | 'sub'): void {
    this.scripts.push({ kind, text: '', released: false });
  }

  /** Markup (a link, emphasis) inside a superscript or subscript run: the runs' text so far is written as it is, before it. */
  private releaseScripts(): void {
    if (this.firstHeld >= this.scripts.length) return;
    let held = '';
    for (let i = this.firstHeld; i < this.scripts.length; i++) {
      const script = this.scripts[i]!;
      held += script.text;
      script.text = '';
      script.released = true;
    }
    this.firstHeld = this.scripts.length;
    this.text(held);
  }

  /**
   * The run ends: its text in Unicode's superscript or subscript characters when every character has one ("10⁻³",
   * "H₂O"), else as it is (the card allow-list has no sup or sub: DESIGN.md).
   */
  endScript(): void {
    const script = this.scripts.pop();
    this.firstHeld = Math.min(this.firstHeld, this.scripts.length);
    if (!script || script.released) return;
    const raised = hasVisibleText(script.text) ? (inScriptForms(script.text, script.kind) ?? script.text) : script.text;
    this.text(raised);
  }

  text(value: string): void {
    value = withoutMarkCharacters(value);
    const script = this.scripts[this.scripts.length - 1];
    if (script && !script.released) {
      script.text += value;
      return;
    }
    const block = this.ensure();
    if (this.paragraphRtl && hasVisibleText(value) && !hasVisibleText(block.text)) block.dir = 'rtl';
    if (this.pending && hasVisibleText(value)) {
      const html = block.html ?? '';
      block.text += this.pending.text;
      block.html = html.slice(0, this.pendingAt) + this.pending.html + html.slice(this.pendingAt);
      this.pending = null;
    }
    block.text += value;
    block.html += escapeHtml(value);
  }

  link(href: string | undefined): void {
    if (!href || !/^https?:\/\//i.test(href.trim())) return;
    this.releaseScripts();
    const block = this.ensure();
    block.links.push(href.trim());
    this.closeLink();
    block.html += `<a href="${escapeHtml(href.trim())}">`;
    this.openLink = true;
  }
}

const HTML_BLOCKS = new Set(['p', 'li', 'td', 'th', 'blockquote', 'pre', 'dd', 'dt', 'caption']);
/** Elements that end a line inside a table cell (@cards/card-rules, as the web editor and the cards service read a table). */
const CELL_LINES = new Set(CELL_LINE_TAGS);

/** A list being read: whether its items are numbered, and how many it has had. */
interface OpenList {
  ordered: boolean;
  items: number;
}

/**
 * An .odt list start (`text:start-value` of a number style or a list item): a whole number an item's <ol start> can carry
 * (1 to 999,999,999, as the .docx reading's Word numbers), else 1.
 */
function listStart(value: string | undefined): number {
  const start = Number(value ?? '1');
  return Number.isInteger(start) && start >= 1 && start <= 999_999_999 ? start : 1;
}

/** The place of a list's next item: numbered or not, its level (how many lists are open), its number in the innermost. */
function nextItem(lists: OpenList[]): ListPlace | undefined {
  const list = lists[lists.length - 1];
  if (!list) return undefined;
  list.items++;
  return { ordered: list.ordered, level: lists.length, number: list.items };
}

/**
 * The list items being read, innermost last (undefined for an element read as an item that is in no list): a paragraph
 * that starts inside an item after the item's first one is a further paragraph of that item (ListPlace.continues), so
 * the list goes on around it, numbering included, instead of ending before it and starting again after.
 */
class OpenItems {
  private readonly places: (ListPlace | undefined)[] = [];

  open(place: ListPlace | undefined): ListPlace | undefined {
    this.places.push(place);
    return place;
  }

  close(): void {
    this.places.pop();
  }

  /** The innermost open item is number `number` of `list` (Word's number for it, word-documents.mjs LIST_NUMBER). */
  renumber(number: number, list: OpenList | undefined): void {
    const place = this.places[this.places.length - 1];
    if (!place || !list || place.continues || !place.ordered) return;
    place.number = number;
    list.items = number;
  }

  /** The place of a further paragraph of the innermost open item; undefined outside items. */
  get continuation(): ListPlace | undefined {
    return furtherParagraphOf(this.places[this.places.length - 1]);
  }
}

function furtherParagraphOf(place: ListPlace | undefined): ListPlace | undefined {
  return place && { ...place, continues: true };
}

/** What a separator adds to a block's text and to its HTML. */
interface Separator {
  text: string;
  html: string;
  /** How many table cell separators it is (none: a cell's line break). */
  cells?: number;
}
/** Between a cell's paragraphs and at its line breaks: a line of the row (a space in the block's text, where words part). */
const CELL_LINE: Separator = { text: ' ', html: '<br>' };

const NOTE_ID = /^(?:footnote|endnote)-(\d+)$/;
/**
 * The worker's marks (word-documents.mjs): U+E000, the mark's name, its value, U+E001. The worker takes both characters
 * out of the document's own text before it marks anything, so every mark here is the worker's; any other copy of either
 * character is removed too (withoutMarkCharacters), so none reaches a card.
 */
const MARK_END = '\ue001';
const MARK_CHARACTERS = /[\ue000\ue001]/g;
const withoutMarkCharacters = (text: string) => (text.includes('\ue000') || text.includes(MARK_END) ? text.replace(MARK_CHARACTERS, '') : text);

/**
 * The values of the marks that start with `start` in `text`, and the text without them. Found with indexOf: each mark's
 * end is looked for once, from its start, and a start with no end after it ends the search (no later one has one), so
 * the time is linear in the text. (The former pattern, /start([^\ue001]*)\ue001/, scanned to the end of the text from
 * every start that had no end: 20,000 such starts in a footnote, 7 KB of .docx, held the thread for 7 s.) A value is
 * what the pattern took: the text up to the next U+E001.
 */
export function takeMarks(text: string, start: string): { values: string[]; text: string } {
  const values: string[] = [];
  let rest = '';
  let from = 0;
  for (let at = text.indexOf(start); at >= 0; at = text.indexOf(start, from)) {
    const end = text.indexOf(MARK_END, at + start.length);
    if (end < 0) break;
    values.push(text.slice(at + start.length, end));
    rest += text.slice(from, at);
    from = end + MARK_END.length;
  }
  return { values, text: from === 0 ? text : rest + text.slice(from) };
}

/** The worker's mark of Word's number for a numbered item, before the item's text (word-documents.mjs LIST_NUMBER). */
const ITEM_NUMBER_MARK = '\ue000cards-item-number:';
/** Any such mark is removed whatever it holds; only one of 1 to 9 digits renumbers its item. */
const ITEM_NUMBER_VALUE = /^[1-9]\d{0,8}$/;
const withoutItemNumbers = (text: string) => (text.includes(ITEM_NUMBER_MARK) ? takeMarks(text, ITEM_NUMBER_MARK).text : text);
/**
 * The worker's mark of a right-to-left paragraph, before its text (word-documents.mjs DIRECTION: mammoth drops w:bidi);
 * any such mark is removed, one holding "rtl" sets the paragraph's direction (BlockCollector.direction).
 */
const DIRECTION_MARK = '\ue000cards-dir:';
const withoutDirectionMarks = (text: string) => (text.includes(DIRECTION_MARK) ? takeMarks(text, DIRECTION_MARK).text : text);
const NOTE_REFERENCE = /^#((?:footnote|endnote)-\d+)$/;
/**
 * The worker's mark of the label Word shows for a note (its number among the notes of its kind, or its custom mark), at
 * the start of the note's text (word-documents.mjs NOTE_LABEL); any such mark is removed, the first is the note's label.
 */
const NOTE_LABEL_MARK = '\ue000cards-note-label:';

/** A note of mammoth's HTML: its text and the label the worker marked (null: none, the note's id is its number). */
interface HtmlNote {
  text: string;
  label: string | null;
}

/** The text of mammoth's footnotes and endnotes (li id="footnote-1" at the end), by id, without their back-links. */
function notesInHtml(html: string): Map<string, HtmlNote> {
  const notes = new Map<string, string>();
  let note: string | null = null;
  let depth = 0;
  let skip = 0;
  const parser = new DepthLimitedParser(
    {
      onopentag(name, attrs) {
        if (note === null) {
          if (name === 'li' && attrs.id && NOTE_ID.test(attrs.id)) {
            note = attrs.id;
            depth = 1;
            notes.set(note, '');
          }
          return;
        }
        depth++;
        if (skip > 0 || (name === 'a' && attrs.href?.startsWith('#'))) skip++;
        else if (name === 'p' || name === 'br') notes.set(note, `${notes.get(note)} `);
      },
      ontext(text) {
        if (note !== null && skip === 0) notes.set(note, notes.get(note) + withoutDirectionMarks(withoutItemNumbers(text)));
      },
      onclosetag() {
        if (note === null) return;
        if (skip > 0) skip--;
        if (--depth === 0) note = null;
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  const read = new Map<string, HtmlNote>();
  for (const [id, text] of notes) {
    const { values, text: rest } = takeMarks(text, NOTE_LABEL_MARK);
    read.set(id, { text: withoutMarkCharacters(rest).replace(/\s+/g, ' ').trim(), label: values.length > 0 ? withoutMarkCharacters(values[0]!) : null });
  }
  return read;
}

/** A footnote or note as the text at its reference shows it: its number and text in brackets. */
function inlineNote(citation: string, text: string): string {
  const body = text.replace(/\s+/g, ' ').trim();
  const mark = citation.replace(/\s+/g, ' ').trim();
  return body ? ` [${mark ? `${mark}: ` : ''}${body}]` : '';
}

/**
 * Blocks from HTML such as mammoth's rendering of a .docx: h1-h6 are headings, other block elements paragraphs. A list
 * item is a paragraph with its place in its list (`list`: numbered or not, level, number; the splitter sets it in a ul or
 * ol), a table row one paragraph of its cells separated by " | " (the card HTML keeps no tables); a footnote or endnote
 * is put at its reference in brackets, "[1: its text]", with the label the worker marked (NOTE_LABEL; else its id), and
 * not again at the end.
 */
export function blocksFromHtml(html: string): DocumentBlock[] {
  const notes = html.includes('footnote-') || html.includes('endnote-') ? notesInHtml(html) : new Map<string, HtmlNote>();
  const collector = new BlockCollector();
  const lists: OpenList[] = [];
  const items = new OpenItems();
  /** For each open li: whether it was read as a list item (not a table cell's block), so its end closes one in `items`. */
  const itemElements: boolean[] = [];
  let rows = 0;
  let skip = 0;
  const parser = new DepthLimitedParser(
    {
      onopentag(name, attrs) {
        if (skip > 0) {
          skip++;
          return;
        }
        if (name === 'li' && !(attrs.id && NOTE_ID.test(attrs.id))) itemElements.push(rows === 0);
        const heading = /^h([1-6])$/.exec(name);
        // A paragraph of the document starts: left to right unless the worker's mark before its text says otherwise.
        if (heading || HTML_BLOCKS.has(name)) collector.direction(false);
        if (name === 'li' && attrs.id && NOTE_ID.test(attrs.id)) skip = 1;
        else if (name === 'a' && notes.has(NOTE_REFERENCE.exec(attrs.href ?? '')?.[1] ?? '')) {
          const id = NOTE_REFERENCE.exec(attrs.href!)![1]!;
          const { text, label } = notes.get(id)!;
          collector.note(inlineNote(label ?? NOTE_ID.exec(id)![1]!, text));
          skip = 1;
        } else if (name === 'ul' || name === 'ol') lists.push({ ordered: name === 'ol', items: 0 });
        else if (name === 'tr') {
          rows++;
          collector.start('paragraph');
        } else if (rows > 0 && (name === 'td' || name === 'th')) collector.cell();
        else if (rows > 0 && (CELL_LINES.has(name) || name === 'br')) collector.separate(CELL_LINE);
        else if (heading) collector.start('heading', Number(heading[1]));
        else if (name === 'li') collector.start('paragraph', undefined, items.open(nextItem(lists)));
        else if (HTML_BLOCKS.has(name)) {
          if (!collector.isBlank) collector.start('paragraph', undefined, items.continuation);
        } else if (name === 'br') collector.lineBreak();
        else if (name === 'a') collector.link(attrs.href);
        else if (name === 'sup' || name === 'sub') collector.beginScript(name);
        else collector.inline(name);
      },
      ontext(text) {
        if (skip > 0) return;
        if (text.includes(ITEM_NUMBER_MARK)) {
          const marked = takeMarks(text, ITEM_NUMBER_MARK);
          for (const number of marked.values) if (ITEM_NUMBER_VALUE.test(number)) items.renumber(Number(number), lists[lists.length - 1]);
          text = marked.text;
        }
        if (text.includes(DIRECTION_MARK)) {
          const marked = takeMarks(text, DIRECTION_MARK);
          if (marked.values.includes('rtl')) collector.direction(true);
          text = marked.text;
        }
        text = withoutMarkCharacters(text);
        // Text of an item after a list inside it.
        if (!collector.isOpen && rows === 0 && hasVisibleText(text)) collector.start('paragraph', undefined, items.continuation);
        collector.text(text);
      },
      onclosetag(name) {
        if (skip > 0) {
          skip--;
          return;
        }
        if (name === 'li' && itemElements.pop()) items.close();
        if (name === 'ul' || name === 'ol') lists.pop();
        else if (name === 'tr') {
          rows = Math.max(0, rows - 1);
          collector.endRow();
        } else if (rows > 0 && (CELL_LINES.has(name) || HTML_BLOCKS.has(name))) {
          // A cell's block ends a line of the row: text after it in the cell starts the next one.
          if (CELL_LINES.has(name)) collector.separate(CELL_LINE);
        } else if (/^h[1-6]$/.test(name) || HTML_BLOCKS.has(name)) collector.end();
        else if (name === 'a') collector.closeLink();
        else if (name === 'sup' || name === 'sub') collector.endScript();
        else collector.closeInline(name);
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  collector.end();
  return collector.blocks;
}

/**
 * Elements of an .odt's body whose text is not the document's text, skipped with all they hold: comments, tracked changes
 * (deleted text), an image's title and description (alt text, which a .docx's reading drops too), ruby annotations over
 * the base text, and generated indexes (a table of contents, "Introduction 1" with its page number, and its template's
 * "Contents"; lists of figures, tables and objects; an alphabetical index), which only repeat the headings and words of the
 * document with page numbers. A bibliography is the document's own text and stays.
 */
const ODT_NOT_TEXT = new Set([
  'office:annotation',
  'text:tracked-changes',
  'svg:title',
  'svg:desc',
  'text:ruby-text',
  'text:table-of-content',
  'text:illustration-index',
  'text:table-index',
  'text:object-index',
  'text:user-index',
  'text:alphabetical-index',
]);

/**
 * The document's title: a paragraph in LibreOffice's "Title" style is a heading of level 1, as Word's "Title" is (and as
 * text:h of outline level 1), so it titles the text under it; "Subtitle" stays text. Matched on the style's name or on an
 * automatic style derived from it (the one LibreOffice writes for a title with direct formatting).
 */
const ODT_TITLE_STYLE = 'Title';

/**
 * How many cells an .odt table cell stands for (table:number-columns-repeated: LibreOffice writes a run of like cells,
 * empty ones mostly, as one), at most ODT_MAX_REPEATED_CELLS, so a few bytes cannot make a row of thousands of separators.
 */
const ODT_MAX_REPEATED_CELLS = 64;
function odtRepeatedCells(repeated: string | undefined): number {
  const n = Number(repeated ?? '1');
  return Number.isInteger(n) && n >= 1 ? Math.min(n, ODT_MAX_REPEATED_CELLS) : 1;
}

/**
 * What an .odt's styles say that its reading needs, from styles.xml (named styles: Writer's "Numbering 123", Word's
 * WWNum lists, the outline numbering of headings) and from content.xml's automatic styles: which levels of each list
 * style are numbered, how headings are numbered, and which text styles are raised or lowered or set in a symbol font.
 */
class OdtStyles {
  /** List styles: the levels each one numbers (a number style with a format: "" shows none). */
  readonly numbered = new Map<string, Set<number>>();
  /** A numbered level's start (`text:start-value` of its number style, when not 1), keyed "<list style>:<level>". */
  readonly starts = new Map<string, number>();
  /** The outline style (text:outline-style): how each heading level is numbered. */
  readonly outline = new Map<number, OutlineLevel>();
  /** Text styles: their parent, font and position (super- or subscript). */
  private readonly textStyles = new Map<string, { parent?: string; font?: string; script?: 'sup' | 'sub' }>();
  /** Font faces: their family. */
  private readonly fonts = new Map<string, string>();
  /** Paragraph styles: their parent and their own writing mode (style:writing-mode of their paragraph properties). */
  private readonly paragraphStyles = new Map<string, { parent?: string; mode?: string }>();
  /** The default paragraph style's writing mode (style:default-style), the page layouts' and the master pages' layouts. */
  private defaultParagraphMode: string | undefined;
  private readonly pageModes = new Map<string, string>();
  private readonly masterLayouts = new Map<string, string>();
  /** Directions found (rtl()), by paragraph style. */
  private readonly rtlStyles = new Map<string | undefined, boolean>();
  private listStyle: string | null = null;
  private inOutline = false;
  private textStyle: string | null = null;
  /** The paragraph style, default paragraph style ('') or page layout whose properties are being read. */
  private paragraphStyle: string | null = null;
  private pageLayout: string | null = null;

  /** Reads a style element (the parsers of styles.xml and content.xml call it for every element). */
  open(name: string, attrs: Record<string, string>): void {
    if (name === 'text:list-style') this.listStyle = attrs['style:name'] ?? null;
    else if (name === 'text:outline-style') this.inOutline = true;
    else if (name === 'text:list-level-style-number' && this.listStyle !== null && attrs['style:num-format'] !== '') {
      const levels = this.numbered.get(this.listStyle) ?? new Set<number>();
      const level = Number(attrs['text:level'] ?? '1');
      this.numbered.set(this.listStyle, levels.add(level));
      const start = listStart(attrs['text:start-value']);
      if (start !== 1) this.starts.set(`${this.listStyle}:${level}`, start);
    } else if (name === 'text:outline-level-style' && this.inOutline) {
      const level = Number(attrs['text:level'] ?? '1');
      this.outline.set(level, {
        format: attrs['style:num-format'] ?? '',
        prefix: attrs['style:num-prefix'] ?? '',
        suffix: attrs['style:num-suffix'] ?? '',
        display: Math.max(1, Math.min(level, Number(attrs['text:display-levels'] ?? '1') || 1)),
        start: Number(attrs['text:start-value'] ?? '1') || 1,
      });
    } else if (name === 'style:style' && attrs['style:family'] === 'text' && attrs['style:name'] !== undefined) {
      this.textStyle = attrs['style:name'];
      this.textStyles.set(this.textStyle, { ...(attrs['style:parent-style-name'] ? { parent: attrs['style:parent-style-name'] } : {}) });
    } else if (name === 'style:text-properties' && this.textStyle !== null) {
      const style = this.textStyles.get(this.textStyle)!;
      if (attrs['style:font-name']) style.font = attrs['style:font-name'];
      const position = attrs['style:text-position']?.trim().split(/\s+/)[0];
      if (position === 'super' || (position !== undefined && parseFloat(position) > 0)) style.script = 'sup';
      else if (position === 'sub' || (position !== undefined && parseFloat(position) < 0)) style.script = 'sub';
    } else if (name === 'style:style' && attrs['style:family'] === 'paragraph' && attrs['style:name'] !== undefined) {
      this.paragraphStyle = attrs['style:name'];
      this.paragraphStyles.set(this.paragraphStyle, { ...(attrs['style:parent-style-name'] ? { parent: attrs['style:parent-style-name'] } : {}) });
    } else if (name === 'style:default-style' && attrs['style:family'] === 'paragraph') {
      this.paragraphStyle = '';
    } else if (name === 'style:paragraph-properties' && this.paragraphStyle !== null && attrs['style:writing-mode'] !== undefined) {
      if (this.paragraphStyle === '') this.defaultParagraphMode = attrs['style:writing-mode'];
      else this.paragraphStyles.get(this.paragraphStyle)!.mode = attrs['style:writing-mode'];
    } else if (name === 'style:page-layout' && attrs['style:name'] !== undefined) {
      this.pageLayout = attrs['style:name'];
    } else if (name === 'style:page-layout-properties' && this.pageLayout !== null && attrs['style:writing-mode'] !== undefined) {
      this.pageModes.set(this.pageLayout, attrs['style:writing-mode']);
    } else if (name === 'style:master-page' && attrs['style:name'] !== undefined && attrs['style:page-layout-name'] !== undefined) {
      this.masterLayouts.set(attrs['style:name'], attrs['style:page-layout-name']);
    } else if (name === 'style:font-face' && attrs['style:name'] !== undefined) {
      this.fonts.set(attrs['style:name'], (attrs['svg:font-family'] ?? attrs['style:name']).replace(/^['"]|['"]$/g, ''));
    }
  }

  close(name: string): void {
    if (name === 'text:list-style') this.listStyle = null;
    else if (name === 'text:outline-style') this.inOutline = false;
    else if (name === 'style:style' || name === 'style:default-style') {
      this.textStyle = null;
      this.paragraphStyle = null;
    } else if (name === 'style:page-layout') this.pageLayout = null;
  }

  /**
   * Whether a paragraph in the paragraph style `styleName` (its own, else its parent's, else the default paragraph
   * style's style:writing-mode) is set right to left: rl-tb or rl (Writer's "Right-to-left (horizontal)"); "page" or none
   * takes the page's, the layout of the Standard master page (Writer's page style Default), as Writer shows it.
   */
  rtl(styleName: string | undefined): boolean {
    const known = this.rtlStyles.get(styleName);
    if (known !== undefined) return known;
    let mode: string | undefined;
    let style = styleName === undefined ? undefined : this.paragraphStyles.get(styleName);
    for (let depth = 0; style && depth < 16 && (mode === undefined || mode === 'page'); depth++, style = style.parent === undefined ? undefined : this.paragraphStyles.get(style.parent)) {
      mode = style.mode;
    }
    if (mode === undefined || mode === 'page') mode = this.defaultParagraphMode;
    if (mode === undefined || mode === 'page') {
      const layout = this.masterLayouts.get('Standard') ?? this.masterLayouts.values().next().value;
      mode = layout === undefined ? undefined : this.pageModes.get(layout);
    }
    const rtl = mode === 'rl-tb' || mode === 'rl';
    this.rtlStyles.set(styleName, rtl);
    return rtl;
  }

  /** A text style's position and the family of its font (its own, else its parent's). */
  text(styleName: string | undefined): { font?: string; script?: 'sup' | 'sub' } {
    let style = styleName === undefined ? undefined : this.textStyles.get(styleName);
    let font: string | undefined;
    let script: 'sup' | 'sub' | undefined;
    for (let depth = 0; style && depth < 8; depth++, style = style.parent === undefined ? undefined : this.textStyles.get(style.parent)) {
      font ??= style.font;
      script ??= style.script;
    }
    return { ...(font !== undefined ? { font: this.fonts.get(font) ?? font } : {}), ...(script ? { script } : {}) };
  }
}

/** A heading level's numbering in the outline style. */
interface OutlineLevel {
  format: string;
  prefix: string;
  suffix: string;
  /** How many levels its number shows ("1.2": 2). */
  display: number;
  start: number;
}

/** An .odt's styles.xml read (the named styles; automatic ones come with content.xml). */
export function odtStyles(stylesXml: string): OdtStyles {
  const styles = new OdtStyles();
  const parser = new DepthLimitedParser({ onopentag: (name, attrs) => styles.open(name, attrs), onclosetag: (name) => styles.close(name) }, { xmlMode: true, decodeEntities: true });
  parser.write(stylesXml);
  parser.end();
  return styles;
}

/**
 * The largest number written in letters, as the Word reading's (word-documents.mjs MAX_LETTER_NUMBER): a start value
 * read from the document ("Infinity" too, which the letter loop never left) above it is written in digits.
 */
export const MAX_LETTER_NUMBER = 780;

/** A number as a list or outline level formats it (ODF style:num-format: 1, a, A, i, I; other formats in digits). */
export function formattedNumber(n: number, format: string): string {
  if ((format === 'a' || format === 'A') && Number.isInteger(n) && n <= MAX_LETTER_NUMBER) {
    let letters = '';
    for (let k = n; k > 0; k = Math.floor((k - 1) / 26)) letters = String.fromCharCode(97 + ((k - 1) % 26)) + letters;
    return format === 'A' ? letters.toUpperCase() : letters || String(n);
  }
  if ((format === 'i' || format === 'I') && Number.isInteger(n) && n > 0 && n < 4000) {
    const numerals: [number, string][] = [[1000, 'm'], [900, 'cm'], [500, 'd'], [400, 'cd'], [100, 'c'], [90, 'xc'], [50, 'l'], [40, 'xl'], [10, 'x'], [9, 'ix'], [5, 'v'], [4, 'iv'], [1, 'i']];
    let roman = '';
    let rest = n;
    for (const [value, numeral] of numerals) for (; rest >= value; rest -= value) roman += numeral;
    return format === 'I' ? roman.toUpperCase() : roman;
  }
  return String(n);
}

/** The family of a symbol font whose private-use characters dingbat-to-unicode maps (mammoth's table for w:sym). */
const DINGBAT_FONT = /^(symbol|wingdings( 2| 3)?|webdings)$/i;
type Dingbats = { hex(font: string, code: string): { codePoint: number; string: string } | undefined };
let dingbats: Dingbats | null = null;
/**
 * A Symbol or Wingdings font's text with its private-use characters (U+F020-U+F0FF, as Writer and Word store them: "≥"
 * of Symbol is U+F0B3) the Unicode characters they show, where dingbat-to-unicode (mammoth's dependency) has one.
 */
export function symbolFontText(text: string, font: string | undefined): string {
  if (font === undefined || !DINGBAT_FONT.test(font) || !/[\uf020-\uf0ff]/.test(text)) return text;
  dingbats ??= createRequire(require.resolve('mammoth'))('dingbat-to-unicode') as Dingbats;
  return text.replace(/[\uf020-\uf0ff]/g, (c) => dingbats!.hex(font, (c.charCodeAt(0) & 0xff).toString(16).toUpperCase().padStart(2, '0'))?.string ?? c);
}

/**
 * Blocks from an OpenDocument content.xml: text:h (with its outline level) and text:p inside office:text; `styles` from
 * its styles.xml (odtStyles), without which only content.xml's automatic styles are known.
 */
export function blocksFromOdtContent(xml: string, styles?: OdtStyles): DocumentBlock[] {
  const reader = odtContentReader(styles);
  reader.write(xml);
  reader.end();
  return reader.blocks;
}

/** A markup reader fed in pieces; `blocks` grows as each heading or paragraph ends. */
export interface IncrementalBlockReader {
  readonly blocks: DocumentBlock[];
  write(chunk: string): void;
  end(): void;
}

/**
 * The reader behind blocksFromOdtContent, for callers that may stop at the first block (the upload's text check). List
 * items and table rows are read as blocksFromHtml reads them (a list is numbered when its automatic list style numbers
 * its level); a note (footnote or endnote) is put at its citation in brackets, "[1: its text]".
 */
export function odtContentReader(styles: OdtStyles = new OdtStyles()): IncrementalBlockReader {
  const collector = new BlockCollector();
  let inBody = 0;
  let skipDepth = 0;
  /** List styles (named ones from styles.xml, automatic ones here): the levels each one numbers. */
  const numbered = styles.numbered;
  /** Automatic paragraph styles derived from the Title style (ODT_TITLE_STYLE). */
  const titleStyles = new Set([ODT_TITLE_STYLE]);
  /** The open text:span elements: the font family their text is in (their own or an enclosing span's), and whether each began a raised or lowered run. */
  const spans: { font: string | undefined; script: boolean }[] = [];
  /** Each outline level's count of numbered headings so far (a heading restarts the levels below it). */
  const headingCounts: number[] = [];
  /** The number of the open heading as the outline style shows it, written before its first text. */
  let headingNumber: string | null = null;
  /** `first`: the first list of those whose numbering this one continues. */
  type ReadList = OpenList & { first?: ReadList };
  const lists: (ReadList & { style: string | null; last?: ListPlace })[] = [];
  const items = new OpenItems();
  /**
   * Outermost lists read so far, the last one and those with an xml:id: a list may continue one's numbering. A list that
   * continues another gives the first of their chain its count when it ends, so a later list continuing that one counts on.
   */
  let lastList: ReadList | undefined;
  const listsById = new Map<string, ReadList>();
  let rows = 0;
  let note: { depth: number; part: 'citation' | 'body' | null; citation: string; body: string } | null = null;
  const parser = new DepthLimitedParser(
    {
      onopentag(name, attrs) {
        if (!inBody) styles.open(name, attrs);
        if (name === 'style:style' && attrs['style:family'] === 'paragraph' && attrs['style:name'] !== undefined && titleStyles.has(attrs['style:parent-style-name'] ?? '')) titleStyles.add(attrs['style:name']);
        if (name === 'office:text') inBody++;
        if (!inBody) return;
        if (skipDepth > 0 || ODT_NOT_TEXT.has(name)) {
          skipDepth++;
          return;
        }
        // A heading's own number (text:number, as some writers cache it) is its number: none is added.
        if (name === 'text:number') headingNumber = null;
        if (note) {
          note.depth++;
          if (name === 'text:note-citation') note.part = 'citation';
          else if (name === 'text:note-body') note.part = 'body';
          else if (note.part === 'body' && (name === 'text:p' || name === 'text:h' || name === 'text:s' || name === 'text:tab' || name === 'text:line-break')) note.body += ' ';
          return;
        }
        if (name === 'text:note') note = { depth: 1, part: null, citation: '', body: '' };
        else if (name === 'text:list') {
          const style = attrs['text:style-name'] ?? lists[lists.length - 1]?.style ?? null;
          // A list after an interruption (a paragraph between its items) that continues the numbering of the one before
          // it (text:continue-numbering) or of the one named (text:continue-list), as LibreOffice writes it.
          const continued = lists.length > 0 ? undefined : attrs['text:continue-list'] !== undefined ? listsById.get(attrs['text:continue-list']) : attrs['text:continue-numbering'] === 'true' ? lastList : undefined;
          // A new list counts from its level's start (the number style's text:start-value: Writer's "Start at" in the list
          // style, as Writer and Word show it); one continuing another counts on from it.
          const ordered = style !== null && (numbered.get(style)?.has(lists.length + 1) ?? false);
          const start = ordered ? (styles.starts.get(`${style}:${lists.length + 1}`) ?? 1) : 1;
          const list = { ordered, items: continued?.items ?? start - 1, style, first: continued?.first ?? continued };
          if (lists.length === 0 && attrs['xml:id'] !== undefined) listsById.set(attrs['xml:id'], list);
          lists.push(list);
        } else if (name === 'draw:text-box') collector.enterBox();
        else if (name === 'table:table-row') {
          rows++;
          collector.start('paragraph');
        } else if (rows > 0 && name === 'table:table-cell') collector.cell(odtRepeatedCells(attrs['table:number-columns-repeated']));
        else if (rows > 0 && (name === 'text:p' || name === 'text:h' || name === 'text:line-break')) collector.separate(CELL_LINE);
        else if (name === 'text:list-item') {
          // An item restarting its list's count there (text:start-value: Writer's "Restart numbering" or "Numbering starts
          // at n" on the item) is numbered so, and the items after it count on from it.
          const numberedList = lists[lists.length - 1];
          if (numberedList?.ordered && attrs['text:start-value'] !== undefined) numberedList.items = listStart(attrs['text:start-value']) - 1;
          const place = nextItem(lists);
          if (lists.length > 0) lists[lists.length - 1]!.last = place;
          collector.start('paragraph', undefined, items.open(place));
        } else if (name === 'text:list-header') {
          // Unnumbered: after an item of its list, a further paragraph of that item; first in a list inside an item, one of
          // that item; first in an outermost list, a paragraph before the list.
          const list = lists[lists.length - 1];
          collector.start('paragraph', undefined, items.open(list?.last ? furtherParagraphOf(list.last) : items.continuation));
        } else if (name === 'text:h') {
          const level = Number(attrs['text:outline-level'] ?? '1') || 1;
          collector.start('heading', level);
          headingNumber = attrs['text:is-list-header'] === 'true' ? null : outlineNumber(level, attrs);
        }
        else if (name === 'text:p') {
          if (lists.length === 0 && titleStyles.has(attrs['text:style-name'] ?? '')) collector.start('heading', 1);
          else if (!collector.isBlank) collector.start('paragraph', undefined, items.continuation);
        } else if (name === 'text:s') collector.text(' '.repeat(Math.min(100, Number(attrs['text:c'] ?? '1') || 1)));
        else if (name === 'text:tab') collector.text(' ');
        else if (name === 'text:line-break') collector.lineBreak();
        else if (name === 'text:a') collector.link(attrs['xlink:href']);
        else if (name === 'text:span') {
          const { font, script } = styles.text(attrs['text:style-name']);
          if (script) collector.beginScript(script);
          spans.push({ font: font ?? spans[spans.length - 1]?.font, script: script !== undefined });
        }
        // Its paragraph style's writing mode (Writer's right-to-left paragraphs).
        if (name === 'text:p' || name === 'text:h') collector.direction(styles.rtl(attrs['text:style-name']));
      },
      ontext(text) {
        if (!inBody || skipDepth > 0) return;
        text = symbolFontText(text, spans[spans.length - 1]?.font);
        if (note) {
          if (note.part === 'citation') note.citation += text;
          else if (note.part === 'body') note.body += text;
        } else {
          if (headingNumber !== null && hasVisibleText(text)) {
            collector.text(`${headingNumber} `);
            headingNumber = null;
          }
          collector.text(text);
        }
      },
      onclosetag(name) {
        if (!inBody) styles.close(name);
        if (skipDepth > 0) {
          skipDepth--;
          return;
        }
        if (note) {
          if (--note.depth === 0) {
            collector.note(inlineNote(note.citation, note.body));
            note = null;
          } else if (name === 'text:note-citation' || name === 'text:note-body') note.part = null;
          return;
        }
        if (name === 'office:text') inBody--;
        if (name === 'text:span' && spans.pop()?.script) collector.endScript();
        if (name === 'text:h') headingNumber = null;
        if (name === 'text:list-item' || name === 'text:list-header') items.close();
        if (name === 'draw:text-box') collector.leaveBox();
        if (name === 'text:list') {
          const list = lists.pop();
          if (lists.length === 0 && list) {
            if (list.first) list.first.items = list.items;
            lastList = list;
          }
        }
        else if (name === 'table:table-row') {
          rows = Math.max(0, rows - 1);
          collector.endRow();
        } else if (rows > 0 && (name === 'text:p' || name === 'text:h')) collector.separate(CELL_LINE);
        else if (name === 'text:h' || name === 'text:p') collector.end();
        else if (name === 'text:a') collector.closeLink();
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  /**
   * The number the outline style shows for a heading of `level` (counted on from the headings before it: "1.2 " for the
   * second of level 2 under the first of level 1, its prefix and suffix, each level in its format), or null when the
   * level is not numbered.
   */
  function outlineNumber(level: number, attrs: Record<string, string>): string | null {
    const style = styles.outline.get(level);
    headingCounts.length = Math.min(headingCounts.length, level);
    if (attrs['text:restart-numbering'] === 'true' && attrs['text:start-value'] !== undefined) headingCounts[level - 1] = (Number(attrs['text:start-value']) || 1) - 1;
    headingCounts[level - 1] = (headingCounts[level - 1] ?? (style?.start ?? 1) - 1) + 1;
    if (!style || !style.format) return null;
    const shown: string[] = [];
    for (let l = level - style.display + 1; l <= level; l++) {
      const format = styles.outline.get(l)?.format;
      if (format) shown.push(formattedNumber(headingCounts[l - 1] ?? 0, format));
    }
    const number = `${style.prefix}${shown.join('.')}${style.suffix}`.trim();
    return hasVisibleText(number) ? number : null;
  }

  return {
    blocks: collector.blocks,
    write: (chunk) => parser.write(chunk),
    end() {
      parser.end();
      collector.end();
    },
  };
}
