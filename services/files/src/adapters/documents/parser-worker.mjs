// Runs the document libraries in a worker thread (plain ESM so it needs no TypeScript loader): parsing
// is CPU-heavy and must not stall the service's event loop, and the thread's time and memory caps
// contain hostile documents.
// Input (workerData): { op: 'docx-html' | 'doc-text' | 'pdf-blocks' | 'pdf-has-text', bytes: Uint8Array, maxPages: number }.
// Output: { result } (HTML string, body text, paragraph blocks, or whether the PDF has text) or { error }.
import { parentPort, workerData } from 'node:worker_threads';

function linesOf(items) {
  const lines = [];
  let current = null;
  for (const item of items) {
    const y = item.transform?.[5] ?? 0;
    const size = Math.abs(item.transform?.[3] ?? item.height ?? 0) || 10;
    const str = item.str ?? '';
    if (current && Math.abs(current.y - y) > size * 0.5 && str.trim()) {
      lines.push(current);
      current = null;
    }
    if (str.length > 0) {
      if (!current) current = { text: '', y, size, items: [], links: [] };
      current.items.push({ at: current.text.length, x: item.transform?.[4] ?? 0, width: item.width ?? 0, length: str.length });
      current.text += str;
      current.size = Math.max(current.size, size);
    }
    if (item.hasEOL && current) {
      lines.push(current);
      current = null;
    }
  }
  if (current) lines.push(current);
  return lines.filter((l) => l.text.trim().length > 0);
}

// Two-column pages: pdf.js gives a page's text items in drawing order, which for two columns set side by side is often
// row by row across both ("left 1, right 1, left 2, ..."). A page has two columns when a vertical gap near its middle is
// crossed by (almost) no text while at least MIN_COLUMN_ROWS rows have text on each side of it, and the text on each side
// fills its column (so a table of short cells, a single column of short lines or a centered heading is not taken for
// one). Its items are then read left column first, then the right; a line crossing the gap (a title over both columns)
// stays where it is, between what is above it and what is below it.
const MIN_COLUMN_ROWS = 5;

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
  // The x in the middle band crossed by the fewest rows.
  let split = null;
  let fewest = Infinity;
  for (let x = left + width * 0.3; x <= left + width * 0.7; x += 1) {
    const crossing = new Set();
    for (const b of visible) if (b.x < x && b.right > x) crossing.add(rowOf(b));
    if (crossing.size < fewest) {
      fewest = crossing.size;
      split = x;
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
  const gapFrom = Math.max(...leftRows.map((r) => r.to));
  const gapTo = Math.min(...rightRows.map((r) => r.from));
  const leftWidth = gapFrom - left;
  const rightWidth = right - gapTo;
  if (gapTo - gapFrom <= 0 || leftWidth < width * 0.25 || rightWidth < width * 0.25) return items;
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  if (median(leftRows.map((r) => r.to - r.from)) < leftWidth * 0.6 || median(rightRows.map((r) => r.to - r.from)) < rightWidth * 0.6) return items;
  // Lines crossing the gap cut the page into bands, read top to bottom, each left column first.
  const spanning = boxes.filter((b) => b.visible && b.x < split && b.right > split);
  const bandTops = [...new Set(spanning.map(rowOf))].sort((a, b) => b - a);
  const bandOf = (b) => bandTops.filter((top) => top > rowOf(b)).length;
  const ordered = [];
  for (let band = 0; band <= bandTops.length; band++) {
    const inBand = boxes.filter((b) => !spanning.includes(b) && bandOf(b) === band);
    ordered.push(...inBand.filter((b) => b.x < split), ...inBand.filter((b) => b.x >= split));
    if (band < bandTops.length) ordered.push(...spanning.filter((b) => rowOf(b) === bandTops[band]));
  }
  return ordered.map((b) => b.item);
}

function joinLine(text, next) {
  if (!text) return next;
  if (/[A-Za-z]-$/.test(text) && /^[a-z]/.test(next)) return text.slice(0, -1) + next;
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

// A vertical gap clearly larger than the page's usual line pitch starts a new paragraph. Each link is anchored at the
// word its annotation starts on (DocumentBlock.linkWords).
function paragraphsOf(lines) {
  const pitches = lines
    .slice(1)
    .map((l, i) => lines[i].y - l.y)
    .filter((d) => d > 0)
    .sort((a, b) => a - b);
  const typical = pitches[Math.floor(pitches.length / 2)] ?? 0;
  const blocks = [];
  let block = null;
  let previous = null;
  for (const line of lines) {
    const gap = previous ? previous.y - line.y : 0;
    if (!block || gap < 0 || gap > Math.max(typical * 1.3, line.size * 1.45)) {
      if (block) blocks.push(block);
      block = { kind: 'paragraph', text: '', links: [], linkWords: [] };
    }
    block.text = joinLine(block.text, line.text);
    // A line joined to a hyphenated word starts inside the block's last word.
    const lineStart = Math.max(0, wordsIn(block.text) - wordsIn(line.text));
    block.links.push(...line.links.map((link) => link.url));
    block.linkWords.push(...line.links.map((link) => lineStart + wordIndexAt(line.text, link.at)));
    previous = line;
  }
  if (block) blocks.push(block);
  return blocks.map((b) => ({ ...b, text: b.text.replace(/\s+/g, ' ').trim() })).filter((b) => b.text.length > 0);
}

async function openPdf() {
  const { getDocumentProxy } = await import('unpdf');
  return getDocumentProxy(new Uint8Array(workerData.bytes), { isEvalSupported: false, stopAtErrors: true });
}

// As @cards/card-rules' hasVisibleText (this plain ESM worker cannot import it): whitespace, format and control characters
// are no text.
const VISIBLE_CHARACTER = /[^\s\p{Cf}\p{Cc}]/u;

// Stops at the first page with text, so a PDF with a text layer costs one page.
async function pdfHasText() {
  const pdf = await openPdf();
  try {
    const pages = Math.min(pdf.numPages, workerData.maxPages);
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

async function pdfBlocks() {
  const pdf = await openPdf();
  const blocks = [];
  try {
    const pages = Math.min(pdf.numPages, workerData.maxPages);
    for (let p = 1; p <= pages; p++) {
      const page = await pdf.getPage(p);
      const content = await page.getTextContent();
      const lines = linesOf(inReadingOrder(content.items));
      for (const a of await page.getAnnotations()) {
        if (a.subtype !== 'Link' || !a.url || !Array.isArray(a.rect) || a.rect.length < 4) continue;
        const anchor = anchorOf(lines, a.rect);
        if (anchor) anchor.line.links.push({ url: a.url, at: anchor.at });
      }
      blocks.push(...paragraphsOf(lines));
      page.cleanup();
    }
  } finally {
    await pdf.destroy();
  }
  return blocks;
}

// A Word list item of several paragraphs: the item's first paragraph carries the numbering, the others (Enter, then
// Backspace over the number) none, only the item's indentation or a list paragraph style. mammoth makes each of those a
// paragraph after the list and starts a new list (numbered from 1 again) for the next item; marked here as a further
// paragraph of the item before them, the style map below puts them in a p inside that item's li, and the list goes on.
const FURTHER_PARAGRAPH = 'cards further paragraph of item';
const LIST_PARAGRAPH_STYLE = /^list (paragraph|continue)/i;

function furtherParagraphsMarked(element) {
  if (!Array.isArray(element.children) || element.type === 'paragraph') return element;
  let item = null;
  const children = element.children.map((child) => {
    if (child.type !== 'paragraph') {
      item = null;
      return furtherParagraphsMarked(child);
    }
    if (child.numbering) {
      item = child.numbering;
      return child;
    }
    const indented = Number(child.indent?.start ?? 0) > 0;
    if (item && (indented || LIST_PARAGRAPH_STYLE.test(child.styleName ?? ''))) {
      return { ...child, styleId: null, styleName: `${FURTHER_PARAGRAPH} ${item.isOrdered ? 'ol' : 'ul'} ${Number(item.level) + 1}` };
    }
    item = null;
    return child;
  });
  return { ...element, children };
}

// As mammoth's own list mapping ("p:ordered-list(2) => ul|ol > li > ol > li:fresh", levels 1-5), one level deeper into the open li.
const FURTHER_PARAGRAPH_STYLES = [1, 2, 3, 4, 5].flatMap((level) =>
  ['ol', 'ul'].map((kind) => `p[style-name='${FURTHER_PARAGRAPH} ${kind} ${level}'] => ${'ul|ol > li > '.repeat(level - 1)}${kind} > li > p:fresh`),
);

async function run() {
  const bytes = Buffer.from(workerData.bytes.buffer, workerData.bytes.byteOffset, workerData.bytes.byteLength);
  switch (workerData.op) {
    case 'docx-html': {
      const { default: mammoth } = await import('mammoth');
      return (await mammoth.convertToHtml({ buffer: bytes }, { transformDocument: furtherParagraphsMarked, styleMap: FURTHER_PARAGRAPH_STYLES })).value;
    }
    case 'doc-text': {
      const { default: WordExtractor } = await import('word-extractor');
      return (await new WordExtractor().extract(bytes)).getBody();
    }
    case 'pdf-blocks':
      return pdfBlocks();
    case 'pdf-has-text':
      return pdfHasText();
    default:
      throw new Error(`unknown operation ${workerData.op}`);
  }
}

run().then(
  (result) => parentPort.postMessage({ result }),
  (err) => parentPort.postMessage({ error: err instanceof Error ? err.message : String(err) }),
);
