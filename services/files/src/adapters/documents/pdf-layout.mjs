// The PDF reading of the parser worker (parser-worker.mjs): a PDF's text layer (pdf.js through unpdf) read as paragraph
// blocks. A page's text items are put in reading order (two columns read one after the other) and gathered into lines;
// running heads and feet are dropped; lines are joined into paragraphs (by line pitch, short lines ending a sentence and
// changes of size), words hyphenated at a line's end are joined unless the document's own hyphens or an English word
// list say otherwise, link
// annotations are anchored at their words, and a paragraph running on over a page break is joined across it.
// Plain ESM, as the worker, so it needs no TypeScript loader.
// pdfBlocks(bytes, maxPages): the paragraph blocks of the first maxPages pages; pdfHasText(bytes, maxPages): whether
// any of them has text.

const MARK_CHARACTERS = /[\ue000\ue001]/g;

const ITEM_GAP = 0.15;

function linesOf(items) {
  const lines = [];
  let current = null;
  for (const item of items) {
    const y = item.transform?.[5] ?? 0;
    const size = Math.abs(item.transform?.[3] ?? item.height ?? 0) || 10;
    // Without the two characters the .docx reading makes its marks of (word-documents.mjs MARK_CHARACTERS), as every
    // reading gives its text.
    const str = (item.str ?? '').replace(MARK_CHARACTERS, '');
    // Measured against the larger of the line's and the item's size, so a superscript (a footnote mark, raised and set
    // smaller) stays in its line rather than becoming a line, and a paragraph, of its own.
    if (current && Math.abs(current.y - y) > Math.max(current.size, size) * 0.5 && str.trim()) {
      lines.push(current);
      current = null;
    }
    if (str.length > 0) {
      if (!current) current = { text: '', y, size, items: [], links: [], left: Infinity, right: -Infinity };
      const x = item.transform?.[4] ?? 0;
      // Items set apart on the line (by more than ITEM_GAP of the text's size) are words apart, whichever way the line
      // runs: pdf.js writes the spaces inside an item, not between two, and a right-to-left line's English words or
      // digits are items of their own ("والتجارة." "The English", "מספר" "42").
      const last = current.items[current.items.length - 1];
      if (last && last.width > 0 && (item.width ?? 0) > 0 && !/\s$/.test(current.text) && !/^\s/.test(str)) {
        const gap = Math.max(x - (last.x + last.width), last.x - (x + item.width));
        if (gap > Math.max(current.size, size) * ITEM_GAP) current.text += ' ';
      }
      current.items.push({ at: current.text.length, x, width: item.width ?? 0, length: str.length, y, size, str, font: item.fontName });
      current.text += str;
      current.size = Math.max(current.size, size);
      if (VISIBLE_CHARACTER.test(str)) {
        current.left = Math.min(current.left, x);
        current.right = Math.max(current.right, x + Math.max(0, item.width ?? 0));
      }
    }
    if (item.hasEOL && current) {
      lines.push(current);
      current = null;
    }
  }
  if (current) lines.push(current);
  return lines.filter((l) => l.text.trim().length > 0).map(withMarksAndLabels);
}

// Note marks and labels. A reference mark (digits raised above the line's baseline by more than RAISED of its size, set
// smaller than MARK_SIZE of it) is written in Unicode superscript digits, so it is not read as part of the word before
// it ("school.1" reads "school.¹"); the baseline is that of the line's largest text. A line that starts with a note's
// label (a number, a small roman numeral or a note symbol, as an item of its own) set against its text, which starts
// in upper case or with a digit, starts a note: a paragraph of its own, its label set apart ("1Footnote text" reads
// "1 Footnote text").
const RAISED = 0.15;
const MARK_SIZE = 0.8;
const SUPERSCRIPT_DIGITS = '⁰¹²³⁴⁵⁶⁷⁸⁹';
const NOTE_LABEL = /^(?:\d{1,3}|[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}|[ivxlc]{1,7}|[*†‡§¶]{1,3})$/u;
const NOTE_TEXT_START = /^[\p{Lu}\d]/u;

function withMarksAndLabels(line) {
  const items = line.items;
  if (!items || items.length < 2) return line;
  const base = items.reduce((a, b) => (b.size > a.size ? b : a));
  let text = line.text;
  for (const item of items) {
    if (item.size < base.size * MARK_SIZE && item.y > base.y + base.size * RAISED && /^\d{1,3}$/.test(item.str.trim())) {
      text = text.slice(0, item.at) + text.slice(item.at, item.at + item.length).replace(/\d/g, (d) => SUPERSCRIPT_DIGITS[Number(d)]) + text.slice(item.at + item.length);
    }
  }
  line.text = text;
  line.y = base.y;
  const [label, next] = items;
  if (NOTE_LABEL.test(label.str) && label.at === 0 && next.at === label.at + label.length) {
    // Set against its text, or apart from it by a space of its own.
    const spaced = next.str.trim() === '' && items.length > 2;
    if (NOTE_TEXT_START.test(spaced ? items[2].str : next.str)) {
      line.note = true;
      if (!spaced) {
        line.text = `${text.slice(0, next.at)} ${text.slice(next.at)}`;
        for (const item of items.slice(1)) item.at += 1;
      }
    }
  }
  if (!line.note) listMarkerOf(line);
  if (!line.note && !line.list) cellsOf(line);
  return line;
}

// Table cells: a line whose items stand apart by more than CELL_GAP times the text's size (a gap, or a space item that
// wide, as pdf.js writes the space between two cells) holds cells (line.cells: where each starts and its text).
const CELL_GAP = 1;
/** As @cards/card-rules' TABLE_CELL_SEPARATOR (this plain ESM worker cannot import it). */
const TABLE_CELL_SEPARATOR = ' | ';

function cellsOf(line) {
  if (RTL_CHARACTER.test(line.text)) return;
  const cells = [];
  let cell = null;
  let right = -Infinity;
  for (const item of line.items) {
    const blank = item.str.trim() === '';
    const wide = item.size * CELL_GAP;
    if (blank) {
      if (item.width > wide) cell = null;
      continue;
    }
    if (cell && item.x - right > wide) cell = null;
    if (!cell) cells.push((cell = { x: item.x, text: '' }));
    cell.text += line.text.slice(item.at, item.at + item.length);
    right = item.x + item.width;
    cell.right = right;
  }
  if (cells.length >= 2 && cells.length <= MAX_TABLE_COLUMNS) line.cells = cells.map((c) => ({ x: c.x, right: c.right, text: c.text.replace(/\s+/g, ' ').trim() }));
}

// Right-aligned columns (numbers, as tables set them): a table's columns are told by their cells' left edges
// (withTableRows), and a right-aligned column's cells start wherever their width puts them ("12", "148", "1,204" read as
// three columns). Short cells (at most RIGHT_CELL_WORDS words: a justified line's words set wide are longer runs) whose
// right edges line up within COLUMN_SLACK on two lines or more, while their left edges do not, are one column's: each is
// given the leftmost of their left edges. Sorted once by right edge, so linear after the sort.
const RIGHT_CELL_WORDS = 4;

function withRightAlignedCells(lines) {
  const cells = [];
  for (const line of lines) for (const cell of line.cells ?? []) if (wordsIn(cell.text) <= RIGHT_CELL_WORDS) cells.push({ cell, line });
  cells.sort((a, b) => a.cell.right - b.cell.right);
  for (let i = 0; i < cells.length; ) {
    let j = i + 1;
    while (j < cells.length && cells[j].cell.right - cells[i].cell.right <= COLUMN_SLACK) j++;
    let left = Infinity;
    let lines = 0;
    for (let k = i; k < j; k++) {
      left = Math.min(left, cells[k].cell.x);
      if (k === i || cells[k].line !== cells[k - 1].line) lines++;
    }
    let ragged = false;
    for (let k = i; k < j; k++) if (cells[k].cell.x - left > COLUMN_SLACK) ragged = true;
    if (lines >= 2 && ragged) for (let k = i; k < j; k++) Object.assign(cells[k].cell, { x: left, align: 'right', anchor: cells[j - 1].cell.right });
    i = j;
  }
  withCentredCells(lines);
}

// Centred columns (a grade, a short word under its head, as tables set them): short cells not of a right-aligned column
// whose centres line up within COLUMN_SLACK on two lines or more, while their left edges do not and their right edges
// do not, are one column's, as withRightAlignedCells makes a right-aligned column one: each is given the leftmost of
// their left edges ("A", "Poor" and "Very good" were three columns and their rows no table). Sorted once by centre, so
// linear after the sort.
function withCentredCells(lines) {
  const cells = [];
  for (const line of lines) for (const cell of line.cells ?? []) if (!cell.align && wordsIn(cell.text) <= RIGHT_CELL_WORDS) cells.push({ cell, line, centre: (cell.x + cell.right) / 2 });
  cells.sort((a, b) => a.centre - b.centre);
  for (let i = 0; i < cells.length; ) {
    let j = i + 1;
    while (j < cells.length && cells[j].centre - cells[i].centre <= COLUMN_SLACK) j++;
    let left = Infinity;
    let right = -Infinity;
    let lines = 0;
    for (let k = i; k < j; k++) {
      left = Math.min(left, cells[k].cell.x);
      right = Math.max(right, cells[k].cell.right);
      if (k === i || cells[k].line !== cells[k - 1].line) lines++;
    }
    let raggedLeft = false;
    let raggedRight = false;
    for (let k = i; k < j; k++) {
      if (cells[k].cell.x - left > COLUMN_SLACK) raggedLeft = true;
      if (right - cells[k].cell.right > COLUMN_SLACK) raggedRight = true;
    }
    if (lines >= 2 && raggedLeft && raggedRight) for (let k = i; k < j; k++) Object.assign(cells[k].cell, { x: left, align: 'centre', anchor: cells[i].centre });
    i = j;
  }
}

/**
 * The cell of `row` in a right-aligned or centred column (withRightAlignedCells) whose right edge or centre `line`
 * shares: a line of that cell after its first (its left edge is no column's).
 */
function alignedCellOf(row, line) {
  // Within the column (from its left edge): a paragraph after the table set to the same right margin is no cell's line.
  return row.cells.find(
    (cell) =>
      line.left >= cell.x - COLUMN_SLACK &&
      ((cell.align === 'right' && Math.abs(cell.anchor - line.right) <= COLUMN_SLACK) || (cell.align === 'centre' && Math.abs(cell.anchor - (line.left + line.right) / 2) <= COLUMN_SLACK)),
  );
}

// A table's rows: a line of cells starts a row, and the lines after it that start where one of the table's columns
// does (the columns of its rows so far), at the row's height (a cell drawn after the others) or just below it (a cell's
// next line), add to that column's cell. A row is one line, its cells in column order separated by
// TABLE_CELL_SEPARATOR (an empty one's too), which is a paragraph of its own.
const COLUMN_SLACK = 1.5;
const ROW_REACH = 12;
// A table has at most MAX_TABLE_COLUMNS columns: a line of more cells is no row, and a row whose cells would take its
// table's columns past it starts a table of its own (rows a little out of line each added theirs: 16,000 five-cell rows
// shifted 2 pt every other row made a table of 40,000 columns, every row read against each, 58.8 s for one page).
const MAX_TABLE_COLUMNS = 32;

function withTableRows(pageLines) {
  // Cells count where a line near it (within ROW_REACH times its size above or below) has cells starting where each of its own, or it where
  // each of the other's, do: a table's columns line up, the words of justified lines set apart do not.
  const aligned = (a, b) => {
    const [fewer, more] = a.length <= b.length ? [a, b] : [b, a];
    return fewer.every((cell) => more.some((other) => Math.abs(other.x - cell.x) <= COLUMN_SLACK));
  };
  const lines = pageLines.map((line, i) => {
    if (!line.cells) return line;
    for (let k = Math.max(0, i - 4 * ROW_REACH); k <= Math.min(pageLines.length - 1, i + 4 * ROW_REACH); k++) {
      const other = pageLines[k];
      if (k !== i && other.cells && Math.abs(other.y - line.y) <= line.size * ROW_REACH && aligned(line.cells, other.cells)) return line;
    }
    const { cells, ...plain } = line;
    return plain;
  });
  const out = [];
  let columns = [];
  let row = null;
  const close = () => {
    if (!row) return;
    const texts = columns.map((x) => row.cells.filter((c) => Math.abs(c.x - x) <= COLUMN_SLACK).map((c) => c.text).join(' '));
    out.push({ ...row.line, text: texts.join(TABLE_CELL_SEPARATOR).replace(/\s+/g, ' ').trim(), links: row.links, row: true, right: row.right, left: row.left, y: row.bottom, columns: [...columns] });
    row = null;
  };
  for (const line of lines) {
    let column = row && columns.find((x) => Math.abs(x - line.left) <= COLUMN_SLACK);
    // A further line of a cell in a right-aligned or centred column starts where its width puts it: it lines up with the
    // cell's right edge or centre instead (it was a paragraph of its own after the row).
    if (row && column === undefined && !line.cells) column = alignedCellOf(row, line)?.x;
    // A cell drawn after the others on the row's baseline, right of them, in a column not seen yet (the table's head,
    // repeated on each page, is dropped as a running head).
    if (row && column === undefined && !line.cells && columns.length < MAX_TABLE_COLUMNS && Math.abs(line.y - row.line.y) <= line.size * 0.2 && line.left > row.rightmost) {
      column = line.left;
      columns = [...columns, column].sort((a, b) => a - b);
    }
    // A line reaching into the next column is no cell's (a paragraph after the table at its left edge).
    const nextColumn = column === undefined ? undefined : columns.find((x) => x > column + COLUMN_SLACK);
    const inColumn = column !== undefined && (nextColumn === undefined || line.right <= nextColumn + COLUMN_SLACK);
    if (row && !line.cells && inColumn && line.y <= row.line.y + line.size * 0.5 && row.bottom - line.y <= line.size * 1.6) {
      row.cells.push({ x: column, text: line.text.trim() });
      row.rightmost = Math.max(row.rightmost, column);
      row.bottom = Math.min(row.bottom, line.y);
      for (const link of line.links) row.links.push({ ...link, at: 0 });
      row.left = Math.min(row.left, line.left);
      row.right = Math.max(row.right, line.right);
      continue;
    }
    close();
    if (line.cells) {
      const added = line.cells.filter((cell) => !columns.some((x) => Math.abs(x - cell.x) <= COLUMN_SLACK));
      if (!out.length || !out[out.length - 1].row || columns.length + added.length > MAX_TABLE_COLUMNS) columns = [];
      for (const cell of line.cells) if (!columns.some((x) => Math.abs(x - cell.x) <= COLUMN_SLACK)) columns.push(cell.x);
      columns.sort((a, b) => a - b);
      const rightmost = line.cells.reduce((most, cell) => Math.max(most, cell.x), -Infinity);
      row = { line, cells: [...line.cells], rightmost, bottom: line.y, links: line.links.map((link) => ({ ...link, at: 0 })), left: line.left, right: line.right };
      continue;
    }
    out.push(line);
  }
  close();
  return out;
}

// List items: a line whose first item is a list marker alone (a bullet, "–", or a number, letter or small roman numeral
// with "." or ")", maybe in brackets), a space or a gap after it, starts a list item; the marker is taken out of its
// text (a bullet is no word) and kept beside it (line.list: the marker and where it and the item's text start).
// A Symbol or Wingdings bullet (Word's) is a private-use character.
const LIST_BULLET = /^[•◦▪▫●○■□‣⁃∙·–—\-\ue002-\uf8ff]$/u;
const LIST_NUMBER = /^\(?(\d{1,3}|[a-z]|[ivxlc]{2,7})[.)]$/;

function listMarkerOf(line) {
  const items = line.items;
  if (items.length < 2 || items[0].at !== 0) return;
  const marker = items[0].str.trim();
  if (!LIST_BULLET.test(marker) && !LIST_NUMBER.test(marker)) return;
  let next = 1;
  while (next < items.length && items[next].str.trim() === '') next++;
  if (next >= items.length) return;
  const spaced = next > 1 || /\s$/.test(items[0].str) || items[next].x - (items[0].x + items[0].width) > items[0].size * ITEM_GAP;
  if (!spaced) return;
  const cut = items[next].at;
  line.text = line.text.slice(cut);
  for (const item of items) item.at = Math.max(0, item.at - cut);
  line.list = { marker, x: items[0].x, textX: items[next].x };
}

// Two-column pages: pdf.js gives a page's text items in drawing order, which for two columns set side by side is often
// row by row across both ("left 1, right 1, left 2, ..."). A page has two columns when a vertical gap near its middle is
// crossed by (almost) no text while at least MIN_COLUMN_ROWS rows have text on each side of it, and the text on each side
// fills its column (so a table of short cells, a single column of short lines or a centered heading is not taken for
// one). Its items are then read left column first, then the right; a line crossing the gap (a title over both columns)
// stays where it is, between what is above it and what is below it.
const MIN_COLUMN_ROWS = 5;
/** Places tried for the gap between two columns: one a point apart, across the middle 40% of a page up to 36,000 wide. */
const MAX_SPLIT_TRIES = 14_400;

function inReadingOrder(items) {
  const boxes = items.map((item) => {
    const x = item.transform?.[4] ?? 0;
    return { item, x, right: x + Math.max(0, item.width ?? 0), y: item.transform?.[5] ?? 0, visible: VISIBLE_CHARACTER.test(item.str ?? '') };
  });
  const visible = boxes.filter((b) => b.visible);
  if (visible.length < 2 * MIN_COLUMN_ROWS) return items;
  let left = Infinity;
  let right = -Infinity;
  for (const b of visible) {
    left = Math.min(left, b.x);
    right = Math.max(right, b.right);
  }
  const width = right - left;
  if (!(width > 0)) return items;
  const rowOf = (b) => Math.round(b.y);
  const rows = new Set(visible.map(rowOf)).size;
  // The x in the middle band crossed by the fewest rows, tried a point apart (at most MAX_SPLIT_TRIES of them): each row's
  // items give the tries they cross (a range of them, found by halving), a row's ranges are merged, and the rows crossing
  // each try are counted in one sweep, so the search is linear in the items, not items x tries (a page 16,000 points
  // wide of 80,000 items was 6,400 x 80,000 steps).
  const step = Math.max(1, (width * 0.4) / MAX_SPLIT_TRIES);
  const tries = [];
  for (let x = left + width * 0.3; x <= left + width * 0.7; x += step) tries.push(x);
  const firstAbove = (value) => {
    let low = 0;
    let high = tries.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (tries[middle] > value) high = middle;
      else low = middle + 1;
    }
    return low;
  };
  const firstAtOrAbove = (value) => {
    let low = 0;
    let high = tries.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (tries[middle] >= value) high = middle;
      else low = middle + 1;
    }
    return low;
  };
  const spansByRow = new Map();
  for (const b of visible) {
    // The tries x with b.x < x < b.right: [from, to).
    const from = firstAbove(b.x);
    const to = firstAtOrAbove(b.right);
    if (from >= to) continue;
    const spans = spansByRow.get(rowOf(b));
    if (spans) spans.push([from, to]);
    else spansByRow.set(rowOf(b), [[from, to]]);
  }
  const crossings = new Int32Array(tries.length + 1);
  for (const spans of spansByRow.values()) {
    spans.sort((a, b) => a[0] - b[0]);
    let [from, to] = spans[0];
    for (let i = 1; i <= spans.length; i++) {
      if (i < spans.length && spans[i][0] <= to) {
        to = Math.max(to, spans[i][1]);
        continue;
      }
      crossings[from]++;
      crossings[to]--;
      if (i < spans.length) [from, to] = spans[i];
    }
  }
  let split = null;
  let fewest = Infinity;
  for (let k = 0, crossing = 0; k < tries.length; k++) {
    crossing += crossings[k];
    if (crossing < fewest) {
      fewest = crossing;
      split = tries[k];
    }
  }
  if (split === null || fewest > rows * 0.15) return items;
  const sides = { left: new Map(), right: new Map() };
  for (const b of visible) {
    if (b.x < split && b.right > split) continue;
    const side = b.right <= split ? sides.left : sides.right;
    const row = side.get(rowOf(b)) ?? { from: Infinity, to: -Infinity };
    side.set(rowOf(b), { from: Math.min(row.from, b.x), to: Math.max(row.to, b.right) });
  }
  if (sides.left.size < MIN_COLUMN_ROWS || sides.right.size < MIN_COLUMN_ROWS) return items;
  const leftRows = [...sides.left.values()];
  const rightRows = [...sides.right.values()];
  const gapFrom = leftRows.reduce((most, r) => Math.max(most, r.to), -Infinity);
  const gapTo = rightRows.reduce((least, r) => Math.min(least, r.from), Infinity);
  const leftWidth = gapFrom - left;
  const rightWidth = right - gapTo;
  if (gapTo - gapFrom <= 0 || leftWidth < width * 0.25 || rightWidth < width * 0.25) return items;
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  if (median(leftRows.map((r) => r.to - r.from)) < leftWidth * 0.6 || median(rightRows.map((r) => r.to - r.from)) < rightWidth * 0.6) return items;
  // Lines crossing the gap cut the page into bands, read top to bottom, each left column first.
  const spanning = new Set(boxes.filter((b) => b.visible && b.x < split && b.right > split));
  const bandTops = [...new Set([...spanning].map(rowOf))].sort((a, b) => b - a);
  // A box's band: how many of the lines crossing the gap are above it (bandTops, highest first, halved).
  const bandOf = (b) => {
    const row = rowOf(b);
    let low = 0;
    let high = bandTops.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (bandTops[middle] > row) low = middle + 1;
      else high = middle;
    }
    return low;
  };
  const bands = Array.from({ length: bandTops.length + 1 }, () => ({ left: [], right: [], spanning: [] }));
  for (const b of boxes) {
    if (spanning.has(b)) {
      // Each crossing line after the band above it (rowOf(b) is bandTops[bandOf(b)]).
      bands[bandOf(b)].spanning.push(b);
      continue;
    }
    bands[bandOf(b)][b.x < split ? 'left' : 'right'].push(b);
  }
  const ordered = [];
  for (const band of bands) for (const part of [band.left, band.right, band.spanning]) for (const b of part) ordered.push(b.item);
  return ordered;
}

// A word hyphenated at a line's end (a letter, then a hyphen, a soft hyphen or U+2010) and continued in lower case on the
// next line is joined without its hyphen, in any script with cases ("Begrün-" "dung"), unless the hyphen is more likely
// the word's own (keepsHyphen).
const HYPHENATED_END = /\p{L}[-\u00ad\u2010]$/u;
const CONTINUED_WORD = /^\p{Ll}/u;

// Evidence the document gives on its own hyphens (hyphenEvidenceOf, read before its paragraphs are built): the pairs of
// words a hyphen joins inside a line ("state-of-the-art": "state-of", "of-the", "the-art"), and the words it writes
// (runs of letters), lower-cased.
let hyphenEvidence = { compounds: new Set(), words: new Set() };
const LETTER = /^[\p{L}\p{M}]$/u;
const HYPHEN = /[-\u2010]/;
/** Words longer than this are no words: the scans below look no further (a hostile PDF may hold a line of one token). */
const LONGEST_WORD = 64;

/** The letters that end `text`, up to LONGEST_WORD of them. */
function lettersAtEnd(text) {
  const chars = Array.from(text.slice(-2 * LONGEST_WORD));
  let from = chars.length;
  while (from > 0 && chars.length - from < LONGEST_WORD && LETTER.test(chars[from - 1])) from--;
  return chars.slice(from).join('');
}

/** The letters that start `text` (lower-cased), up to LONGEST_WORD of them. */
function lettersAtStart(text) {
  const chars = Array.from(text.slice(0, 2 * LONGEST_WORD));
  let to = 0;
  while (to < chars.length && to < LONGEST_WORD && LETTER.test(chars[to])) to++;
  return chars.slice(0, to).join('').toLowerCase();
}

function hyphenEvidenceOf(texts) {
  const compounds = new Set();
  const words = new Set();
  for (const text of texts) {
    for (const token of text.split(/\s+/)) {
      if (token.length > 4 * LONGEST_WORD) continue;
      const parts = token.split(HYPHEN);
      for (let i = 1; i < parts.length; i++) {
        const head = lettersAtEnd(parts[i - 1]).toLowerCase();
        const tail = lettersAtStart(parts[i]);
        if (head && tail) compounds.add(`${head}-${tail}`);
      }
      for (const part of token.split(/[^\p{L}\p{M}]+/u)) if (part) words.add(part.toLowerCase());
    }
  }
  return { compounds, words };
}

// Evidence the document gives on its own URLs (urlEvidenceOf): each URL written whole on one line (its scheme may be on
// the line before), or a link's target, and its beginnings up to each "/", "?", "#", "&" or "." in it, so that a URL broken after a "/" before a plain word
// ("https://example.net/history/" "bridges") goes on where the document writes that URL elsewhere.
let urlEvidence = new Set();
/**
 * Longer URLs are no evidence, and the beginnings stop at URL_EVIDENCE_CHARS characters in all (a hostile PDF may hold
 * lines of nothing else: the work stays linear in the document).
 */
const LONGEST_URL_EVIDENCE = 512;
const URL_EVIDENCE_CHARS = 4_000_000;

/** A URL as the evidence keeps it: without its scheme, which Writer often sets alone on the line before ("https://"). */
const urlKey = (url) => url.replace(/^[a-z][a-z\d+.-]{0,15}:\/\//i, '');

function urlEvidenceOf(texts, links) {
  const found = new Set();
  let budget = URL_EVIDENCE_CHARS;
  const add = (written) => {
    if (written.length > LONGEST_URL_EVIDENCE || budget <= 0 || !URL_START.test(written)) return;
    const url = urlKey(written);
    if (found.has(url)) return;
    for (let i = 0; i < url.length && budget > 0; i++) {
      if (!'/?#&.'.includes(url[i])) continue;
      budget -= i;
      found.add(url.slice(0, i));
    }
    budget -= url.length;
    found.add(url);
  };
  for (const text of texts) {
    for (const token of text.split(/\s+/)) {
      let end = token.length;
      while (end > 0 && CLOSING.test(token[end - 1])) end--;
      if (end > 0) add(token.slice(0, end).replace(OPENING, ''));
    }
  }
  for (const url of links) add(url);
  return found;
}

// English words (the word-list package: ~274,000 lower-case words, MIT), read once per worker, and only for a document
// with a hyphen at a line's end (loadWordsFor): a hyphen between two words whose joining is no word is the compound's own
// ("well-" "known": "wellknown" is no word), one inside a syllable is a typesetter's ("in-" "formation"). About 0.1 s
// and 35 MB for a worker that needs it. Other languages find no words in it, and their breaks are judged without it.
let englishWords = null;
const LINE_END_HYPHEN = /\p{L}[-\u2010]\s*$/u;

async function loadWordsFor(texts) {
  if (englishWords || !texts.some((text) => LINE_END_HYPHEN.test(text))) return;
  const [{ default: wordListPath }, { readFile }] = await Promise.all([import('word-list'), import('node:fs/promises')]);
  englishWords = new Set((await readFile(wordListPath, 'utf8')).split('\n'));
}

const isWord = (word) => word.length > 1 && englishWords !== null && englishWords.has(word);

/** The continuation goes on as a hyphenated compound ("in-law"): its first letters are followed by a hyphen and a letter. */
const COMPOUND_CONTINUES = /^[\p{L}\p{M}]{1,64}[-\u2010][\p{L}\p{M}]/u;

/**
 * Whether a hyphen (not a soft hyphen) at the end of `before`, with `after` continuing in lower case, is the word's own
 * hyphen rather than a typesetter's break. The word before it already holds a hyphen ("state-of-the-", "mother-in-": TeX
 * breaks such a word only at its own hyphens) unless the part after that hyphen joined to the continuation is an English
 * word or one the document writes ("decision-mak-" "ing", "well-be-" "ing": Writer and Word break inside a compound's parts too); it is one letter
 * ("n-" "tridecanal": no typesetter leaves one letter at a line end); or the document writes the same compound with its hyphen inside a line
 * ("well-known") and never the joined word ("wellknown"); a document that writes the joined word ("cooperation") has it
 * joined. Then: the word after it goes on with a hyphen of its own ("mother-" "in-law": such a word is broken at its own
 * hyphens), unless the joined part is an English word ("moth-" "er-in-law"); or both parts are English words and their
 * joining is none ("well-" "known", "self-" "esteem", "long-" "term"; "in-" "formation" and "man-" "age" join), the part
 * before it written in lower case (a name is no dictionary word: "Washing-" "ton").
 */
function keepsHyphen(before, after) {
  if (before.endsWith('\u00ad')) return false;
  const letters = lettersAtEnd(before.slice(0, -1));
  const head = letters.toLowerCase();
  const tail = lettersAtStart(after);
  const joined = head + tail;
  if (/[\p{L}\p{M}][-\u2010]$/u.test(before.slice(0, -1 - letters.length).slice(-3))) return !isWord(joined) && !hyphenEvidence.words.has(joined);
  if (Array.from(letters).length === 1) return true;
  if (hyphenEvidence.compounds.has(`${head}-${tail}`)) return !hyphenEvidence.words.has(joined);
  if (hyphenEvidence.words.has(joined)) return false;
  if (COMPOUND_CONTINUES.test(after)) return !isWord(joined);
  return letters === head && isWord(head) && isWord(tail) && !isWord(joined);
}

// A URL or an e-mail address broken at a line's end goes on without a space: Writer and Word break a URL after "/"
// ("https://" "example.net/", "example.net/coffee/" "rust-alerts"), before a query ("stations?" "id=4471", "&" "lang=en")
// and put the sentence's "." or "," after a URL alone at the next line's start; Writer's hyphenation also breaks after a
// dot or "@" with a hyphen of its own ("example.-" "com", "j.-" "smith@example.com", "survey@-" "coastal.example.net").
// Only a line whose last word is a URL (a scheme, "www." or a domain and a slash) or an address (the joining is one) is
// joined so; "and/" "or", a sentence's "?" and a URL ending in "/" before a word such as "for" (ENDS_A_URL) keep their
// space. Writer hyphenates a URL's words too ("exam-" "ple.net"): a hyphen after a letter inside a URL is joined where
// the joining is a word, and kept where it is none (a slug's hyphen: "example-" "org").
// A URL's last word is looked for in the last URL_SCAN characters of the paragraph (a longer URL is joined as words are).
const URL_SCAN = 2048;
const URL_START = /^(?:[a-z][a-z\d+.-]{0,15}:\/\/|www\.|(?:[\p{L}\d-]+\.)+\p{L}{2,}\/)/iu;
const EMAIL = /^[\p{L}\p{M}\d._%+-]+@[\p{L}\p{M}\d-]+(?:\.[\p{L}\p{M}\d-]+)+$/u;
/** Opening punctuation before a URL ("(https://..."), and a sentence's punctuation after one ("....pdf."). */
const OPENING = /^[(\[<"'“‘«]+/u;
const CLOSING = /^[.,;:!?)\]>"'”’»]$/u;
const SPACE = /^\s$/;
/**
 * Words that go on a sentence after a URL ending in "/" ("https://example.com/" "for details"), not its path, even where
 * they look like one (PATH_LIKE).
 */
const ENDS_A_URL = new Set(
  'a an and are as at be been but by can could for from had has have if in into is it its may might must not of on or our shall should so than that the their then there these they this those to under was we were when where which while who will with would you your'.split(' '),
);
/**
 * A URL ending in "/" at a line's end goes on with the next line's first word only when that word looks like a path
 * (a "/", ".", "-", "_", "=", "?", "&", "#", "%" or a digit in it: "plankton-sheet", "README.md", "10.1000/182",
 * "v2"), or when the URL has no host yet ("https://" "example.net/"). A plain word ("https://www.example.org/"
 * "Volunteers count", "example.com/" "hosts") keeps its space: a path word wrongly kept apart ("/history/ bridges") is
 * less harmful than a sentence's word glued into the URL, and any word could be either.
 */
const PATH_LIKE = /[/.\-_=?&#%\d]/u;
/** A line that starts with a sentence's punctuation alone (",", "." or "),"): set after the URL ending the line before. */
const PUNCTUATION_START = /^[.,;:!?)\]”’»]+(?:\s|$)/u;

/** The joining of `before` and `after` (trimmed lines) when `before` ends inside a URL or an e-mail address, else null. */
function urlJoin(before, after) {
  // The last word and the next line's first, found by scanning (a regular expression anchored at the end would try
  // each position of a long word: quadratic in it).
  const tail = before.slice(-URL_SCAN);
  let space = tail.length;
  while (space > 0 && !SPACE.test(tail[space - 1])) space--;
  if (space === 0 && before.length > URL_SCAN) return null;
  const last = tail.slice(space).replace(OPENING, '');
  const head = after.slice(0, URL_SCAN);
  let firstEnd = 0;
  while (firstEnd < head.length && !SPACE.test(head[firstEnd])) firstEnd++;
  const first = head.slice(0, firstEnd);
  const url = URL_START.test(last);
  if (url || last.includes('@')) {
    // A URL or an address that ends the line whole, the sentence's punctuation on the next line.
    if (PUNCTUATION_START.test(after) && (url || EMAIL.test(last))) return before + after;
  }
  let wordEnd = first.length;
  while (wordEnd > 0 && CLOSING.test(first[wordEnd - 1])) wordEnd--;
  const word = first.slice(0, wordEnd);
  if (!word) return null;
  const hyphen = /[-\u2010]$/.test(last);
  const end = hyphen ? last.slice(0, -1) : last;
  if (url) {
    // A hyphen after a dot, "/", "@" and the like is the typesetter's. One after a letter is the typesetter's where the
    // joining is a word, English or the document's ("exam-" "ple.net", "sta-" "tions?id=1"), else the URL's own
    // ("example-" "org/dune-survey", a slug's hyphen), and the URL goes on after it whatever follows ("v-" "2/").
    if (hyphen) {
      if (/[./@?&=#_~%+:]$/.test(end)) return before.slice(0, -1) + after;
      if (!/[\p{L}\p{M}\d]$/u.test(end)) return null;
      if (!CONTINUED_WORD.test(after)) return before + after;
      const joined = lettersAtEnd(end).toLowerCase() + lettersAtStart(after);
      return keepsHyphen(before, after) || (!isWord(joined) && !hyphenEvidence.words.has(joined)) ? before + after : before.slice(0, -1) + after;
    }
    if (/[&=#_~%+@]$/.test(end) || (end.endsWith('?') && word.includes('=')) || (end.endsWith(':') && word.startsWith('//')) || word.startsWith('/')) return before + after;
    if (end.endsWith('/') && !ENDS_A_URL.has(word.toLowerCase()) && (PATH_LIKE.test(word) || end.endsWith('//') || urlEvidence.has(urlKey(end + word)))) return before + after;
    return null;
  }
  // A URL ending in "/" kept apart from a plain word that turns out to go on as the URL's query ("https://example.com/"
  // "search?" "q=dune"): the three are one URL.
  if (end.endsWith('?') && word.includes('=') && space > 1 && /^[^\s?]+\?$/.test(end)) {
    let from = space - 1;
    while (from > 0 && !SPACE.test(tail[from - 1])) from--;
    const path = tail.slice(from, space - 1).replace(OPENING, '');
    if (path.endsWith('/') && URL_START.test(path)) {
      const at = before.length - tail.length + space;
      return before.slice(0, at - 1) + before.slice(at) + after;
    }
  }
  // An address broken after a dot or its "@" (with or without a hyphen): the joining is one, and goes on in lower case
  // after a dot ("info@example.org." "Colony" ends a sentence).
  if (/[.@]$/.test(end) && EMAIL.test(end + word) && (end.includes('@') || word.includes('@')) && (hyphen || end.endsWith('@') || /^[\p{Ll}\d]/u.test(word))) {
    return (hyphen ? before.slice(0, -1) : before) + after;
  }
  return null;
}

// Han, kana and their punctuation (CJK symbols, full-width forms); Korean is written with spaces and keeps them.
const CJK = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\u3000-\\u303f\\u30fc\\uff00-\\uffef';
const CJK_END = new RegExp(`[${CJK}]$`, 'u');
const CJK_START = new RegExp(`^[${CJK}]`, 'u');

function joinLine(text, next) {
  if (!text) return next;
  const before = text.trimEnd();
  const after = next.trimStart();
  const joined = urlJoin(before, after);
  if (joined !== null) return joined;
  if (HYPHENATED_END.test(before) && CONTINUED_WORD.test(after)) return keepsHyphen(before, after) ? before + after : before.slice(0, -1) + after;
  // Chinese and Japanese are written without spaces: a line ending in one of their characters goes on without one.
  if (CJK_END.test(before) && CJK_START.test(after)) return before + after;
  return `${text} ${next}`;
}

const wordsIn = (text) => text.split(/\s+/).filter(Boolean).length;

// The index of the word of `text` that holds, or else follows, character `at`.
function wordIndexAt(text, at) {
  const before = text.slice(0, at);
  const words = wordsIn(before);
  return words > 0 && /\S$/.test(before) && /^\S/.test(text.slice(at)) ? words - 1 : words;
}

// Where a link annotation's rectangle starts in the text: on the line whose baseline lies nearest its bottom edge (the
// rectangle reaches a little above and below the line), at the character its left edge falls on, estimated within a
// text item from the item's width. Null when no line lies within it.
function anchorOf(lines, rect) {
  const [x1, y1, x2, y2] = rect;
  const [left, right, bottom, top] = [Math.min(x1, x2), Math.max(x1, x2), Math.min(y1, y2), Math.max(y1, y2)];
  let line = null;
  for (const l of lines) {
    if (l.y < bottom - 3 || l.y > top + 3) continue;
    if (!line || Math.abs(l.y - bottom) < Math.abs(line.y - bottom)) line = l;
  }
  if (!line) return null;
  const item = line.items.find((i) => i.x + i.width > left && i.x < right);
  if (!item) return { line, at: 0 };
  const into = item.width > 0 && left > item.x ? Math.floor(((left - item.x) / item.width) * item.length) : 0;
  return { line, at: item.at + Math.min(into, item.length) };
}

// A paragraph set without space after it ends at a line that ends a sentence and stops short: before the right edge of
// its paragraph's lines and the next line by more than SHORT_LINE of their width, the next line not starting in lower
// case; or where the size of the text changes by more than SIZE_CHANGE.
const SHORT_LINE = 0.2;
const SIZE_CHANGE = 0.15;
const SENTENCE_ENDS_LINE = /[.!?:…。！？]["'”’)\]]*$/u;

function endsParagraph(line, next, blockRight) {
  // A change of size (a heading over its text, text over footnotes) ends one too.
  if (Math.abs(line.size - next.size) > Math.min(line.size, next.size) * SIZE_CHANGE) return true;
  const right = Math.max(next.right, blockRight);
  const width = right - Math.min(line.left, next.left);
  return width > 0 && line.right < right - width * SHORT_LINE && SENTENCE_ENDS_LINE.test(line.text.trimEnd()) && !CONTINUED_WORD.test(next.text.trimStart());
}

// Paragraphs of one short line each, set apart by paragraph spacing ("Motion carried, seven votes to two." "Yes."), have
// that spacing for the page's usual pitch, so the pitch alone parts none of them. A page whose lines mostly stop short
// of their column's right edge (fewer than RAGGED_SHARE of them, half, reach it: not prose set in full lines) has a
// paragraph end at a line ending a sentence, the next not going on in lower case, where the pitch is over LOOSE_PITCH
// times the text's size (more than a line's own height: space between paragraphs).
const LOOSE_PITCH = 1.45;
const RAGGED_SHARE = 0.5;

function raggedLines(lines) {
  if (lines.length < 3) return false;
  // The rightmost end of the lines starting at each left edge (in 4-point steps), then of those within a line's size
  // of its own left edge: its column's right edge (linear in the lines, whatever their number).
  const rightAt = new Map();
  for (const l of lines) {
    const at = Math.round(l.left / 4);
    rightAt.set(at, Math.max(rightAt.get(at) ?? -Infinity, l.right));
  }
  const full = lines.filter((line) => {
    let right = line.right;
    const at = Math.round(line.left / 4);
    const reach = Math.min(8, Math.ceil(line.size / 4));
    for (let k = at - reach; k <= at + reach; k++) right = Math.max(right, rightAt.get(k) ?? -Infinity);
    return line.right >= right - (right - line.left) * 0.15;
  });
  return full.length < lines.length * RAGGED_SHARE;
}

// A paragraph goes on at the top of the next column (a line above the one before it: the reading order put a column's
// lines after the previous column's) when the column's last line fills its width (that of most of the page's lines)
// without ending a sentence, and the next column's first line, in a like size, is not indented from the line below it.
// A table's cells drawn column by column are short lines, and stay apart.
function continuesInNextColumn(previous, line, below, typicalWidth) {
  if (!OPEN_END.test(previous.text.trimEnd()) || SENTENCE_ENDS_LINE.test(previous.text.trimEnd())) return false;
  if (Math.abs(line.size - previous.size) > Math.min(line.size, previous.size) * SIZE_CHANGE) return false;
  if (!(typicalWidth > 0) || previous.right - previous.left < typicalWidth * (1 - SHORT_LINE)) return false;
  return !below || below.y >= line.y || line.left <= below.left + line.size * 0.5;
}

// A vertical gap clearly larger than the page's usual line pitch starts a new paragraph, and so does a short line
// ending a sentence (endsParagraph). Each link is anchored at the word its annotation starts on (DocumentBlock.linkWords).
function paragraphsOf(pageLines) {
  const lines = withTableRows(pageLines);
  const pitches = lines
    .slice(1)
    .map((l, i) => lines[i].y - l.y)
    .filter((d) => d > 0)
    .sort((a, b) => a - b);
  const typical = pitches[Math.floor(pitches.length / 2)] ?? 0;
  const blocks = [];
  let block = null;
  let previous = null;
  let blockRight = -Infinity;
  const widths = lines.map((l) => l.right - l.left).filter((w) => w > 0).sort((a, b) => a - b);
  const typicalWidth = widths[Math.floor(widths.length / 2)] ?? 0;
  const ragged = raggedLines(lines);
  const short = (line) => typicalWidth > 0 && line.right - line.left < typicalWidth * (1 - SHORT_LINE);
  lines.forEach((line, i) => {
    const gap = previous ? previous.y - line.y : 0;
    const columnGoesOn = gap < 0 && continuesInNextColumn(previous, line, lines[i + 1], typicalWidth);
    if (
      !block ||
      (gap < 0 && !columnGoesOn) ||
      line.note ||
      line.list ||
      line.row ||
      previous.row ||
      // A line set at the left of the list item's text ends the item.
      (block.list && line.left < block.list.textX - line.size * 0.5) ||
      gap > Math.max(typical * 1.3, line.size * 1.45) ||
      endsParagraph(previous, line, blockRight) ||
      // A bold line alone (markBoldLines), short of the text's width, after a sentence's end: a paragraph of its own.
      (line.bold && !previous.bold && short(line) && SENTENCE_ENDS_LINE.test(previous.text.trimEnd())) ||
      (previous.bold && block.lines === 1 && short(previous)) ||
      (ragged && gap > line.size * LOOSE_PITCH && SENTENCE_ENDS_LINE.test(previous.text.trimEnd()) && !CONTINUED_WORD.test(line.text.trimStart()))
    ) {
      if (block) blocks.push(block);
      block = { kind: 'paragraph', text: '', links: [], linkWords: [], size: 0, lines: 0, bold: true, left: line.left, right: line.right, ...(line.list ? { list: line.list } : {}), ...(line.row ? { row: true, columns: line.columns } : {}) };
      blockRight = -Infinity;
    }
    block.size = Math.max(block.size, line.size);
    block.lines += 1;
    block.bold = block.bold && line.bold === true;
    blockRight = Math.max(blockRight, line.right);
    block.right = Math.max(block.right, line.right);
    block.text = joinLine(block.text, line.text);
    // A line joined to a hyphenated word starts inside the block's last word.
    const lineStart = Math.max(0, wordsIn(block.text) - wordsIn(line.text));
    block.links.push(...line.links.map((link) => link.url));
    block.linkWords.push(...line.links.map((link) => lineStart + wordIndexAt(line.text, link.at)));
    previous = line;
  });
  if (block) blocks.push(block);
  const places = listPlaces(blocks.map((b) => b.list));
  const bodySize = bodySizeOf(lines);
  return blocks
    .map(({ size, list, lines: count, row, bold, left, right, columns, ...b }, i) => {
      const text = b.text.replace(/\s+/g, ' ').trim();
      if (row) return placed(tableRow(sized({ ...b, text }, size)), { columns });
      const heading = !places[i] && count === 1 && (size > bodySize * (1 + SIZE_CHANGE) || bold) && wordsIn(text) <= HEADING_WORDS && !/[.!?…。！？]$/u.test(text);
      return placed(sized({ ...b, text, ...(places[i] ? { list: places[i] } : {}), ...(heading ? { keepWithNext: true } : {}) }, size), { left, right });
    })
    .filter((b) => b.text.length > 0);
}

// Bold lines in the text's size (a heading set in the body's size, bold, alone on its line: "Methods of the survey").
// pdf.js's text items name their font only by an id ("g_d0_f2") and a generic family, so a page's fonts' names are read
// from its operator list, and only for a page holding a candidate: a line of at most HEADING_WORDS words in the page's
// text size (within SIZE_CHANGE), without a sentence's end (nor a comma or semicolon), none of whose characters is in
// the page's main font (the font of most of its characters), so the bench book's pages cost nothing more. A line all
// of whose characters are in a font named bold (black, heavy, semibold ...; after the subset prefix "ABCDEF+") is bold.
const BOLD_FONT = /bold|black|heavy|semibold|demi/i;

async function markBoldLines(page, lines) {
  const visible = (item) => VISIBLE_CHARACTER.test(item.str);
  const characters = new Map();
  for (const line of lines) for (const item of line.items ?? []) if (visible(item)) characters.set(item.font, (characters.get(item.font) ?? 0) + item.length);
  let main;
  let most = -1;
  for (const [font, count] of characters) if (count > most) [main, most] = [font, count];
  const body = bodySizeOf(lines);
  const candidates = lines.filter(
    (l) =>
      !l.cells && !l.note && !l.list && l.items?.some(visible) && wordsIn(l.text) <= HEADING_WORDS && !/[.!?…。！？,;]$/u.test(l.text.trim()) &&
      Math.abs(l.size - body) <= body * SIZE_CHANGE && l.items.every((item) => !visible(item) || item.font !== main),
  );
  if (candidates.length === 0) return;
  try {
    await page.getOperatorList();
  } catch {
    return;
  }
  const names = new Map();
  const bold = (font) => {
    if (!names.has(font)) {
      let name = '';
      try {
        name = String(page.commonObjs.get(font)?.name ?? '');
      } catch {
        // A font pdf.js has not loaded: not known to be bold.
      }
      names.set(font, BOLD_FONT.test(name.replace(/^[A-Z]{6}\+/, '')));
    }
    return names.get(font);
  };
  for (const line of candidates) if (line.items.every((item) => !visible(item) || bold(item.font))) line.bold = true;
}

// A heading-like paragraph: one line of at most HEADING_WORDS words set larger than the page's text (by more than
// SIZE_CHANGE), or bold in the text's size (markBoldLines), without a sentence's end. It stays a paragraph (a PDF has no headings for the ingestion) but is marked
// so that no card ends with it while its text starts the next (DocumentBlock.keepWithNext).
const HEADING_WORDS = 12;

// The list places (DocumentBlock.list) of a page's list items (their markers, in order; null for other paragraphs): a run
// of items is one list, its levels by the markers' indents (the leftmost level 1), a bullet or dash unnumbered, a number
// read from its marker: digits, a letter (a = 1) or a small roman numeral ("i" is one after "h" only; "ii" is 2).
function listPlaces(markers) {
  const places = markers.map(() => null);
  let run = [];
  const close = () => {
    const indents = [];
    for (const i of run) if (!indents.some((x) => Math.abs(x - markers[i].x) < 3)) indents.push(markers[i].x);
    indents.sort((a, b) => a - b);
    const last = new Map();
    for (const i of run) {
      const { marker, x } = markers[i];
      const level = Math.min(6, indents.findIndex((at) => Math.abs(at - x) < 3) + 1);
      const numbered = LIST_NUMBER.exec(marker);
      if (!numbered) {
        places[i] = { ordered: false, level, number: 1 };
        last.set(level, { kind: 'bullet' });
        continue;
      }
      const label = numbered[1];
      const before = last.get(level);
      let kind;
      let number;
      if (/^\d+$/.test(label)) [kind, number] = ['digits', Number(label)];
      else if (/^[ivxlc]+$/.test(label) && (label.length > 1 || (label === 'i' && before?.kind !== 'letter') || before?.kind === 'roman')) [kind, number] = ['roman', romanValue(label)];
      else [kind, number] = ['letter', label.charCodeAt(0) - 96];
      places[i] = { ordered: true, level, number };
      // A deeper level's numbers start again under each item.
      for (const deeper of [...last.keys()]) if (deeper > level) last.delete(deeper);
      last.set(level, { kind });
    }
    run = [];
  };
  markers.forEach((marker, i) => {
    if (marker) run.push(i);
    else if (run.length) close();
  });
  if (run.length) close();
  return places;
}

function romanValue(label) {
  const values = { i: 1, v: 5, x: 10, l: 50, c: 100 };
  let total = 0;
  for (let k = 0; k < label.length; k++) {
    const value = values[label[k]];
    total += value < (values[label[k + 1]] ?? 0) ? -value : value;
  }
  return total;
}

// The largest font size in each paragraph of paragraphsOf, kept beside it (a block carries no size).
const SIZES = new WeakMap();
// The paragraphs that are a table's rows: no paragraph runs on over a page break from or into one.
const ROWS = new WeakSet();
// Where each paragraph lies: a row's columns (their left edges), another paragraph's left and right edges.
const PLACES = new WeakMap();

function placed(block, place) {
  PLACES.set(block, place);
  return block;
}

function tableRow(block) {
  ROWS.add(block);
  return block;
}

function sized(block, size) {
  SIZES.set(block, size);
  return block;
}

// Right-to-left ligatures: pdf.js reverses a right-to-left text item's characters from drawing (visual) order, glyph
// text included, so a glyph that stands for several characters (Arabic's lam-alef "لا", which every Arabic font draws as
// one glyph, mapped to U+0644 U+0627 or to U+FEFB) comes out reversed: "لاستقبال" read "الستقبال". Its characters are put
// back in order from the page's glyphs (pdf.js's operator list, read only for a page with right-to-left text): the
// right-to-left characters of an item are those of a run of glyphs in drawing order, reversed, and where a glyph among
// them gives several, they are written in the glyph's own order.
const RTL_CHARACTER = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]/u;

// pdf.js writes its fonts' data with ArrayBuffer.prototype.transferToFixedLength (Node 21): without it, Node 20 gives no
// operator list. The worker thread has its own globals, so this reaches nothing else.
if (typeof ArrayBuffer.prototype.transferToFixedLength !== 'function') {
  Object.defineProperty(ArrayBuffer.prototype, 'transferToFixedLength', {
    configurable: true,
    writable: true,
    value(length = this.byteLength) {
      const copy = new ArrayBuffer(length);
      new Uint8Array(copy).set(new Uint8Array(this, 0, Math.min(length, this.byteLength)));
      return copy;
    },
  });
}

/** How many times the page's right-to-left characters the searches for its items may pass over (withRtlLigaturesInOrder). */
const RTL_SEARCH_BUDGET = 16;

async function withRtlLigaturesInOrder(page, items) {
  if (!items.some((item) => item.dir === 'rtl' && RTL_CHARACTER.test(item.str ?? ''))) return items;
  const { getResolvedPDFJS } = await import('unpdf');
  const { OPS, normalizeUnicode } = await getResolvedPDFJS();
  let operators;
  try {
    operators = await page.getOperatorList();
  } catch {
    return items;
  }
  // The page's right-to-left characters in drawing order, and the glyphs among them that give several: [start, length].
  let drawn = '';
  const groups = [];
  operators.fnArray.forEach((fn, i) => {
    if (fn !== OPS.showText) return;
    for (const glyph of operators.argsArray[i]?.[0] ?? []) {
      if (typeof glyph?.unicode !== 'string' || glyph.unicode.length === 0) continue;
      const characters = Array.from(normalizeUnicode(glyph.unicode)).filter((c) => RTL_CHARACTER.test(c));
      if (characters.length > 1) groups.push([drawn.length, characters.length]);
      drawn += characters.join('');
    }
  });
  if (groups.length === 0) return items;
  let from = 0;
  // The characters of `drawn` the searches may pass over (RTL_SEARCH_BUDGET times it): an item is looked for from where
  // the one before was found, and from the start again when not found after it; items found nowhere (a page whose text
  // does not match its glyphs) each cost a pass over the page's glyphs, so past the budget the items are left as they
  // are. The groups inside an item's run are found by halving (they are in drawing order), not each tried.
  let budget = RTL_SEARCH_BUDGET * (drawn.length + 1024);
  return items.map((item) => {
    const str = item.str ?? '';
    if (item.dir !== 'rtl' || !RTL_CHARACTER.test(str) || budget < 0) return item;
    const chars = Array.from(str);
    const places = [];
    chars.forEach((c, i) => {
      if (RTL_CHARACTER.test(c)) places.push(i);
    });
    const run = places.map((i) => chars[i]).reverse().join('');
    let at = drawn.indexOf(run, from);
    budget -= (at < 0 ? drawn.length - from : at - from) + run.length;
    if (at < 0) {
      at = drawn.indexOf(run);
      budget -= (at < 0 ? drawn.length : at) + run.length;
    }
    if (at < 0) return item;
    from = at + run.length;
    let changed = false;
    let low = 0;
    let high = groups.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (groups[middle][0] < at) low = middle + 1;
      else high = middle;
    }
    for (let g = low; g < groups.length && groups[g][0] < at + run.length; g++) {
      const [start, length] = groups[g];
      if (start + length > at + run.length) continue;
      // The group's characters sit in the item at these places, last first.
      const inItem = Array.from({ length }, (_, k) => places[places.length - 1 - (start - at + k)]).sort((a, b) => a - b);
      inItem.forEach((place, k) => {
        chars[place] = drawn[start + k];
      });
      changed = true;
    }
    return changed ? { ...item, str: chars.join('') } : item;
  });
}

async function openPdf(bytes) {
  const { getDocumentProxy } = await import('unpdf');
  return getDocumentProxy(new Uint8Array(bytes), { isEvalSupported: false, stopAtErrors: true });
}

// As @cards/card-rules' hasVisibleText (this plain ESM worker cannot import it): whitespace, format and control characters
// are no text.
const VISIBLE_CHARACTER = /[^\s\p{Cf}\p{Cc}]/u;

// Stops at the first page with text, so a PDF with a text layer costs one page.
export async function pdfHasText(bytes, maxPages) {
  const pdf = await openPdf(bytes);
  try {
    const pages = Math.min(pdf.numPages, maxPages);
    for (let p = 1; p <= pages; p++) {
      const page = await pdf.getPage(p);
      const content = await page.getTextContent();
      page.cleanup();
      if (content.items.some((item) => VISIBLE_CHARACTER.test(item.str ?? ''))) return true;
    }
    return false;
  } finally {
    await pdf.destroy();
  }
}

// Running heads and feet: a line of at most RUNNING_LINE_WORDS words among a page's RUNNING_LINE_CANDIDATES topmost or
// bottommost, within the outer RUNNING_LINE_ZONE of the page's height, whose text (digits aside: page numbers) recurs at the same height (within
// RUNNING_LINE_SLACK points) on at least RUNNING_LINE_SHARE of the pages, and on two at least, is the page's furniture
// (a title, a chapter name, "Page 3 of 10"), not text: it is dropped, on every page it is on. Alternating heads of left
// and right pages are each on half the pages.
const RUNNING_LINE_CANDIDATES = 2;
const RUNNING_LINE_WORDS = 12;
const RUNNING_LINE_ZONE = 0.2;
const RUNNING_LINE_SLACK = 4;
const RUNNING_LINE_SHARE = 0.4;
const NOTE_REACH = 6;
/** A table's head row has its first row within this many times its size below it. */
const HEAD_ROW_REACH = 2.5;

const runningKey = (text) => text.replace(/\d+/g, '#').replace(/\s+/g, ' ').trim().toLowerCase();

function runningCandidates(page) {
  const height = page.top - page.bottom;
  const byHeight = [...page.lines].sort((a, b) => b.y - a.y);
  const top = byHeight.slice(0, RUNNING_LINE_CANDIDATES).filter((l) => l.y >= page.top - height * RUNNING_LINE_ZONE);
  const bottom = byHeight.slice(-RUNNING_LINE_CANDIDATES).filter((l) => l.y <= page.bottom + height * RUNNING_LINE_ZONE);
  // A note ("10 Ibid., p. 11") beside another of the page's notes (within NOTE_REACH of its size) recurs as its like
  // notes do, and is text; a line of the same shape alone ("12 Annual Report": a page number before a running title)
  // is a running line's.
  const amongNotes = (l) => l.note && page.lines.some((o) => o !== l && o.note && Math.abs(o.y - l.y) <= l.size * NOTE_REACH);
  return { byHeight, lines: [...new Set([...top, ...bottom])].filter((l) => wordsIn(l.text) <= RUNNING_LINE_WORDS && !amongNotes(l)) };
}

// A one-page PDF has no recurrence to go by. What one page tells: among the same candidates, a page number alone ("3",
// "Page 3", "- 3 -", "Page 3 of 4") is the page's furniture; and so is the page's topmost or bottommost line when it is
// set smaller than the page's text (by more than ONE_PAGE_SMALLER), is no note, and stands apart from the text (the
// nearest line more than ONE_PAGE_APART times the text's size away), as a header or footer set in a smaller style is.
// A header or footer in the text's own size ("Dune Trust survey notes" above the text) cannot be told from a title or a
// closing line on one page and stays, as does a small caption alone at the page's foot (it reads as a footer).
const PAGE_NUMBER = /^(?:(?:page|p\.|pg\.|seite|s\.|página|pagina|pag\.)\s*)?[-–—]?\s*\d{1,4}\s*[-–—]?(?:\s*(?:of|\/|von|de|di|sur)\s*\d{1,4})?$/i;
const ONE_PAGE_SMALLER = 0.85;
const ONE_PAGE_APART = 1.5;

function withoutOnePageRunningLines(page) {
  if (!page || page.lines.length < 2) return;
  const { byHeight, lines } = runningCandidates(page);
  const body = bodySizeOf(page.lines);
  const topmost = byHeight[0];
  const bottommost = byHeight[byHeight.length - 1];
  const apart = (line, neighbour) => neighbour !== undefined && Math.abs(line.y - neighbour.y) > body * ONE_PAGE_APART;
  const furniture = (line) =>
    PAGE_NUMBER.test(line.text.trim()) ||
    (!line.note && !line.list && line.size < body * ONE_PAGE_SMALLER && ((line === topmost && apart(line, byHeight[1])) || (line === bottommost && apart(line, byHeight[byHeight.length - 2]))));
  const dropped = new Set(lines.filter(furniture));
  if (dropped.size > 0 && dropped.size < page.lines.length) page.lines = page.lines.filter((l) => !dropped.has(l));
}

function withoutRunningLines(pages) {
  if (pages.length < 2) return withoutOnePageRunningLines(pages[0]);
  const candidates = pages.map((page) => runningCandidates(page).lines);
  // For each text: the heights it is at, each with the pages it is there on.
  const seen = new Map();
  candidates.forEach((lines, p) => {
    for (const line of lines) {
      const key = runningKey(line.text);
      const places = seen.get(key) ?? [];
      let place = places.find((at) => Math.abs(at.y - line.y) <= RUNNING_LINE_SLACK);
      if (!place) places.push((place = { y: line.y, pages: new Set() }));
      place.pages.add(p);
      seen.set(key, places);
    }
  });
  const needed = Math.max(2, Math.ceil(pages.length * RUNNING_LINE_SHARE));
  const placeOf = (line) => seen.get(runningKey(line.text)).find((at) => at.pages.size >= needed && Math.abs(at.y - line.y) <= RUNNING_LINE_SLACK);
  // The first page the line's text is a running candidate on, at any height.
  const firstPageOf = (line) => Math.min(...seen.get(runningKey(line.text)).flatMap((at) => [...at.pages]));
  pages.forEach((page, p) => {
    // A table's head row repeated at the top of each page recurs as a running head does; where the table starts (the
    // first page it recurs on, a row of cells lined up with it just below) it is the table's and stays, so it is read once.
    const headRow = (line) => line.cells && firstPageOf(line) === p && page.lines.some((o) => o.cells && o.y < line.y && line.y - o.y <= line.size * HEAD_ROW_REACH && o.cells.filter((c) => line.cells.some((h) => Math.abs(h.x - c.x) <= COLUMN_SLACK)).length >= 2);
    const dropped = new Set(candidates[p].filter((line) => placeOf(line) !== undefined && !headRow(line)));
    if (dropped.size > 0) page.lines = page.lines.filter((l) => !dropped.has(l));
  });
}

// A paragraph that runs on over a page break: the page's last paragraph ends without a sentence's end, and the next
// page's first starts in lower case (or finishes the word hyphenated at the break).
const OPEN_END = /[^.!?:;"'”’)\]…。！？]$/u;

function continuesOnNextPage(last, first) {
  if (ROWS.has(last) || ROWS.has(first)) return false;
  return OPEN_END.test(last.text) && (CONTINUED_WORD.test(first.text) || (CJK_END.test(last.text) && CJK_START.test(first.text)) || urlJoin(last.text, first.text) !== null);
}

function joinedParagraphs(last, first) {
  const text = joinLine(last.text, first.text);
  const firstStart = wordsIn(text) - wordsIn(first.text);
  return sized({ ...last, text, links: [...last.links, ...first.links], linkWords: [...last.linkWords, ...first.linkWords.map((i) => firstStart + i)] }, SIZES.get(last));
}

// A table's head row repeated at the top of the next page (Writer's and Word's "repeat heading rows"): the page's first
// paragraph is a row of the same text as the first row of the table the page before ended in (its rows back to the
// paragraph before them); it is read once, where the table starts. (A head row repeated at one height on enough pages is
// a running line, withoutRunningLines, except where the table starts.)
function headRowOf(blocks, last) {
  let first = last;
  while (first > 0 && ROWS.has(blocks[first - 1])) first--;
  return blocks[first];
}

// A row split by the page break (Writer and Word let a row break across pages) under a repeated head row: the rest of
// its cells' text, at the top of the next page under the head, was read as further lines of the head row's cells
// ("Station pairs were seen at dawn ... | Count | Hours"). A page's first row each of whose cells is the head row's
// cell, or it and more text, is the head with the split row's rest: the rest goes on in the cells of the row before
// the break ("Old pier, where two pairs were seen at dawn ... | 2 | 0.25") and the head is read once. A row's cells are
// its text between TABLE_CELL_SEPARATOR (an empty cell's " | " collapsed to "| |").
const cellTexts = (text) => text.split(/ ?\| ?/);

function continuationUnderHead(headText, rowText) {
  const head = cellTexts(headText);
  const row = cellTexts(rowText);
  if (head.length !== row.length) return null;
  const rest = row.map((cell, i) => (cell === head[i] ? '' : head[i] === '' ? cell : cell.startsWith(`${head[i]} `) ? cell.slice(head[i].length + 1) : null));
  return rest.some((r) => r === null) || rest.every((r) => r === '') ? null : rest;
}

function rowWithContinuation(row, rest) {
  const cells = cellTexts(row.text);
  if (cells.length !== rest.length) return row;
  const text = cells.map((cell, i) => (rest[i] ? joinLine(cell, rest[i]) : cell)).join(TABLE_CELL_SEPARATOR).replace(/\s+/g, ' ').trim();
  return placed(tableRow(sized({ ...row, text }, SIZES.get(row))), PLACES.get(row) ?? {});
}

// The same without a repeated head row: the page's first paragraph is the rest of one cell of the row before the break
// when it lies in that cell's column (its left edge the column's, its right short of the next column's), starts in
// lower case, and the cell's text there does not end a sentence (it was a paragraph after the row).
function cellContinuation(row, paragraph) {
  const columns = PLACES.get(row)?.columns;
  const place = PLACES.get(paragraph);
  if (!columns || !place || paragraph.list || !CONTINUED_WORD.test(paragraph.text)) return null;
  const k = columns.findIndex((x) => Math.abs(x - place.left) <= COLUMN_SLACK);
  if (k < 0 || (k + 1 < columns.length && place.right > columns[k + 1] + COLUMN_SLACK)) return null;
  const cells = cellTexts(row.text);
  if (cells.length !== columns.length || cells[k] === '' || !OPEN_END.test(cells[k])) return null;
  return cells.map((_, i) => (i === k ? paragraph.text : ''));
}

// A page's footnotes are set smaller than its body text (the median size of its lines): paragraphs at its end in a size
// below NOTE_SIZE times the body's are notes, and the paragraph running on over the break is the one before them.
const NOTE_SIZE = 0.95;

function bodySizeOf(lines) {
  const sizes = lines.map((l) => l.size).sort((a, b) => a - b);
  return sizes[Math.floor(sizes.length / 2)] ?? 0;
}

export async function pdfBlocks(bytes, maxPages) {
  const pdf = await openPdf(bytes);
  const pages = [];
  try {
    const count = Math.min(pdf.numPages, maxPages);
    for (let p = 1; p <= count; p++) {
      const page = await pdf.getPage(p);
      const content = await page.getTextContent();
      const lines = linesOf(inReadingOrder(await withRtlLigaturesInOrder(page, content.items)));
      withRightAlignedCells(lines);
      for (const a of await page.getAnnotations()) {
        if (a.subtype !== 'Link' || !a.url || !Array.isArray(a.rect) || a.rect.length < 4) continue;
        const anchor = anchorOf(lines, a.rect);
        if (anchor) anchor.line.links.push({ url: a.url, at: anchor.at });
      }
      await markBoldLines(page, lines);
      for (const line of lines) delete line.items;
      const [, bottom, , top] = page.view;
      pages.push({ lines, bottom: Math.min(bottom, top), top: Math.max(bottom, top) });
      page.cleanup();
    }
  } finally {
    await pdf.destroy();
  }
  withoutRunningLines(pages);
  const texts = pages.flatMap((page) => page.lines.map((line) => line.text));
  hyphenEvidence = hyphenEvidenceOf(texts);
  urlEvidence = urlEvidenceOf(texts, pages.flatMap((page) => page.lines.flatMap((line) => line.links.map((link) => link.url))));
  await loadWordsFor(texts);
  const blocks = [];
  let pageStart = 0;
  let bodySize = 0;
  for (const page of pages) {
    const paragraphs = paragraphsOf(page.lines);
    let last = blocks.length - 1;
    while (last >= pageStart && SIZES.get(blocks[last]) < bodySize * NOTE_SIZE) last--;
    if (last >= 0 && paragraphs.length > 0 && ROWS.has(paragraphs[0]) && ROWS.has(blocks[last])) {
      const head = headRowOf(blocks, last);
      const rest = head.text === paragraphs[0].text ? null : continuationUnderHead(head.text, paragraphs[0].text);
      if (rest) blocks[last] = rowWithContinuation(blocks[last], rest);
      if (rest || head.text === paragraphs[0].text) paragraphs.shift();
    }
    if (last >= 0 && paragraphs.length > 0 && !ROWS.has(paragraphs[0]) && ROWS.has(blocks[last])) {
      const rest = cellContinuation(blocks[last], paragraphs[0]);
      if (rest) {
        blocks[last] = rowWithContinuation(blocks[last], rest);
        paragraphs.shift();
      }
    }
    const runsOn = last >= pageStart && paragraphs.length > 0 && continuesOnNextPage(blocks[last], paragraphs[0]);
    if (runsOn) blocks[last] = joinedParagraphs(blocks[last], paragraphs.shift());
    // The page's text starts in the paragraph it continued, which may hold all of it and run on over the next break too.
    pageStart = runsOn ? last : blocks.length;
    bodySize = bodySizeOf(page.lines);
    blocks.push(...paragraphs);
  }
  return blocks;
}
