import { Parser } from 'htmlparser2';
import { BLOCK_TAGS, CELL_LINE_TAGS, SEPARATED_BLOCK_TAGS, TABLE_CELL_SEPARATOR } from '@cards/card-rules';

/** The allow-list's blocks: they separate their text already (a row's paragraph may stand among them). */
const KEPT_BLOCKS = new Set(BLOCK_TAGS.filter((tag) => tag !== 'br'));
const SEPARATED = new Set(SEPARATED_BLOCK_TAGS);
const CELL_LINES = new Set(CELL_LINE_TAGS);
/** Elements a paragraph may stand in (a table's rows are paragraphs there; elsewhere, lines). */
const HOLD_PARAGRAPHS = new Set(['li', 'ul', 'ol', 'blockquote', 'html', 'body', ...SEPARATED_BLOCK_TAGS]);
const TABLE_PARTS = new Set(['caption', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th', 'colgroup', 'col']);
/** Elements whose start or end this pass changes something at: without any, the HTML is returned as it came. */
const CHANGED = new Set(['table', 'rt', 'rp', ...SEPARATED_BLOCK_TAGS]);
const MAY_CHANGE = new RegExp(`<(?:${[...CHANGED].join('|')})[\\s/>]`, 'i');
/** Elements the sanitizer removes with their text (rules.ts NON_TEXT_TAGS): their text is no line's content. */
const HIDDEN_TEXT = new Set(['script', 'style', 'textarea', 'option']);
/** Whitespace written as a character reference (raw text is read with its references undecoded). */
const WHITESPACE_REFERENCE = /&(?:#x([0-9a-f]+)|#(\d+)|(nbsp|Tab|NewLine|ensp|emsp|emsp13|emsp14|thinsp|hairsp|numsp|puncsp|MediumSpace|NonBreakingSpace|ThickSpace|ThinSpace|VeryThinSpace|ZeroWidthSpace));?/gi;

/** Whether raw HTML text (references undecoded) holds something other than whitespace (String.prototype.trim's). */
function visible(raw: string): boolean {
  if (!/\S/u.test(raw)) return false;
  if (!raw.includes('&')) return true;
  const decoded = raw.replace(WHITESPACE_REFERENCE, (reference, hex?: string, decimal?: string) => {
    if (hex !== undefined || decimal !== undefined) {
      const code = hex !== undefined ? parseInt(hex, 16) : Number(decimal);
      return code <= 0x10ffff && /\s/u.test(String.fromCodePoint(code)) ? ' ' : reference;
    }
    return ' ';
  });
  return /\S/u.test(decoded);
}

/** Written HTML: strings, and the parts of a table's cell kept as they are (joining them at each table nesting them copied the text once per table). */
type Part = string | readonly Part[];

/** The parts written out, in order. */
function joined(parts: readonly Part[]): string {
  const out: string[] = [];
  const stack: Array<{ parts: readonly Part[]; at: number }> = [{ parts, at: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.at === top.parts.length) {
      stack.pop();
      continue;
    }
    const part = top.parts[top.at++]!;
    if (typeof part === 'string') out.push(part);
    else stack.push({ parts: part, at: 0 });
  }
  return out.join('');
}

/** Where written HTML goes: the document, a table cell or a caption; tracks whether a line break is owed. */
class Sink {
  readonly parts: Part[] = [];
  /** Visible text since the last line start. */
  private inLine = false;
  /** Line breaks owed before the next visible content: one, or more for a pre's empty lines. */
  private breaksOwed = 0;
  /**
   * A pre's line ended here and no visible content has come since: another end of line makes an empty line (null: no
   * text since the pre started, where an end of line makes none).
   */
  private preLineEnded: boolean | null = null;
  hasText = false;
  /** Open elements (in this sink) that hold only phrasing content: a paragraph cannot stand in them. */
  phrasing = 0;
  /** In a cell: whitespace met after the line's text, written as one space before the line's next text. */
  private spaceOwed = false;
  /** In a cell: where the line's last text is in `parts` (its trailing whitespace goes when the line ends); -1: none. */
  private lastText = -1;
  /** In a cell: the last part written is text ending in a space, which the next text's leading whitespace would double. */
  private endsInSpace = false;

  constructor(readonly inCell: boolean) {}

  text(raw: string): void {
    if (this.inCell) {
      this.cellText(raw);
      return;
    }
    if (visible(raw)) this.content();
    this.parts.push(raw);
  }

  /**
   * A cell's (or caption's) text is a row's, whose paragraph reads as text: its whitespace is collapsed as the files
   * service collapses a document's (one space for a run; none at a line's start or end, around the cell's line breaks and
   * separators), so an empty cell or one of spaces only is nothing between its separators. Whitespace written as a
   * character reference (&nbsp;) inside text is kept.
   */
  private cellText(raw: string): void {
    if (!visible(raw)) {
      if (this.inLine && this.breaksOwed === 0) this.spaceOwed = true;
      return;
    }
    const lineStart = !this.inLine || this.breaksOwed > 0;
    let text = raw.replace(/\s+/gu, ' ');
    if (lineStart || this.endsInSpace) text = text.trimStart();
    else if (this.spaceOwed && !text.startsWith(' ')) text = ` ${text}`;
    this.content();
    this.spaceOwed = false;
    this.lastText = this.parts.length;
    this.parts.push(text);
    this.endsInSpace = text.endsWith(' ');
  }

  /** In a cell, the line ends: no whitespace after its text. */
  private endLineText(): void {
    if (this.lastText >= 0) this.parts[this.lastText] = (this.parts[this.lastText] as string).trimEnd();
    this.lastText = -1;
    this.spaceOwed = false;
    this.endsInSpace = false;
  }

  /** The cell or caption ends: its last line's text ends there. */
  end(): void {
    if (this.inCell) this.endLineText();
  }

  /** Visible content follows: the line break owed first. */
  content(): void {
    if (this.breaksOwed > 0) this.parts.push('<br>'.repeat(this.breaksOwed));
    this.breaksOwed = 0;
    this.preLineEnded = false;
    this.inLine = true;
    this.hasText = true;
  }

  /** A block's start or end dropped: the text before it and the text after it are on separate lines. */
  boundary(): void {
    if (!this.inLine) return;
    this.breaksOwed = Math.max(this.breaksOwed, 1);
    if (this.inCell) this.endLineText();
  }

  /**
   * A pre's line ends (its newline already written): the next text is on the next line; a line with nothing visible on
   * it between two of the pre's lines of text is an empty line, kept as one (a further <br>). Empty lines at the pre's
   * start or end are none (the web editor's lines of a pre: rich-text.ts separatedBlocksApart).
   */
  preLineEnd(): void {
    if (this.preLineEnded === true && this.breaksOwed > 0) this.breaksOwed++;
    else this.boundary();
    if (this.preLineEnded !== null) this.preLineEnded = true;
  }

  /** A pre starts or ends: the text before it and after it are on lines of their own; empty lines at its end are none. */
  preEdge(): void {
    this.breaksOwed = Math.min(this.breaksOwed, 1);
    this.boundary();
    this.preLineEnded = null;
  }

  /** A kept block's tag or a line break: the line ends here already. */
  lineEnd(tag: string): void {
    this.parts.push(tag);
    this.inLine = false;
    this.breaksOwed = 0;
    this.preLineEnded = false;
  }

  tag(tag: string): void {
    this.parts.push(tag);
    this.endsInSpace = false;
  }

  /** Paragraphs (a table's rows): paragraphs where one may stand, otherwise lines. */
  paragraphs(paragraphs: readonly Part[]): void {
    if (paragraphs.length === 0) return;
    if (!this.inCell && this.phrasing === 0) {
      for (const p of paragraphs) {
        this.parts.push('<p>', p);
        this.lineEnd('</p>');
      }
      this.hasText = true;
      return;
    }
    for (const p of paragraphs) {
      this.boundary();
      this.content();
      this.parts.push(p);
      this.boundary();
    }
  }
}

interface Row {
  cells: Sink[];
}

/** The separator after an empty cell or at a row's start: no whitespace doubled or leading. */
const SEPARATOR_AFTER_SPACE = TABLE_CELL_SEPARATOR.trimStart();

/**
 * A table row's paragraph: its cells apart by TABLE_CELL_SEPARATOR, an empty cell keeping its place (its separator) with
 * no whitespace doubled around it or left at the row's ends ("Name | | Rate", "| b |"), as the row's text reads and as
 * the files service writes the row of a document's table.
 */
function rowParagraph(cells: readonly Sink[]): Part[] {
  const row: Part[] = [];
  /** Nothing with text yet, or a separator after the last: a separator now leaves out its leading whitespace. */
  let spaced = true;
  let lastSeparator = -1;
  cells.forEach((cell, i) => {
    if (i > 0) {
      lastSeparator = row.length;
      row.push(spaced ? SEPARATOR_AFTER_SPACE : TABLE_CELL_SEPARATOR);
      spaced = true;
    }
    row.push(cell.parts);
    if (cell.hasText) spaced = false;
  });
  if (spaced && lastSeparator >= 0) row[lastSeparator] = (row[lastSeparator] as string).trimEnd();
  return row;
}

interface Table {
  captions: Sink[];
  head: Row[];
  body: Row[];
  foot: Row[];
  section: 'head' | 'body' | 'foot';
  row: Row | null;
}

type Frame =
  | { kind: 'table'; table: Table }
  | { kind: 'section' | 'row'; table: Table }
  | { kind: 'cell' | 'caption'; sink: Sink }
  | { kind: 'dropped' | 'rt' | 'separated' | 'pre' | 'line' | 'transparent' }
  | { kind: 'written'; name: string; phrasing: boolean };

/**
 * Well-formed card HTML (wellFormedHtml's) in which the text of separate blocks stays apart once the allow-list drops
 * their elements: a table becomes a paragraph per row (its cells separated by " | ", a cell's blocks lines of it, a
 * caption a paragraph, rows without text left out; lines where a paragraph cannot stand), as the web editor makes it
 * (web/src/rich-text.ts tablesAsRows); a dropped block (SEPARATED_BLOCK_TAGS: div, section, dl/dt/dd, pre, hr ...) is
 * kept apart from the text before and after it by a line break (<br>) where the two would run together, a pre's lines
 * are lines; a ruby's annotation (rt) follows its base in parentheses, rp dropped ("漢字(kanji)", not "漢字kanji").
 * HTML holding none of those elements comes back as it came. Linear in the input.
 */
export function blocksKeptApart(html: string): string {
  const top = new Sink(false);
  const sinks: Sink[] = [top];
  const frames: Frame[] = [];
  const tables: Table[] = [];
  let changed = false;
  let dropped = 0;
  let pre = 0;
  let hiddenText = 0;
  if (!MAY_CHANGE.test(html)) return html;
  const sink = () => sinks[sinks.length - 1]!;
  const table = () => tables[tables.length - 1];
  /** Whether the innermost open element is a table's own part (not a cell's content). */
  const inTableStructure = () => {
    const f = frames[frames.length - 1];
    return f !== undefined && (f.kind === 'table' || f.kind === 'section' || f.kind === 'row');
  };
  const newRow = (t: Table): Row => {
    const row: Row = { cells: [] };
    t[t.section].push(row);
    t.row = row;
    return row;
  };

  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (CHANGED.has(name)) changed = true;
        const written = `<${name}${attributes(attribs)}>`;
        const isVoid = VOID.has(name);
        let frame: Frame;
        const t = table();
        if (dropped > 0 || name === 'rp') {
          dropped++;
          frame = { kind: 'dropped' };
        } else if (name === 'table') {
          const created: Table = { captions: [], head: [], body: [], foot: [], section: 'body', row: null };
          tables.push(created);
          frame = { kind: 'table', table: created };
        } else if (t && inTableStructure() && TABLE_PARTS.has(name)) {
          if (name === 'caption') {
            const s = new Sink(true);
            t.captions.push(s);
            sinks.push(s);
            frame = { kind: 'caption', sink: s };
          } else if (name === 'thead' || name === 'tbody' || name === 'tfoot') {
            t.section = name === 'thead' ? 'head' : name === 'tfoot' ? 'foot' : 'body';
            t.row = null;
            frame = { kind: 'section', table: t };
          } else if (name === 'tr') {
            newRow(t);
            frame = { kind: 'row', table: t };
          } else if (name === 'td' || name === 'th') {
            const s = new Sink(true);
            (t.row ?? newRow(t)).cells.push(s);
            sinks.push(s);
            frame = { kind: 'cell', sink: s };
          } else frame = { kind: 'transparent' }; // colgroup, col: no text
        } else if (name === 'rt') {
          sink().text('(');
          frame = { kind: 'rt' };
        } else if (sink().inCell && (CELL_LINES.has(name) || name === 'br')) {
          // A block or line break in a cell (kept or dropped): its text is a line of the row (none before or after it).
          sink().boundary();
          frame = { kind: 'line' };
        } else if (SEPARATED.has(name)) {
          if (name === 'pre') sink().preEdge();
          else sink().boundary();
          if (name === 'pre') pre++;
          frame = { kind: name === 'pre' ? 'pre' : 'separated' };
        } else {
          if (KEPT_BLOCKS.has(name) || name === 'br') sink().lineEnd(written);
          else sink().tag(written);
          const phrasing = !HOLD_PARAGRAPHS.has(name);
          if (phrasing) sink().phrasing++;
          if (HIDDEN_TEXT.has(name)) hiddenText++;
          frame = { kind: 'written', name, phrasing };
        }
        if (isVoid) close(frame);
        else frames.push(frame);
      },
      onclosetag(name, isImplied) {
        if (VOID.has(name)) return;
        const frame = frames.pop();
        if (frame) close(frame, isImplied);
      },
      ontext(text) {
        if (dropped > 0) return;
        // Text directly in a table (not in a cell) stands before it, as a browser puts it; whitespace there is dropped.
        if (inTableStructure() && !visible(text)) return;
        const into = sink();
        if (hiddenText > 0) {
          into.tag(text);
          return;
        }
        if (pre > 0 && text.includes('\n')) {
          const lines = text.split('\n');
          lines.forEach((line, i) => {
            if (i > 0) {
              into.text('\n');
              into.preLineEnd();
            }
            if (line !== '') into.text(line);
          });
          return;
        }
        into.text(text);
      },
      oncomment(data) {
        if (dropped === 0) sink().tag(`<!--${data}-->`);
      },
    },
    { decodeEntities: false },
  );

  /** The end of an element (an end tag, or a void element's start). */
  function close(frame: Frame, implied = false): void {
    switch (frame.kind) {
      case 'dropped':
        dropped--;
        return;
      case 'table': {
        tables.pop();
        const t = frame.table;
        const rows = [...t.head, ...t.body, ...t.foot];
        const paragraphs: Part[] = [
          ...t.captions.filter((c) => c.hasText).map((c) => c.parts),
          ...rows.filter((r) => r.cells.some((c) => c.hasText)).map((r) => rowParagraph(r.cells)),
        ];
        sink().paragraphs(paragraphs);
        return;
      }
      case 'section':
        frame.table.section = 'body';
        frame.table.row = null;
        return;
      case 'row':
        frame.table.row = null;
        return;
      case 'cell':
      case 'caption':
        sinks.pop()!.end();
        return;
      case 'rt':
        sink().text(')');
        return;
      case 'line':
      case 'separated':
        sink().boundary();
        return;
      case 'pre':
        pre--;
        sink().preEdge();
        return;
      case 'transparent':
        return;
      case 'written':
        if (frame.phrasing) sink().phrasing--;
        if (HIDDEN_TEXT.has(frame.name)) hiddenText--;
        if (VOID.has(frame.name)) return;
        // Elements open at the end of the input are left for the next parser to close there (as wellFormedHtml leaves them).
        if (implied && ending) return;
        if (KEPT_BLOCKS.has(frame.name)) sink().lineEnd(`</${frame.name}>`);
        else sink().tag(`</${frame.name}>`);
        return;
    }
  }

  let ending = false;
  parser.write(html);
  ending = true;
  parser.end();
  return changed ? joined(top.parts) : html;
}

/** Elements without content or end tag (htmlparser2's list). */
const VOID = new Set(['area', 'base', 'basefont', 'br', 'col', 'command', 'embed', 'frame', 'hr', 'image', 'img', 'input', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr']);

function attributes(attribs: Record<string, string>): string {
  let out = '';
  for (const [name, value] of Object.entries(attribs)) out += ` ${name}="${value.replaceAll('"', '&quot;')}"`;
  return out;
}
