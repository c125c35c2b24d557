// CommonJS, beside word-documents.mjs (the parser worker's .doc reading, which requires it), so the worker needs no
// TypeScript loader and the tests can require it too: a .doc's list numbering (MS-DOC 2.9.147 PlfLst with its LSTFs
// and LVLs, 2.9.198 PlfLfo), read within the table stream's bounds, and the numbers Word shows for the body's
// numbered paragraphs.
'use strict';

/** Word's list number formats (MS-DOC MSONFC) by the .docx names formattedWordNumber reads: 22 is "01", 23 a bullet, 255 none. */
const NFC_LIST_FORMATS = new Map([[0, 'decimal'], [1, 'upperRoman'], [2, 'lowerRoman'], [3, 'upperLetter'], [4, 'lowerLetter'], [22, 'decimalZero'], [23, 'bullet'], [255, 'none']]);
/** The longest level text read (Word's are a few characters: "%1.%2."); a longer one shows no number. */
const MAX_LEVEL_TEXT = 64;

/**
 * The level (LVL, MS-DOC 2.9.150) at `at` of the table stream: { start, format, legal, text, placeholders, next } (text
 * null when it is longer than MAX_LEVEL_TEXT; placeholders: the text's positions holding a level's number, rgbxchNums).
 */
function levelAt(table, at) {
  if (at + 28 + 2 > table.length) throw new Error('a list level lies outside its stream');
  const start = table.readInt32LE(at);
  const nfc = table[at + 4];
  const legal = (table[at + 5] & 0x04) !== 0;
  const placeholders = [];
  for (let k = 0; k < 9; k++) if (table[at + 6 + k] !== 0) placeholders.push(table[at + 6 + k] - 1);
  const cbChpx = table[at + 24];
  const cbPapx = table[at + 25];
  let offset = at + 28 + cbPapx + cbChpx;
  if (offset + 2 > table.length) throw new Error('a list level lies outside its stream');
  const cch = table.readUInt16LE(offset);
  offset += 2;
  if (offset + 2 * cch > table.length) throw new Error('a list level lies outside its stream');
  const text = cch <= MAX_LEVEL_TEXT ? Array.from({ length: cch }, (_, k) => table.readUInt16LE(offset + 2 * k)) : null;
  return { start, format: NFC_LIST_FORMATS.get(nfc) ?? 'decimal', legal, text, placeholders, next: offset + 2 * cch };
}

/**
 * The document's lists (MS-DOC 2.9.147 PlfLst, its LSTFs followed by their LVLs; 2.9.198 PlfLfo, its LFOs and their
 * LFOData), found through the FIB (fcPlfLst 0x02E2, fcPlfLfo 0x02EA): for each list format override (ilfo 1 first) the
 * index of its list and the levels whose start it overrides. Every read is within the table stream, each structure once.
 */
function wordLists({ fib, table }) {
  const fcLst = fib.readUInt32LE(0x02e2);
  const lcbLst = fib.readUInt32LE(0x02e6);
  const fcLfo = fib.readUInt32LE(0x02ea);
  const lcbLfo = fib.readUInt32LE(0x02ee);
  if (lcbLst < 2 || lcbLfo < 4 || fcLst + lcbLst > table.length || fcLfo + lcbLfo > table.length) return null;
  const count = table.readInt16LE(fcLst);
  if (count <= 0 || fcLst + 2 + 28 * count > table.length) return null;
  const lists = [];
  const byLsid = new Map();
  let at = fcLst + 2 + 28 * count;
  for (let i = 0; i < count; i++) {
    const lstf = fcLst + 2 + 28 * i;
    const simple = (table[lstf + 26] & 0x01) !== 0;
    const levels = [];
    for (let k = 0; k < (simple ? 1 : 9); k++) {
      const level = levelAt(table, at);
      levels.push(level);
      at = level.next;
    }
    lists.push(levels);
    const lsid = table.readInt32LE(lstf);
    if (!byLsid.has(lsid)) byLsid.set(lsid, i);
  }
  const lfoCount = table.readInt32LE(fcLfo);
  if (lfoCount <= 0 || fcLfo + 4 + 16 * lfoCount > fcLfo + lcbLfo) return null;
  const overrides = [];
  let data = fcLfo + 4 + 16 * lfoCount;
  let dataReadable = true;
  for (let i = 0; i < lfoCount; i++) {
    const lfo = fcLfo + 4 + 16 * i;
    const list = byLsid.get(table.readInt32LE(lfo));
    const starts = new Map();
    const clfolvl = table[lfo + 12];
    // The LFOData (its cp, then one LFOLVL per overridden level, each with an LVL when it overrides the formatting):
    // read while it lies in its stream; past that, no starts are overridden.
    if (dataReadable) {
      try {
        data += 4;
        for (let k = 0; k < clfolvl; k++) {
          if (data + 8 > table.length) throw new Error('a list override lies outside its stream');
          const start = table.readInt32LE(data);
          const flags = table.readUInt32LE(data + 4);
          data += 8;
          if (flags & 0x10) starts.set(flags & 0x0f, start);
          if (flags & 0x20) data = levelAt(table, data).next;
        }
      } catch {
        dataReadable = false;
        starts.clear();
      }
    }
    overrides.push(list === undefined ? null : { list, starts });
  }
  return { lists, overrides };
}

/** A list item's mark at its paragraph's start, read by blocksFromDoc: DOC_LIST_ITEM o|u level . number DOC_LIST_ITEM_END. */
const DOC_LIST_ITEM = '\ue020';
const DOC_LIST_ITEM_END = '\ue021';
/** The largest number a list item's mark carries (as the .docx reading's LIST_NUMBER). */
const MAX_LIST_NUMBER = 999_999_999;

/**
 * What to put at the start of each of the body's numbered paragraphs, counted as Word counts them in the order of the
 * text (`marks`: each paragraph mark's character position, in order, with its paragraph's { ilfo, ilvl, heading,
 * inTable }): per list and level from the level's start (iStartAt), a paragraph of a level restarting the levels below
 * it, the first paragraph of a list format override that sets a level's start restarting that level there (Word's
 * "Restart numbering"), as the .docx reading counts (word-documents.mjs wordNumber). A heading (in a table's cell too,
 * as the .docx reading shows one) shows its number as text before its own ("1.1 Sites": its level's text with each
 * level's count in that level's format, fLegal in digits, by `format`, then a space); a numbered or bulleted paragraph
 * outside a table is marked as a list item (DOC_LIST_ITEM: numbered or not, its level, its number) and shows no marker.
 * An empty paragraph is counted and gets nothing. At most 2 characters per character of the body plus 64 KiB are put,
 * past which paragraphs show no number. Answers [{ cp, text }] in order.
 */
function listInsertions({ lists, overrides }, marks, bodyLength, format) {
  const counts = lists.map(() => []);
  const restarted = new Set();
  const insertions = [];
  let budget = 2 * bodyLength + 65536;
  for (let i = 0; i < marks.length; i++) {
    const { cp, paragraph } = marks[i];
    if (!(paragraph.ilfo > 0) || paragraph.ilfo > overrides.length) continue;
    const override = overrides[paragraph.ilfo - 1];
    if (!override) continue;
    const levels = lists[override.list];
    const ilvl = Math.min(paragraph.ilvl ?? 0, levels.length - 1);
    const level = levels[ilvl];
    const count = counts[override.list];
    for (let k = ilvl + 1; k < count.length; k++) count[k] = undefined;
    const key = `${paragraph.ilfo}:${ilvl}`;
    if (override.starts.has(ilvl) && !restarted.has(key)) {
      restarted.add(key);
      count[ilvl] = override.starts.get(ilvl) - 1;
    }
    const number = (count[ilvl] ?? level.start - 1) + 1;
    count[ilvl] = number;
    const start = i > 0 ? marks[i - 1].cp + 1 : 0;
    if (start >= cp) continue;
    let text = null;
    if (paragraph.heading) {
      if (level.format === 'bullet' || level.format === 'none' || !level.text) continue;
      const placeholders = new Set(level.placeholders);
      let shown = '';
      for (let k = 0; k < level.text.length; k++) {
        const unit = level.text[k];
        if (placeholders.has(k) && unit < levels.length) shown += format(count[unit] ?? 0, level.legal ? 'decimal' : levels[unit].format) ?? '';
        else shown += String.fromCharCode(unit);
      }
      shown = shown.replace(/[\x00-\x1f\ue000-\uf8ff]/g, '').replace(/\s+/g, ' ').trim();
      if (shown) text = `${shown} `;
    } else if (!paragraph.inTable) {
      const ordered = level.format !== 'bullet';
      const shown = Number.isInteger(number) && number >= 1 && number <= MAX_LIST_NUMBER ? number : 1;
      text = `${DOC_LIST_ITEM}${ordered ? 'o' : 'u'}${ilvl + 1}.${shown}${DOC_LIST_ITEM_END}`;
    }
    if (text === null) continue;
    budget -= text.length;
    if (budget < 0) break;
    insertions.push({ cp: start, text });
  }
  return insertions;
}

module.exports = { wordLists, listInsertions, levelAt };
