// The Word reading of the parser worker (parser-worker.mjs): .docx to HTML through mammoth, with mammoth adapted so it
// reads what Word means (list items numbered as Word numbers them, marked for block-collector.ts; further paragraphs of a
// list item kept in the item; generated tables left out; the Title style as the first heading; DrawingML-only text boxes
// read through text-box-fallbacks.cjs; right-to-left paragraphs marked), and .doc to text through word-extractor (with
// its footnotes and endnotes put at their references, as the .docx reading puts them, and right-to-left paragraphs marked).
// Plain ESM, as the worker, so it needs no TypeScript loader.
// docxHtml(bytes): the document's HTML; docText(bytes): its text.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { withFieldResults } = require('./doc-fields.cjs');
const { wordLists, listInsertions } = require('./doc-lists.cjs');
const { inScriptForms } = require('./script-forms.cjs');

// A Word list item of several paragraphs: the item's first paragraph carries the numbering, the others (Enter, then
// Backspace over the number) none, only the item's indentation or a list paragraph style. mammoth makes each of those a
// paragraph after the list and starts a new list (numbered from 1 again) for the next item; marked here as a further
// paragraph of the item before them, the style map below puts them in a p inside that item's li, and the list goes on.
//
// Generated tables (a table of contents, "Introduction 3" per heading, a table of figures, an index) only repeat the
// document's headings and words with page numbers: their paragraphs, by Word's built-in style names (LibreOffice's
// "Contents n" too), are left out, as the .odt reader leaves out its generated indexes.
const FURTHER_PARAGRAPH = 'cards further paragraph of item';
const LIST_PARAGRAPH_STYLE = /^list (paragraph|continue)/i;
const GENERATED_TABLE_STYLE = /^(toc \d+|toc heading|contents \d+|contents heading|table of figures|index \d+|index heading)$/i;

// Word numbers a list's items on across paragraphs between them: items of one numbering definition (w:abstractNum) at
// one level count on from its start value, wherever they are, until an item of a higher level restarts the level or a
// numbering instance (w:num) overriding the level's start is first used. mammoth starts every list it writes at 1 and
// reads no numbering instance; the numbering reader is wrapped here so each item's level says its instance, and each
// numbered item's text starts with LIST_NUMBER's mark of Word's number for it, which blocksFromHtml takes as the item's
// number (and removes).
const LIST_NUMBER = { open: '\ue000cards-item-number:', close: '\ue001' };
/**
 * The two characters the worker's marks are made of (LIST_NUMBER, NOTE_LABEL, CUSTOM_NOTE_MARK: U+E000, a name, a value,
 * U+E001): taken out of the document's own text before any mark is added (withoutMarkCharacters), so every mark the
 * readers find is one the worker made. A document's text may hold them (they are private-use characters): copies of a
 * mark's start with no end made the mark patterns scan to the end of the text from each copy, seconds to minutes of a
 * thread for a few KB of .docx.
 */
const MARK_CHARACTERS = /[\ue000\ue001]/g;

/** The largest number LIST_NUMBER marks (block-collector.ts reads at most nine digits). */
const MAX_LIST_NUMBER = 999_999_999;

function numberedByInstance() {
  const numberingXml = require('mammoth/lib/docx/numbering-xml.js');
  if (numberingXml.readNumberingXml.numberedByInstance) return;
  const read = numberingXml.readNumberingXml;
  numberingXml.readNumberingXml = (root, options) => {
    const numbering = read(root, options);
    const starts = new Map();
    for (const abstract of root.getElementsByTagName('w:abstractNum')) {
      for (const level of abstract.getElementsByTagName('w:lvl')) {
        starts.set(`${abstract.attributes['w:abstractNumId']}:${level.attributes['w:ilvl']}`, Number(level.firstOrEmpty('w:start').attributes['w:val'] ?? 1));
      }
    }
    // Each level's format and text ("%1.%2"), for the number a heading shows (headingNumberText), and the level a
    // paragraph style is linked to (w:pStyle in the level: Word's numbered headings).
    const formats = new Map();
    const styleLevels = new Map();
    for (const abstract of root.getElementsByTagName('w:abstractNum')) {
      const abstractId = abstract.attributes['w:abstractNumId'];
      for (const level of abstract.getElementsByTagName('w:lvl')) {
        const ilvl = level.attributes['w:ilvl'] ?? '0';
        formats.set(`${abstractId}:${ilvl}`, { format: level.firstOrEmpty('w:numFmt').attributes['w:val'] ?? 'decimal', text: level.firstOrEmpty('w:lvlText').attributes['w:val'] ?? '' });
        const style = level.firstOrEmpty('w:pStyle').attributes['w:val'];
        if (style !== undefined && !styleLevels.has(style)) styleLevels.set(style, { abstract: abstractId, ilvl });
      }
    }
    const instances = new Map();
    for (const num of root.getElementsByTagName('w:num')) {
      // A level's start overridden for this instance: w:startOverride, else the w:start of a whole level definition the
      // override gives (w:lvlOverride/w:lvl, as Word 2003 and other writers restart a list).
      const overrides = new Map();
      for (const override of num.getElementsByTagName('w:lvlOverride')) {
        const start = override.firstOrEmpty('w:startOverride').attributes['w:val'] ?? override.firstOrEmpty('w:lvl').firstOrEmpty('w:start').attributes['w:val'];
        if (start !== undefined) overrides.set(String(override.attributes['w:ilvl']), Number(start));
      }
      instances.set(String(num.attributes['w:numId']), { abstract: num.firstOrEmpty('w:abstractNumId').attributes['w:val'], overrides });
    }
    // A definition that only links to a numbering style (w:numStyleLink: a list in a list style) has its levels in the
    // definition of that style's numbering instance (mammoth's findLevel follows the link the same way); its items take
    // that definition's starts and formats and count with that definition's items, as Word counts a list style's lists.
    const styleLinks = new Map();
    for (const abstract of root.getElementsByTagName('w:abstractNum')) {
      const link = abstract.firstOrEmpty('w:numStyleLink').attributes['w:val'];
      if (link !== undefined) styleLinks.set(String(abstract.attributes['w:abstractNumId']), link);
    }
    const definitionOf = (abstract) => {
      for (let hops = 0; hops < 8 && styleLinks.has(String(abstract)); hops++) {
        const numId = options.styles.findNumberingStyleById?.(styleLinks.get(String(abstract)))?.numId;
        const linked = numId === undefined ? undefined : instances.get(String(numId))?.abstract;
        if (linked === undefined) break;
        abstract = linked;
      }
      return abstract;
    };
    const levels = new Map();
    return {
      ...numbering,
      findLevel(numId, level) {
        const found = numbering.findLevel(numId, level);
        const instance = instances.get(String(numId));
        if (!found || !instance) return found;
        const key = `${numId}:${level}`;
        if (!levels.has(key)) {
          const abstract = definitionOf(instance.abstract);
          const abstractKey = `${abstract}:${found.level}`;
          levels.set(key, { ...found, instance: `n${key}`, counter: `a${abstractKey}`, start: instance.overrides.get(String(level)) ?? starts.get(abstractKey) ?? 1, restarts: instance.overrides.has(String(level)), abstract, formats });
        }
        return levels.get(key);
      },
      // A paragraph numbered through its style (the style named in a level: Word's numbered headings) counts on in that
      // level of that definition, as Word counts it.
      findLevelByParagraphStyleId(styleId) {
        const found = numbering.findLevelByParagraphStyleId(styleId);
        const linked = styleLevels.get(styleId);
        if (!found || !linked) return found;
        const key = `s${styleId}`;
        if (!levels.has(key)) {
          const abstractKey = `${linked.abstract}:${found.level}`;
          levels.set(key, { ...found, instance: key, counter: `a${abstractKey}`, start: starts.get(abstractKey) ?? 1, restarts: false, abstract: linked.abstract, formats });
        }
        return levels.get(key);
      },
    };
  };
  numberingXml.readNumberingXml.numberedByInstance = true;
}

/** Word's number for a numbered item (its level from numberedByInstance), counting on per definition and level. */
function wordNumber(level, counts) {
  if (level.counter === undefined || !level.isOrdered) return null;
  const [abstract, depth] = level.counter.split(':');
  // An item of a level restarts the deeper levels of its definition.
  for (const key of [...counts.keys()]) {
    const [otherAbstract, otherDepth] = key.split(':');
    if (otherAbstract === abstract && Number(otherDepth) > Number(depth)) counts.delete(key);
  }
  // (Counters are keyed "a<definition>:<level>", first uses of an instance "n<instance>:<level>".)
  if (level.restarts && !counts.has(level.instance)) {
    counts.set(level.instance, true);
    counts.set(level.counter, level.start - 1);
  }
  const number = (counts.get(level.counter) ?? level.start - 1) + 1;
  counts.set(level.counter, number);
  // Only a number the item's <ol start> can carry (a start or restart override of 10^9 or more, below 1 or not a number
  // gives none): the item keeps the list's own count instead.
  return Number.isInteger(number) && number >= 1 && number <= MAX_LIST_NUMBER ? number : null;
}

/** A heading's style (Word's built-in "Heading n", by name). */
const HEADING_STYLE = /^heading [1-9]$/i;

/**
 * The largest number written in letters (Word's "aa, bb" repeats the letter (n - 1) / 26 + 1 times: 780 is "zzz...z",
 * 30 times, as far as Word's letter numbering goes); a larger one, from a start value up to MAX_LIST_NUMBER, is written
 * in digits, so a heading's or note's number stays a few characters long (a start of 999,999,000 in letters was a heading
 * of 38 million characters from a 2 KB .docx). The .odt reading (block-collector.ts formattedNumber) has the same bound.
 */
const MAX_LETTER_NUMBER = 780;

/** A number in a Word number format (w:numFmt): digits, letters or Roman numerals; null for none or a bullet. */
function formattedWordNumber(n, format) {
  switch (format) {
    case 'none':
    case 'bullet':
      return null;
    case 'lowerLetter':
    case 'upperLetter': {
      if (!Number.isInteger(n) || n < 1 || n > MAX_LETTER_NUMBER) return String(n);
      // Word repeats the letter past z: aa, bb.
      const letter = String.fromCharCode(97 + ((n - 1) % 26)).repeat(Math.floor((n - 1) / 26) + 1);
      return format === 'upperLetter' ? letter.toUpperCase() : letter;
    }
    case 'lowerRoman':
    case 'upperRoman': {
      if (!Number.isInteger(n) || n < 1 || n >= 4000) return String(n);
      const numerals = [[1000, 'm'], [900, 'cm'], [500, 'd'], [400, 'cd'], [100, 'c'], [90, 'xc'], [50, 'l'], [40, 'xl'], [10, 'x'], [9, 'ix'], [5, 'v'], [4, 'iv'], [1, 'i']];
      let roman = '';
      let rest = n;
      for (const [value, numeral] of numerals) for (; rest >= value; rest -= value) roman += numeral;
      return format === 'upperRoman' ? roman.toUpperCase() : roman;
    }
    case 'decimalZero':
      return String(n).padStart(2, '0');
    default:
      return String(n);
  }
}

/**
 * The number a numbered heading shows (its level's text, "%1.%2 ", with each level's count in that level's format:
 * "1.2"), after wordNumber counted it; null when the level shows none.
 */
function headingNumberText(level, counts) {
  if (level.abstract === undefined || !level.formats) return null;
  const own = level.formats.get(`${level.abstract}:${level.level}`);
  if (!own || own.format === 'none' || own.format === 'bullet') return null;
  let missing = false;
  const text = own.text.replace(/%([1-9])/g, (_, k) => {
    const depth = Number(k) - 1;
    const shown = formattedWordNumber(counts.get(`a${level.abstract}:${depth}`) ?? 0, level.formats.get(`${level.abstract}:${depth}`)?.format ?? 'decimal');
    if (shown === null) missing = true;
    return shown ?? '';
  });
  const number = text.replace(/\s+/g, ' ').trim();
  return missing || !number ? null : number;
}

/** The paragraph with `mark` before its first text. */
function markedParagraph(paragraph, mark) {
  let marked = false;
  const into = (element) => {
    if (marked) return element;
    if (element.type === 'text') {
      marked = true;
      return { ...element, value: mark + element.value };
    }
    return Array.isArray(element.children) ? { ...element, children: element.children.map(into) } : element;
  };
  return into(paragraph);
}

function readableDocument(document) {
  return withNoteLabels(readable(document, new Map()), noteFormats);
}

/**
 * The number formats of the document's automatic footnotes and endnotes (w:footnotePr / w:endnotePr w:numFmt): the
 * body's last section's (w:sectPr, found as mammoth reads document.xml: sectionNoteFormats), else settings.xml's
 * (documentNoteFormats), else Word's defaults: footnotes in digits, endnotes in lower-case Roman numerals (what Word and
 * Writer show: "i", as an .odt's citation reads). Set for the conversion under way (a worker converts one document).
 */
let noteFormats = { footnote: 'decimal', endnote: 'lowerRoman' };

/**
 * The formats of w:footnotePr and w:endnotePr elements among `element`'s children, over `formats`: each kind's number
 * format (`footnote`, `endnote`), its w:numRestart (`footnoteRestart`, `endnoteRestart`: continuous, eachSect or
 * eachPage) and its w:numStart (`footnoteStart`, `endnoteStart`: the number the count starts from, and starts again
 * from where it restarts; 1 to MAX_LIST_NUMBER).
 */
function noteFormatsIn(element, formats) {
  const found = { ...formats };
  for (const child of element?.children ?? []) {
    const kind = child.name === 'w:footnotePr' ? 'footnote' : child.name === 'w:endnotePr' ? 'endnote' : null;
    if (!kind) continue;
    const format = child.children?.find((c) => c.name === 'w:numFmt')?.attributes?.['w:val'];
    if (format) found[kind] = format;
    const restart = child.children?.find((c) => c.name === 'w:numRestart')?.attributes?.['w:val'];
    if (restart === 'continuous' || restart === 'eachSect' || restart === 'eachPage') found[`${kind}Restart`] = restart;
    const start = Number(child.children?.find((c) => c.name === 'w:numStart')?.attributes?.['w:val']);
    if (Number.isInteger(start) && start >= 1 && start <= MAX_LIST_NUMBER) found[`${kind}Start`] = start;
  }
  return found;
}

/** The count before a kind's first note where `formats` start it (w:numStart: noteFormatsIn), 0 by default. */
const countBefore = (formats, kind) => (formats[`${kind}Start`] ?? 1) - 1;

/** Whether `formats` restart a kind's count (w:numRestart eachSect or eachPage). */
const restarting = (formats) => ['footnote', 'endnote'].some((kind) => (formats[`${kind}Restart`] ?? 'continuous') !== 'continuous');

/**
 * Per note, its number where some section restarts the count (w:numRestart: noteNumbersIn); empty where none does, the
 * notes then counted on through the document in the order of their references (withNoteLabels).
 */
let noteNumbers = new Map();

/**
 * Per note (`footnote-<id>`, `endnote-<id>`), the formats of the section holding its first reference, where that
 * section's own w:footnotePr or w:endnotePr differ from the body's last section's (Word allows a format per section:
 * roman in one, digits in the next). Set with noteFormats for the conversion under way.
 */
let noteFormatsByNote = new Map();

/**
 * document.xml's sections' note formats, when `root` is document.xml: the body's own section properties (its last
 * child w:sectPr) give noteFormats; a section ended by a paragraph's w:pPr/w:sectPr gives its own to the notes referenced
 * in it (noteFormatsByNote), each over settings.xml's formats, as Word reads a section's properties. One walk in
 * document order, without recursion (a deep document cannot exhaust the stack).
 *
 * A section's w:numRestart (its own or settings.xml's) numbers its notes (noteNumbers): eachSect from 1 in each section;
 * eachPage from 1 on each page as far as the document tells without laying it out: at a section that starts a page (its
 * w:type other than continuous), an explicit page break (w:br w:type="page", a paragraph's w:pageBreakBefore) and a
 * page break Word recorded when it last laid the document out (w:lastRenderedPageBreak); a page that fills up and
 * flows on is not known, so its notes count on. A note with a custom mark is not counted, as Word counts.
 */
function sectionNoteFormats(root) {
  const documentFormats = noteFormats;
  noteFormatsByNote = new Map();
  noteNumbers = new Map();
  const body = root?.children?.find((child) => child.name === 'w:body');
  const last = body?.children?.findLast((child) => child.name === 'w:sectPr');
  if (last) noteFormats = noteFormatsIn(last, documentFormats);
  const sectioned = body?.children?.some((child) => child.name === 'w:p' && child.children?.some((p) => p.name === 'w:pPr' && p.children?.some((c) => c.name === 'w:sectPr')));
  if (!body || (!sectioned && !restarting(noteFormats))) return;
  const firstFormats = noteFormats;
  /** The notes referenced in the section being read, first references only, with the page of the section each is on. */
  let pending = [];
  let page = 0;
  let restarts = false;
  const counts = { footnote: countBefore(firstFormats, 'footnote'), endnote: countBefore(firstFormats, 'endnote') };
  const seen = new Set();
  const endSection = (sectPr) => {
    const formats = noteFormatsIn(sectPr, documentFormats);
    restarts ||= restarting(formats);
    const startsPage = (sectPr?.children?.find((c) => c.name === 'w:type')?.attributes?.['w:val'] ?? 'nextPage') !== 'continuous';
    const pages = { footnote: 0, endnote: 0 };
    for (const kind of ['footnote', 'endnote']) {
      const restart = formats[`${kind}Restart`];
      if (restart === 'eachSect' || (restart === 'eachPage' && startsPage)) counts[kind] = countBefore(formats, kind);
    }
    for (const { key, kind, page: at, custom } of pending) {
      if (formats[kind] !== noteFormats[kind]) noteFormatsByNote.set(key, formats);
      if (at !== pages[kind] && formats[`${kind}Restart`] === 'eachPage') counts[kind] = countBefore(formats, kind);
      pages[kind] = at;
      if (!custom) noteNumbers.set(key, ++counts[kind]);
    }
    pending = [];
    page = 0;
  };
  for (const child of body.children) {
    if (child.name === 'w:sectPr') continue;
    const stack = [child];
    while (stack.length > 0) {
      const element = stack.pop();
      const kind = element.name === 'w:footnoteReference' ? 'footnote' : element.name === 'w:endnoteReference' ? 'endnote' : null;
      const key = kind && `${kind}-${element.attributes?.['w:id']}`;
      if (key && !seen.has(key)) {
        seen.add(key);
        pending.push({ key, kind, page, custom: isOn(element.attributes?.['w:customMarkFollows']) });
      } else if (
        (element.name === 'w:br' && element.attributes?.['w:type'] === 'page') ||
        element.name === 'w:lastRenderedPageBreak' ||
        (element.name === 'w:pageBreakBefore' && (element.attributes?.['w:val'] === undefined || isOn(element.attributes['w:val'])))
      ) {
        page++;
      }
      const children = element.children ?? [];
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
    }
    const sectPr = child.name === 'w:p' ? child.children?.find((p) => p.name === 'w:pPr')?.children?.find((c) => c.name === 'w:sectPr') : undefined;
    if (sectPr) endSection(sectPr);
  }
  endSection(last);
  if (!restarts) noteNumbers = new Map();
}

/** The note formats settings.xml gives (read through mammoth's zip reader, before mammoth converts). */
async function documentNoteFormats(bytes) {
  const formats = { footnote: 'decimal', endnote: 'lowerRoman' };
  try {
    const zip = await require('mammoth/lib/zipfile.js').openArrayBuffer(bytes);
    if (!zip.exists('word/settings.xml')) return formats;
    const { readString } = require('mammoth/lib/xml/index.js');
    // Names read with their prefix (w:footnotePr) as mammoth reads document.xml; with no map they were "{namespace}footnotePr",
    // so settings.xml's formats were never found.
    const settings = await readString(await zip.read('word/settings.xml', 'utf-8'), { 'http://schemas.openxmlformats.org/wordprocessingml/2006/main': 'w' });
    return noteFormatsIn(settings.children?.find((child) => child.name === 'w:settings') ?? settings, formats);
  } catch {
    return formats;
  }
}

// A footnote or endnote is labelled as the document shows it, not by its id in the notes part (mammoth's "footnote-3",
// which block-collector.ts took for the note's number: LibreOffice writes its notes from id 2, after the two separators,
// and ids need not follow the order of the references). Automatic notes are numbered in the order of their references,
// footnotes and endnotes each from 1, in digits whatever the number format (as the .doc reading numbers them); a note with
// a custom mark (w:customMarkFollows: the mark is the text after the reference in its run) is labelled with the mark,
// which is taken out of the body's text and off the start of the note's own text, where Word writes it again (mammoth
// kept it in both: "paths [3: * Chestnut paling.]* and"). Each referenced note's text starts with NOTE_LABEL's mark of
// its label, which blocksFromHtml takes as the note's label (and removes); the custom mark reaches the transform as
// CUSTOM_NOTE_MARK's mark of its text, made from the XML by markCustomNoteMarks.
const NOTE_LABEL = { open: '\ue000cards-note-label:', close: '\ue001' };
const CUSTOM_NOTE_MARK = { open: '\ue000cards-note-custom-mark:', close: '\ue001' };
// (A mark's value holds neither mark character, so no match runs on past the next mark's start: linear.)
const CUSTOM_NOTE_MARK_TEXT = /\ue000cards-note-custom-mark:([^\ue000\ue001]*)\ue001/g;
/** At most this many characters of a custom mark are kept (Word allows ten). */
const MAX_CUSTOM_MARK = 10;

function withNoteLabels(document, formats) {
  const counts = { footnote: countBefore(formats, 'footnote'), endnote: countBefore(formats, 'endnote') };
  const labels = new Map();
  const labelled = (element) => {
    if (!Array.isArray(element.children)) return element;
    const children = [];
    for (let i = 0; i < element.children.length; i++) {
      const child = element.children[i];
      if (child.type === 'noteReference') {
        const next = element.children[i + 1];
        const custom = next?.type === 'text' ? /^\ue000cards-note-custom-mark:([^\ue000\ue001]*)\ue001$/.exec(next.value) : null;
        const key = `${child.noteType}-${child.noteId}`;
        if (!labels.has(key)) labels.set(key, { reference: child, label: custom ? custom[1] : noteLabel(noteNumbers.get(key) ?? ++counts[child.noteType], (noteFormatsByNote.get(key) ?? formats)[child.noteType]), custom: custom !== null });
        if (custom) i++;
        children.push(child);
      } else if (child.type === 'text' && child.value.includes(CUSTOM_NOTE_MARK.open)) {
        const value = child.value.replace(CUSTOM_NOTE_MARK_TEXT, '');
        if (value) children.push({ ...child, value });
      } else children.push(labelled(child));
    }
    return { ...element, children };
  };
  const result = labelled(document);
  if (labels.size === 0 || !document.notes) return result;
  const { Notes } = require('mammoth/lib/documents.js');
  const notes = [];
  for (const { reference, label, custom } of labels.values()) {
    const note = document.notes.resolve(reference);
    if (!note) continue;
    const body = withoutCustomNoteMarks(custom && label ? withoutLeadingMark(note.body, label) : note.body);
    notes.push({ ...note, body: markedFirstText(body, `${NOTE_LABEL.open}${label}${NOTE_LABEL.close}`) });
  }
  return { ...result, notes: new Notes(notes) };
}

/** An automatic note's label: its number in its format (a bullet or no format: digits). */
function noteLabel(number, format) {
  return formattedWordNumber(number, format) ?? String(number);
}

/** The note's paragraphs without CUSTOM_NOTE_MARK's marks (a custom reference inside a note: no label of its own). */
function withoutCustomNoteMarks(body) {
  const visit = (element) => {
    if (element.type === 'text') return element.value.includes(CUSTOM_NOTE_MARK.open) ? { ...element, value: element.value.replace(CUSTOM_NOTE_MARK_TEXT, '') } : element;
    return Array.isArray(element.children) ? { ...element, children: element.children.map(visit) } : element;
  };
  return body.map(visit);
}

/** The note's paragraphs with `mark` taken off the start of their first text (Word writes a custom mark there again). */
function withoutLeadingMark(body, mark) {
  let done = false;
  const visit = (element) => {
    if (done) return element;
    if (element.type === 'text') {
      const value = element.value.trimStart();
      if (!value) return element;
      done = true;
      return value.startsWith(mark) ? { ...element, value: value.slice(mark.length) } : element;
    }
    return Array.isArray(element.children) ? { ...element, children: element.children.map(visit) } : element;
  };
  return body.map(visit);
}

/** The note's paragraphs with `mark` before their first text (before the first paragraph when none has text). */
function markedFirstText(body, mark) {
  let marked = false;
  const visit = (element) => {
    if (marked) return element;
    if (element.type === 'text') {
      marked = true;
      return { ...element, value: mark + element.value };
    }
    return Array.isArray(element.children) ? { ...element, children: element.children.map(visit) } : element;
  };
  return body.map(visit);
}

/**
 * The part's text nodes without MARK_CHARACTERS: the document's own text, before the worker marks anything (the custom
 * marks just after, in the same wrapping; the list numbers and note labels in the transform). mammoth's text all comes
 * from text nodes (w:t; a w:sym symbol maps to no such character), so no mark character of the document reaches the HTML.
 */
function withoutMarkCharacters(root) {
  const pending = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node?.type === 'text' && typeof node.value === 'string') {
      if (node.value.includes('\ue000') || node.value.includes('\ue001')) node.value = node.value.replace(MARK_CHARACTERS, '');
    } else if (Array.isArray(node?.children)) for (const child of node.children) pending.push(child);
  }
}

/** The fonts whose characters dingbat-to-unicode maps, as mammoth maps a w:sym of them. */
const DINGBAT_FONT = /^(symbol|wingdings( 2| 3)?|webdings)$/i;
/** mammoth's dependency dingbat-to-unicode (its table for w:sym), resolved from mammoth. */
const requireDingbats = () => createRequire(require.resolve('mammoth'))('dingbat-to-unicode');

/**
 * The private-use characters (U+F020-U+F0FF) of a run set in a Symbol or Wingdings font (w:rFonts; Writer writes a
 * symbol so, where Word writes a w:sym, which mammoth maps) made the Unicode characters they show, by mammoth's own
 * table (dingbat-to-unicode); mammoth kept them as they are, characters no font shows.
 */
function symbolRunsMapped(root) {
  let dingbats = null;
  const pending = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (!Array.isArray(node?.children)) continue;
    if (node.name === 'w:r') {
      const fonts = node.children.find((child) => child.name === 'w:rPr')?.children?.find((child) => child.name === 'w:rFonts')?.attributes ?? {};
      const font = [fonts['w:ascii'], fonts['w:hAnsi'], fonts['w:cs']].find((name) => name !== undefined && DINGBAT_FONT.test(name));
      if (font === undefined) continue;
      for (const t of node.children) {
        if (t.name !== 'w:t' || !Array.isArray(t.children)) continue;
        for (const text of t.children) {
          if (text.type !== 'text' || !/[\uf020-\uf0ff]/.test(text.value)) continue;
          dingbats ??= requireDingbats();
          text.value = text.value.replace(/[\uf020-\uf0ff]/g, (c) => dingbats.hex(font, (c.charCodeAt(0) & 0xff).toString(16).toUpperCase().padStart(2, '0'))?.string ?? c);
        }
      }
      continue;
    }
    for (const child of node.children) pending.push(child);
  }
}

// A right-to-left paragraph (w:bidi in its w:pPr, else in its paragraph style or a style that one is based on, else in
// the document defaults' w:pPrDefault): mammoth reads no w:bidi, so its paragraph would start left to right in the card
// when its first word is Latin or a number. Each such paragraph holding text gets a first run of DIRECTION's mark, which
// blocksFromHtml takes as the block's direction (and removes). The styles are read from styles.xml, which mammoth reads
// before document.xml (paragraphDirections, set for the conversion under way).
const DIRECTION = { open: '\ue000cards-dir:', close: '\ue001' };

/** Per paragraph style id: whether it sets a paragraph right to left (its own w:bidi or the one it is based on's). */
let paragraphDirections = { rtl: () => false };

/** A w:pPr's w:bidi: true (on), false (w:val 0, false or off) or undefined (none). */
function bidiOf(pPr) {
  const bidi = pPr?.children?.find((child) => child.name === 'w:bidi');
  if (!bidi) return undefined;
  const value = bidi.attributes?.['w:val'];
  return value === undefined || !(value === '0' || value === 'false' || value === 'off');
}

/**
 * The directions styles.xml's paragraph styles give: rtl(styleId) follows w:basedOn (at most 16 styles up, as a loop
 * of styles ends too) to the first style with a w:bidi; a paragraph without a style (or with one the part lacks) has
 * the default paragraph style's; none of them with a w:bidi, the document defaults' (w:docDefaults w:pPrDefault).
 */
function docxStyleDirections(root) {
  const styles = new Map();
  let defaultStyle;
  let defaults = false;
  for (const child of root.children ?? []) {
    if (child.name === 'w:docDefaults') {
      const pPr = child.children?.find((c) => c.name === 'w:pPrDefault')?.children?.find((c) => c.name === 'w:pPr');
      defaults = bidiOf(pPr) ?? false;
    } else if (child.name === 'w:style' && child.attributes?.['w:type'] === 'paragraph') {
      const id = child.attributes['w:styleId'];
      const basedOn = child.children?.find((c) => c.name === 'w:basedOn')?.attributes?.['w:val'];
      styles.set(id, { basedOn, bidi: bidiOf(child.children?.find((c) => c.name === 'w:pPr')) });
      if (isOn(child.attributes['w:default'])) defaultStyle = id;
    }
  }
  const found = new Map();
  return {
    rtl(styleId) {
      const id = styleId !== undefined && styles.has(styleId) ? styleId : defaultStyle;
      if (found.has(id)) return found.get(id);
      let bidi;
      for (let style = styles.get(id), steps = 0; style && bidi === undefined && steps < 16; style = styles.get(style.basedOn), steps++) bidi = style.bidi;
      const rtl = bidi ?? defaults;
      found.set(id, rtl);
      return rtl;
    },
  };
}

/** Whether a paragraph holds a w:t of its own (not only one of a text box's paragraphs inside it). */
function holdsText(paragraph) {
  const pending = (paragraph.children ?? []).slice();
  while (pending.length > 0) {
    const node = pending.pop();
    if (node.name === 'w:t') return true;
    if (node.name !== 'w:p' && Array.isArray(node.children)) for (const child of node.children) pending.push(child);
  }
  return false;
}

/**
 * document.xml's right-to-left paragraphs holding text (text boxes' too) given DIRECTION's mark as their first run,
 * after their w:pPr. One walk of the part, without recursion; each paragraph's own runs looked through once more.
 */
function markRightToLeftParagraphs(root, xml) {
  const pending = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (!Array.isArray(node?.children)) continue;
    if (node.name === 'w:p') {
      const pPr = node.children.find((child) => child.name === 'w:pPr');
      const own = bidiOf(pPr);
      const style = pPr?.children?.find((child) => child.name === 'w:pStyle')?.attributes?.['w:val'];
      if ((own ?? paragraphDirections.rtl(style)) && holdsText(node)) {
        const mark = xml.element('w:r', {}, [xml.element('w:t', {}, [xml.text(`${DIRECTION.open}rtl${DIRECTION.close}`)])]);
        const at = pPr ? node.children.indexOf(pPr) + 1 : 0;
        node.children = [...node.children.slice(0, at), mark, ...node.children.slice(at)];
      }
    }
    for (const child of node.children) pending.push(child);
  }
}

/** Whether a w:customMarkFollows attribute (ST_OnOff) is on. */
const isOn = (value) => value === '1' || value === 'true' || value === 'on';

/**
 * The text after a footnote or endnote reference with w:customMarkFollows in its run (the mark: "*") made one w:t of
 * CUSTOM_NOTE_MARK's mark, which withNoteLabels takes as the note's label: mammoth reads no customMarkFollows and
 * would keep the mark as body text. `root` is a part's XML as mammoth's reader gives it; each node is visited once.
 */
function markCustomNoteMarks(root, xml) {
  const pending = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (!Array.isArray(node?.children)) continue;
    if (node.name === 'w:r') {
      const at = node.children.findIndex(
        (child) => (child.name === 'w:footnoteReference' || child.name === 'w:endnoteReference') && isOn(child.attributes?.['w:customMarkFollows']),
      );
      if (at >= 0) {
        const after = node.children.slice(at + 1);
        const mark = after
          .filter((child) => child.name === 'w:t')
          .map((child) => child.children.map((text) => (text.type === 'text' ? text.value : '')).join(''))
          .join('')
          .replace(MARK_CHARACTERS, '')
          .trim();
        const markText = xml.element('w:t', {}, [xml.text(`${CUSTOM_NOTE_MARK.open}${Array.from(mark).slice(0, MAX_CUSTOM_MARK).join('')}${CUSTOM_NOTE_MARK.close}`)]);
        node.children = [...node.children.slice(0, at + 1), markText, ...after.filter((child) => child.name !== 'w:t')];
        continue;
      }
    }
    for (const child of node.children) pending.push(child);
  }
}

function readable(element, counts) {
  if (!Array.isArray(element.children) || element.type === 'paragraph') return element;
  let item = null;
  const children = element.children.flatMap((child) => {
    if (child.type === 'paragraph' && GENERATED_TABLE_STYLE.test(child.styleName ?? '')) return [];
    if (child.type !== 'paragraph') {
      item = null;
      return readable(child, counts);
    }
    if (child.numbering && HEADING_STYLE.test(child.styleName ?? '')) {
      // A numbered heading keeps the number it shows ("1.1 Sites"), as text: mammoth writes no number for a heading.
      item = null;
      if (wordNumber(child.numbering, counts) === null) return child;
      const shown = headingNumberText(child.numbering, counts);
      return shown === null ? child : markedParagraph(child, `${shown} `);
    }
    if (child.numbering) {
      item = child.numbering;
      const number = wordNumber(child.numbering, counts);
      return number === null ? child : markedParagraph(child, `${LIST_NUMBER.open}${number}${LIST_NUMBER.close}`);
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

// The document's title (Word's "Title" style, by name or id) is its first heading, as "Heading 1" is: a user who sets
// the title in Title above the first section expects it to title the text under it. "Subtitle" stays text: a line under
// the title, not a section's name. mammoth's own style map has no mapping for either (a warning, then a plain p).
const TITLE_STYLES = ["p[style-name='Title'] => h1:fresh", 'p.Title => h1:fresh'];

// A Word text box written only as DrawingML: Word writes a shape as mc:AlternateContent, its DrawingML in mc:Choice
// (wps:wsp > wps:txbx > w:txbxContent) and a VML copy in mc:Fallback (w:pict > v:shape > v:textbox > w:txbxContent).
// mammoth reads only the fallback, so a text box saved without it (LibreOffice, newer Word, other writers) lost its text.
// Each XML part mammoth reads is given such a fallback made of the choice's w:txbxContent, which mammoth then reads as
// it reads a VML text box: its paragraphs follow the paragraph holding it (text-box-fallbacks.cjs; each box read once,
// so nested boxes take time linear in the document).
//
// The same wrapping first takes the mark characters out of the part's text (withoutMarkCharacters), then marks the
// custom marks of notes (markCustomNoteMarks, before the fallbacks are made: the walk would otherwise go into each built
// fallback as well as its choice, which hold the same elements).
function textBoxesWithoutFallbackRead() {
  const xml = require('mammoth/lib/xml/index.js');
  if (xml.readString.textBoxesWithoutFallback) return;
  const { addTextBoxFallbacks } = require('./text-box-fallbacks.cjs');
  const readString = xml.readString;
  xml.readString = (...args) =>
    readString(...args).then((root) => {
      withoutMarkCharacters(root);
      if (root?.name === 'w:styles') paragraphDirections = docxStyleDirections(root);
      if (root?.name === 'w:document') {
        sectionNoteFormats(root);
        markRightToLeftParagraphs(root, xml);
      }
      symbolRunsMapped(root);
      markCustomNoteMarks(root, xml);
      addTextBoxFallbacks(root, xml.element);
      return root;
    });
  xml.readString.textBoxesWithoutFallback = true;
}

export async function docxHtml(bytes) {
  const { default: mammoth } = await import('mammoth');
  numberedByInstance();
  textBoxesWithoutFallbackRead();
  noteFormats = await documentNoteFormats(bytes);
  noteFormatsByNote = new Map();
  noteNumbers = new Map();
  paragraphDirections = { rtl: () => false };
  return (await mammoth.convertToHtml({ buffer: bytes }, { transformDocument: readableDocument, styleMap: [...TITLE_STYLES, ...FURTHER_PARAGRAPH_STYLES] })).value;
}

// A .doc's footnotes and endnotes at their references, as block-collector.ts puts a .docx's: "... as measured.[1] Next"
// reads "... as measured. [1: The note's text.] Next", so a note lands in the card holding its reference. word-extractor
// (1.0.4, pinned) gives the body and the notes apart and removes the reference marks (character 2), so the reading is
// wrapped: its piece table is kept, and the body is read again with each note at the place Word's reference tables
// give it (PlcffndRef/PlcffndTxt for footnotes, PlcfendRef/PlcfendTxt for endnotes, in the table stream, located by the
// FIB of the WordDocument stream: MS-DOC's FibRgFcLcb97). An automatically numbered note carries its number in the order
// of the references (footnotes and endnotes each counted apart, as the document and its sections number them:
// docNoteCounter), a custom mark ("*") carries the mark. A document whose tables cannot be read so keeps word-extractor's reading, its notes after the
// body.
/** As reading-failure.ts WORD_ENCRYPTED. */
const WORD_ENCRYPTED = 'WordEncrypted: the .doc document is encrypted';

const NOTE_TABLES = [
  { kind: 'footnote', ref: 0x00aa, text: 0x00b2 },
  { kind: 'endnote', ref: 0x020a, text: 0x0212 },
];

function notesPlacedAtReferences() {
  const Extractor = require('word-extractor/lib/word-ole-extractor.js');
  if (Extractor.prototype.buildDocument.notesPlacedAtReferences) return;
  const writePieces = Extractor.prototype.writePieces;
  Extractor.prototype.writePieces = function (fib, table) {
    this.cardsStreams = { fib, table };
    return writePieces.call(this, fib, table);
  };
  // A password-protected .doc (MS-DOC FibBase: fEncrypted 0x0100, or fObfuscated 0x8000 with it) holds its text
  // encrypted: word-extractor read it as text and failed ("Attempt to access memory outside buffer bounds"). Refused
  // with WORD_ENCRYPTED, which reading-failure.ts (isPasswordError) takes for a password.
  const extractWordDocument = Extractor.prototype.extractWordDocument;
  Extractor.prototype.extractWordDocument = function (document, buffer) {
    if (buffer.length >= 0x0c && buffer.readUInt16LE(0) === 0xa5ec && (buffer.readUInt16LE(0x0a) & 0x0100) !== 0) return Promise.reject(new Error(WORD_ENCRYPTED));
    return extractWordDocument.call(this, document, buffer);
  };
  // word-extractor's own buildDocument is not called: it puts each story through its clean(), whose fields are taken
  // out innermost first, a pass over the story per level of nesting (quadratic: a 170 KB .doc of 40,000 nested fields
  // took 17 s), and none of its texts is read here (wordText reads the pieces). Its empty Document is returned instead.
  const Document = require('word-extractor/lib/document.js');
  Extractor.prototype.buildDocument = function () {
    const document = new Document();
    withoutDocMarks(this._pieces);
    let paragraphs = [];
    try {
      paragraphs = markTableParagraphs(this._pieces, this.cardsStreams);
    } catch {
      // Paragraph properties out of their stream's bounds: a cell's paragraphs stay paragraphs.
    }
    try {
      numberLists(this._pieces, this.cardsStreams, paragraphs, this._boundaries.ccpText);
    } catch {
      // Lists out of their stream's bounds: no numbers shown.
      this._pieces.insertions = undefined;
    }
    try {
      markDirections(this._pieces, paragraphs, this._boundaries.ccpText);
    } catch {
      // Paragraphs out of their stream's bounds: no direction read.
    }
    try {
      markRunCharacters(this._pieces, this.cardsStreams);
    } catch {
      // Character properties or fonts out of their stream's bounds: symbols and raised runs stay as stored.
    }
    const pieces = this._pieces;
    const boundaries = this._boundaries;
    try {
      document.cardsBodyWithNotes = bodyWithNotes(pieces, boundaries, this.cardsStreams, paragraphs);
    } catch {
      // Tables out of their stream's bounds: the notes follow the body (below).
    }
    document.cardsBody = wordText(textOfRange(pieces, 0, boundaries.ccpText, true));
    document.cardsNotes = [storyRange(boundaries, 'footnote'), storyRange(boundaries, 'endnote')].map(([from, to]) => wordText(textOfRange(pieces, from, to)));
    document.cardsTextBoxes = wordText(textOfRange(pieces, ...storyRange(boundaries, 'textbox')));
    return document;
  };
  Extractor.prototype.buildDocument.notesPlacedAtReferences = true;
}

/**
 * The character positions [from, to) of a story (MS-DOC: the stories follow one another, the body, the footnotes, the
 * headers, the comments, the endnotes, the text boxes; each story but the body ends with a mark of its own, left out).
 */
function storyRange(boundaries, story) {
  const lengths = [boundaries.ccpText, boundaries.ccpFtn, boundaries.ccpHdd, boundaries.ccpAtn, boundaries.ccpEdn, boundaries.ccpTxbx].map((n) => n || 0);
  const index = { footnote: 1, endnote: 4, textbox: 5 }[story];
  const from = lengths.slice(0, index).reduce((a, b) => a + b, 0);
  return [from, from + Math.max(0, lengths[index] - 1)];
}

/**
 * A .doc's text as Word shows it, from the piece table's characters (MS-DOC 2.8.25's special characters). word-extractor's
 * clean() has no entry for 0x1F (the optional hyphen: "Begr\x1fündung" read "Begrundefinedündung") and its filter() (on by
 * default) flattens curly quotes, dashes and em/en spaces to ASCII; neither is used. Kept for blocksFromDoc: 0x07 (a
 * table cell's end; a row ends with a line end, where word-extractor writes the row's mark), 0x0B (a line break,
 * Shift+Enter, also a paragraph's end inside a table cell: markTableParagraphs), an inner table's marks (0x10-0x12) and
 * a heading's end (U+E011-U+E019, followed by a line end). A field shows its result (the
 * instruction dropped: "HYPERLINK ..."; a hyperlink's result marked with its target, doc-fields.cjs linkMarks, so the
 * reading puts the link where the field is), a field without one nothing; the list numbers numberLists puts at
 * paragraph starts stay (U+E020/U+E021 around a list item's place, a heading's number as text); the non-breaking hyphen 0x1E is U+2011 (as mammoth
 * reads a .docx's w:noBreakHyphen), the optional hyphen 0x1F nothing (a .docx's soft hyphen is dropped by the splitter);
 * page, column and section breaks end the paragraph; every other C0 control (note and comment references, pictures,
 * separators, deleted text written as 0x00 by word-extractor) is dropped. (Symbol font characters: markRunCharacters.)
 */
function wordText(raw) {
  // Fields nest: one pass with a stack (doc-fields.cjs); a field's marks without their partners go after.
  return withFieldResults(raw, { linkMarks: true })
    .replace(/[\x0a\x0c\x0d\x0e]/g, '\n')
    .replace(/[\ue011-\ue019]/g, '$&\n')
    .replace(/\x1e/g, '\u2011')
    .replace(/\t/g, ' ')
    .replace(/[\x00-\x06\x08\x0f\x13-\x1f]/g, '');
}

/**
 * The paragraphs Word marks as in a table (sprmPFInTable, 0x2416, in their PAPX: MS-DOC 2.6.2) end with a cell line
 * (0x0B) rather than a paragraph mark, so a cell of several paragraphs stays in its row; a cell's last paragraph ends
 * with the cell's mark (0x07). The PAPX pages are read as word-extractor reads them for the row marks (sprmPFTtp, which
 * it writes as a line end). The pieces' text is changed in place, after word-extractor built its document.
 */
function markTableParagraphs(pieces, streams) {
  if (!streams) return [];
  let styles = [];
  try {
    styles = styleSheet(streams);
  } catch {
    // Out of its stream's bounds: no heading styles.
  }
  const headingLevel = headingLevels(styles);
  const numbering = styleNumbering(styles);
  const rightToLeft = styleDirections(styles);
  /** The paragraphs' ends (file positions) and list numbering, for numberLists. */
  const paragraphs = [];
  for (const { fkp, runs } of propertyPages(streams, 0x0102, 'PAPX')) {
    for (let j = 0; j < runs; j++) {
      const start = fkp.readUInt32LE(j * 4);
      const end = fkp.readUInt32LE((j + 1) * 4);
      const at = fkp.readUInt8((runs + 1) * 4 + j * 13) * 2;
      if (at === 0 || at >= 511) continue;
      let cb = fkp.readUInt8(at);
      let from = at + 1;
      if (cb === 0) {
        cb = fkp.readUInt8(at + 1);
        from = at + 2;
      }
      const grpprl = fkp.subarray(from, Math.min(511, from + 2 * cb));
      const paragraph = paragraphProperties(grpprl);
      const level = headingLevel(paragraph);
      paragraphs.push({ end, inTable: paragraph.inTable, heading: level !== null, pageBreak: paragraph.pageBreak, rtl: rightToLeft(paragraph), ...numbering(paragraph) });
      if (paragraph.inTable) markCellLines(pieces, start, end, paragraph);
      else if (level !== null) replaceInRange(pieces, start, end, (text) => text.replace(/\r/g, String.fromCharCode(DOC_HEADING_END + level)));
    }
  }
  return paragraphs;
}

/**
 * The 512-byte property pages (FKPs) of a .doc's PlcBteChpx or PlcBtePapx (MS-DOC 2.8.6/2.8.7), whose place in the
 * table stream the FIB gives at `fcOffset` (its length right after), each page once, with its count of runs (its last
 * byte). A page outside the WordDocument stream is an error; a bin table that does not fit yields nothing.
 */
function* propertyPages({ fib, table }, fcOffset, kind) {
  const fc = fib.readUInt32LE(fcOffset);
  const lcb = fib.readUInt32LE(fcOffset + 4);
  const count = (lcb - 4) / 8;
  if (!Number.isInteger(count) || count <= 0 || fc + lcb > table.length) return;
  const seen = new Set();
  for (let i = 0; i < count; i++) {
    const page = table.readUInt32LE(fc + (count + 1) * 4 + i * 4);
    if ((page + 1) * 512 > fib.length) throw new Error(`a ${kind} page lies outside its stream`);
    if (seen.has(page)) continue;
    seen.add(page);
    const fkp = fib.subarray(page * 512, (page + 1) * 512);
    yield { fkp, runs: fkp.readUInt8(511) };
  }
}

/** The sprms of a grpprl from `offset`, each with the offset of its operand; a truncated last one ends the walk. */
function* sprmsOf(grpprl, offset) {
  while (offset + 2 <= grpprl.length) {
    const sprm = grpprl.readUInt16LE(offset);
    offset += 2;
    yield { sprm, at: offset };
    const spra = sprm >> 13;
    if (spra === 6) offset += (offset < grpprl.length ? grpprl[offset] : 0) + 1;
    else offset += [1, 1, 2, 4, 2, 2, 0, 3][spra];
  }
}

/** The names of the .doc's fonts (SttbfFfn, MS-DOC 2.9.87's FFN: the name after 39 bytes of metrics), by index. */
function fontNames(fib, table) {
  const fc = fib.readUInt32LE(0x0112);
  const lcb = fib.readUInt32LE(0x0116);
  if (lcb < 4 || fc + lcb > table.length) return [];
  const sttb = table.subarray(fc, fc + lcb);
  const count = sttb.readUInt16LE(0);
  const names = [];
  let offset = 4;
  for (let i = 0; i < count && offset < sttb.length; i++) {
    const size = sttb[offset] + 1;
    const ffn = sttb.subarray(offset + 1 + 39, Math.min(sttb.length, offset + size));
    let name = '';
    for (let k = 0; k + 1 < ffn.length; k += 2) {
      const unit = ffn.readUInt16LE(k);
      if (unit === 0) break;
      name += String.fromCharCode(unit);
    }
    names.push(name);
    offset += size;
  }
  return names;
}

/**
 * Runs of characters whose properties change what they show. A superscript or subscript run (sprmCIss) whose every
 * character has a Unicode superscript or subscript form is written in those forms ("10⁻³", "H₂O"), as the .docx and .odt
 * readers write one. A character of a Symbol or Wingdings font run stored in the private-use area (U+F020-U+F0FF, as Word and LibreOffice
 * write them: "≥" of Symbol is U+F0B3) is the Unicode character it shows (dingbat-to-unicode, as mammoth maps a .docx's
 * w:sym), where there is one in the Basic Multilingual Plane (a character position is one UTF-16 unit); else it stays.
 * The run's font is its sprmCRgFtc0 (0x4A4F) in the CHPX pages (MS-DOC 2.6.1), read as word-extractor reads them for
 * deleted text; a symbol inserted with sprmCSymbol (0x6A09: font and character) is that character.
 */
function markRunCharacters(pieces, streams) {
  if (!streams) return;
  const { fib, table } = streams;
  const fonts = fontNames(fib, table);
  const dingbats = fonts.some((name) => DINGBAT_FONT.test(name)) ? requireDingbats() : null;
  for (const { fkp, runs } of propertyPages(streams, 0x00fa, 'CHPX')) {
    for (let j = 0; j < runs; j++) {
      const at = fkp.readUInt8((runs + 1) * 4 + j) * 2;
      if (at === 0) continue;
      const grpprl = fkp.subarray(at + 1, Math.min(511, at + 1 + fkp.readUInt8(at)));
      let font = null;
      let symbol = null;
      let position = 0;
      for (const { sprm, at: operand } of sprmsOf(grpprl, 0)) {
        if (sprm === 0x2a48 && operand < grpprl.length) position = grpprl[operand];
        else if (sprm === 0x4a4f && operand + 2 <= grpprl.length) font = fonts[grpprl.readUInt16LE(operand)] ?? null;
        else if (sprm === 0x6a09 && operand + 4 <= grpprl.length) symbol = { font: fonts[grpprl.readUInt16LE(operand)] ?? null, code: grpprl.readUInt16LE(operand + 2) };
      }
      const start = fkp.readUInt32LE(j * 4);
      const end = fkp.readUInt32LE((j + 1) * 4);
      // A superscript or subscript run (sprmCIss: 1 raised, 2 lowered) in Unicode's forms when every character has one.
      if (position === 1 || position === 2) {
        const kind = position === 1 ? 'sup' : 'sub';
        replaceInRange(pieces, start, end, (text) => (/\S/.test(text) ? (inScriptForms(text, kind) ?? text) : text));
      }
      if (!dingbats) continue;
      const mapped = (fontName, code) => {
        const found = fontName && DINGBAT_FONT.test(fontName) ? dingbats.hex(fontName, (code & 0xff).toString(16).toUpperCase().padStart(2, '0')) : undefined;
        return found && found.codePoint <= 0xffff ? found.string : null;
      };
      if (symbol) {
        const character = mapped(symbol.font, symbol.code);
        if (character) replaceInRange(pieces, start, end, (text) => text.replace(/[^\r\x07\x0b\x10-\x12\ue010-\ue03f]/g, character));
      } else if (font && DINGBAT_FONT.test(font)) {
        replaceInRange(pieces, start, end, (text) => text.replace(/[\uf020-\uf0ff]/g, (c) => mapped(font, c.charCodeAt(0)) ?? c));
      }
    }
  }
}

/** The pieces ordered by file position (they do not overlap in a document Word wrote), and the visits left to them. */
const PIECE_INDEX = new WeakMap();
function byFilePosition(pieces) {
  let index = PIECE_INDEX.get(pieces);
  if (!index) {
    // A document Word wrote visits one or two pieces per run: at most 255 runs per 512-byte page of the stream.
    const stream = pieces.reduce((most, piece) => Math.max(most, piece.endFilePos), 0);
    index = { sorted: [...pieces].sort((a, b) => a.startFilePos - b.startFilePos), budget: 4 * (pieces.length + 255 * Math.ceil(stream / 512)) + 4096 };
    PIECE_INDEX.set(pieces, index);
  }
  return index;
}


/**
 * The text of file positions [start, end) changed by `change` (which keeps its length), in every piece holding them.
 * The pieces are looked up by file position (byFilePosition), and a file whose property pages make the runs visit far
 * more pieces than a document has (runs over the whole file, pages listed again and again) is refused: the caller
 * leaves its text as stored.
 */
function replaceInRange(pieces, start, end, change) {
  const index = byFilePosition(pieces);
  let low = 0;
  let high = index.sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (index.sorted[middle].endFilePos <= start) low = middle + 1;
    else high = middle;
  }
  for (let i = low; i < index.sorted.length && index.sorted[i].startFilePos < end; i++) {
    const piece = index.sorted[i];
    if (--index.budget < 0) throw new Error('property runs visit too many pieces');
    if (piece.endFilePos <= start) continue;
    const from = Math.max(0, (start - piece.startFilePos) / piece.bpc);
    const to = Math.min(piece.text.length, (end - piece.startFilePos) / piece.bpc);
    const part = piece.text.slice(from, to);
    const changed = change(part);
    if (changed !== part && changed.length === part.length) piece.text = piece.text.slice(0, from) + changed + piece.text.slice(to);
  }
}

/**
 * What a paragraph's properties (istd, then its sprms: MS-DOC 2.6.2) say of its place: its style (istd), whether it is in
 * a table (sprmPFInTable 0x2416) and how deep (sprmPItap 0x6649: 2 and more inside a table's cell), whether it ends an
 * inner table's cell (sprmPFInnerTableCell 0x244B) or row (sprmPFInnerTtp 0x244C), and its own outline level
 * (sprmPOutLvl 0x2640: 0-8 a heading's level, 9 body text; null when it sets none), and its list numbering (sprmPIlfo
 * 0x460B: the list format override, 1-based, 0 none; sprmPIlvl 0x260A: the level; null when it sets none), whether
 * it starts a page (sprmPFPageBreakBefore 0x2407) and whether it is right to left (sprmPFBiDi 0x2441; null when it sets
 * none).
 */
function paragraphProperties(grpprl) {
  const found = { istd: grpprl.length >= 2 ? grpprl.readUInt16LE(0) : 0, inTable: false, depth: 1, innerCell: false, innerRow: false, outline: null, ilfo: null, ilvl: null, pageBreak: false, bidi: null };
  const flag = (at) => at < grpprl.length && grpprl[at] !== 0;
  for (const { sprm, at } of sprmsOf(grpprl, 2)) {
    if (sprm === 0x2416) found.inTable = flag(at);
    else if (sprm === 0x6649 && at + 4 <= grpprl.length) found.depth = grpprl.readInt32LE(at);
    else if (sprm === 0x244b) found.innerCell = flag(at);
    else if (sprm === 0x244c) found.innerRow = flag(at);
    else if (sprm === 0x2640 && at < grpprl.length) found.outline = grpprl[at];
    else if (sprm === 0x460b && at + 2 <= grpprl.length) found.ilfo = grpprl.readInt16LE(at);
    else if (sprm === 0x260a && at < grpprl.length) found.ilvl = grpprl[at];
    else if (sprm === 0x2407) found.pageBreak = flag(at);
    else if (sprm === 0x2441 && at < grpprl.length) found.bidi = flag(at);
  }
  return found;
}

/**
 * The paragraph marks of file positions [start, end) of a table's paragraph, in every piece holding them: in the outermost
 * table a cell line (0x0B; its cell ends with 0x07); in a table inside a cell (sprmPItap 2 or more) an inner cell's line,
 * cell end or row end (DOC_INNER_LINE, DOC_INNER_CELL_END, DOC_INNER_ROW_END: blocksFromDoc reads the inner table's rows
 * as the .docx reading does). Tables nested deeper are read as rows of the inner table.
 */
function markCellLines(pieces, start, end, paragraph) {
  const mark = paragraph.depth < 2 ? '\x0b' : paragraph.innerRow ? DOC_INNER_ROW_END : paragraph.innerCell ? DOC_INNER_CELL_END : DOC_INNER_LINE;
  replaceInRange(pieces, start, end, (text) => text.replace(/\r/g, mark));
}

/**
 * The worker's marks in a .doc's text, each put in place of a paragraph mark (so the pieces keep their lengths) and read by
 * blocksFromDoc (library-document-reader.ts): an inner table's cell line, cell end and row end (C0 controls no Word text
 * holds as such), and a heading's end, DOC_HEADING_END + its level (1-9: U+E011-U+E019, private-use characters).
 * Characters of the document that look like them are dropped first (withoutDocMarks), so every mark is the worker's.
 */
const DOC_INNER_CELL_END = '\x10';
const DOC_INNER_ROW_END = '\x11';
const DOC_INNER_LINE = '\x12';
const DOC_HEADING_END = 0xe010;
const DOC_MARKS = /[\x10-\x12\ue010-\ue03f]/g;

/** The pieces' characters that look like the worker's marks made deleted text (0x00, which wordText drops): same length. */
function withoutDocMarks(pieces) {
  for (const piece of pieces) piece.text = piece.text.replace(DOC_MARKS, '\x00');
}

/**
 * A paragraph's heading level (1-9), or null for body text, as Word and the .docx reading (mammoth, by the style's name)
 * take it: a paragraph styled Heading 1-9 (its style's built-in identifier, sti 1-9, or its name) or Title (sti 62: the
 * first level, as the .docx reading maps Title); else one whose own properties (sprmPOutLvl) or its style's, or a style
 * it is based on, give an outline level 0-8. The styles are read from the STSH (MS-DOC 2.9.271), found through the FIB
 * (fcStshf 0x00A2); a style sheet that cannot be read gives no headings but those set in the paragraph itself.
 */
function headingLevels(styles) {
  /** Each style's level and whether its name makes it a heading (Heading n, Title), which the paragraph's own outline level does not undo. */
  const ofStyle = new Map();
  const styleLevel = (istd) => {
    if (ofStyle.has(istd)) return ofStyle.get(istd);
    let found = { level: null, named: false };
    const style = styles[istd];
    const named = style ? /^heading ([1-9])$/i.exec(style.name) : null;
    if (!style) found = { level: null, named: false };
    else if (style.sti >= 1 && style.sti <= 9) found = { level: style.sti, named: true };
    else if (named) found = { level: Number(named[1]), named: true };
    else if (style.sti === 62 || /^title$/i.test(style.name)) found = { level: 1, named: true };
    else {
      // The outline level, the style's own or inherited (at most 11 styles up: Word bases no deeper).
      for (let s = style, steps = 0; s && steps < 11; s = s.istdBase === 0x0fff ? null : styles[s.istdBase], steps++) {
        if (s.outline !== null) {
          found = { level: s.outline <= 8 ? s.outline + 1 : null, named: false };
          break;
        }
      }
    }
    ofStyle.set(istd, found);
    return found;
  };
  return (paragraph) => {
    const { level, named } = styleLevel(paragraph.istd);
    if (named || paragraph.outline === null) return level;
    return paragraph.outline <= 8 ? paragraph.outline + 1 : null;
  };
}

/**
 * The STSH's styles by istd: { sti, istdBase, name, outline, ilfo, ilvl, bidi } (outline, ilfo, ilvl, bidi: the
 * sprmPOutLvl, sprmPIlfo, sprmPIlvl and sprmPFBiDi of a paragraph style's PAPX), null for an empty slot.
 */
function styleSheet({ fib, table }) {
  const fc = fib.readUInt32LE(0x00a2);
  const lcb = fib.readUInt32LE(0x00a6);
  if (lcb < 6 || fc + lcb > table.length) return [];
  const stsh = table.subarray(fc, fc + lcb);
  const cbStshi = stsh.readUInt16LE(0);
  if (cbStshi < 4 || 2 + cbStshi > stsh.length) return [];
  const count = stsh.readUInt16LE(2);
  const baseSize = stsh.readUInt16LE(4);
  const styles = [];
  let offset = 2 + cbStshi;
  for (let istd = 0; istd < count && offset + 2 <= stsh.length; istd++) {
    const size = stsh.readUInt16LE(offset);
    const std = stsh.subarray(offset + 2, Math.min(stsh.length, offset + 2 + size));
    offset += 2 + size;
    if (size === 0 || std.length < Math.max(10, baseSize) + 2) {
      styles.push(null);
      continue;
    }
    const sti = std.readUInt16LE(0) & 0x0fff;
    const stk = std.readUInt16LE(2) & 0x000f;
    const istdBase = std.readUInt16LE(2) >> 4;
    let at = baseSize;
    const chars = std.readUInt16LE(at);
    let name = '';
    for (let k = 0; k < chars && at + 4 + 2 * k <= std.length; k++) name += String.fromCharCode(std.readUInt16LE(at + 2 + 2 * k));
    at += 2 + 2 * chars + 2;
    let outline = null;
    let ilfo = null;
    let ilvl = null;
    let bidi = null;
    // A paragraph style's first property list is its PAPX (LPUpxPapx: its size, the istd, then the sprms).
    if (stk === 1 && at + 2 <= std.length) {
      const upx = std.subarray(at + 2, Math.min(std.length, at + 2 + std.readUInt16LE(at)));
      for (const { sprm, at: operand } of sprmsOf(upx, 2)) {
        if (sprm === 0x2640 && operand < upx.length) outline = upx[operand];
        else if (sprm === 0x460b && operand + 2 <= upx.length) ilfo = upx.readInt16LE(operand);
        else if (sprm === 0x260a && operand < upx.length) ilvl = upx[operand];
        else if (sprm === 0x2441 && operand < upx.length) bidi = upx[operand] !== 0;
      }
    }
    styles.push({ sti, istdBase, name, outline, ilfo, ilvl, bidi });
  }
  return styles;
}

/**
 * A paragraph's list numbering, its own (sprmPIlfo, sprmPIlvl) or its style's, or a style's it is based on (Word's
 * numbered headings take theirs from the Heading styles): { ilfo, ilvl }, ilfo 0 for none. A paragraph's own ilfo 0 takes
 * its style's numbering away.
 */
function styleNumbering(styles) {
  const ofStyle = new Map();
  const styleList = (istd) => {
    if (ofStyle.has(istd)) return ofStyle.get(istd);
    const found = { ilfo: 0, ilvl: 0 };
    let ilfoFound = false;
    let ilvlFound = false;
    // At most 11 styles up, as for the outline level.
    for (let s = styles[istd], steps = 0; s && steps < 11 && !(ilfoFound && ilvlFound); s = s.istdBase === 0x0fff ? null : styles[s.istdBase], steps++) {
      if (!ilfoFound && s.ilfo !== null) [found.ilfo, ilfoFound] = [s.ilfo, true];
      if (!ilvlFound && s.ilvl !== null) [found.ilvl, ilvlFound] = [s.ilvl, true];
    }
    ofStyle.set(istd, found);
    return found;
  };
  return (paragraph) => {
    const style = styleList(paragraph.istd);
    return { ilfo: paragraph.ilfo ?? style.ilfo, ilvl: paragraph.ilvl ?? style.ilvl };
  };
}

/**
 * Whether a paragraph is right to left: its own sprmPFBiDi, else its style's or a style's it is based on (at most 11
 * styles up, as for the outline level); left to right when none sets it.
 */
function styleDirections(styles) {
  const ofStyle = new Map();
  const styleBidi = (istd) => {
    if (ofStyle.has(istd)) return ofStyle.get(istd);
    let bidi = false;
    for (let s = styles[istd], steps = 0; s && steps < 11; s = s.istdBase === 0x0fff ? null : styles[s.istdBase], steps++) {
      if (s.bidi !== null && s.bidi !== undefined) {
        bidi = s.bidi;
        break;
      }
    }
    ofStyle.set(istd, bidi);
    return bidi;
  };
  return (paragraph) => paragraph.bidi ?? styleBidi(paragraph.istd);
}

/** A right-to-left paragraph's mark at its start in the body's text, read by blocksFromDoc (DOC_RTL there). */
const DOC_RTL = '\ue022';

/**
 * DOC_RTL at the start of each of the body's right-to-left paragraphs (markTableParagraphs' rtl), among the insertions
 * textOfRange puts in the body's text, before a list item's mark or a heading's number at the same place (so a
 * paragraph's direction comes before its first visible character).
 */
function markDirections(pieces, paragraphs, bodyLength) {
  if (!paragraphs.some((p) => p.rtl)) return;
  const marks = paragraphMarks(pieces, paragraphs, bodyLength);
  const directions = [];
  for (let i = 0; i < marks.length; i++) {
    const start = i > 0 ? marks[i - 1].cp + 1 : 0;
    if (marks[i].paragraph.rtl && start < marks[i].cp) directions.push({ cp: start, text: DOC_RTL });
  }
  if (directions.length === 0) return;
  // Both lists are in order of cp: merged, a direction first where both are at one place.
  const lists = pieces.insertions ?? [];
  const merged = [];
  let k = 0;
  for (const direction of directions) {
    while (k < lists.length && lists[k].cp < direction.cp) merged.push(lists[k++]);
    merged.push(direction);
  }
  pieces.insertions = [...merged, ...lists.slice(k)];
}

/**
 * The numbers of the body's numbered paragraphs, as Word shows them (doc-lists.cjs listInsertions: a heading's number as
 * text before its own, a list item's mark), kept apart from the pieces (pieces.insertions, which textOfRange puts at
 * the paragraphs' starts in the body's text): each paragraph starts after the mark of the one before it in the text.
 */
function numberLists(pieces, streams, paragraphs, bodyLength) {
  if (!streams || !paragraphs.some((p) => p.ilfo > 0)) return;
  const found = wordLists(streams);
  if (!found) return;
  const insertions = listInsertions(found, paragraphMarks(pieces, paragraphs, bodyLength), bodyLength, formattedWordNumber);
  pieces.insertions = insertions;
}

/**
 * The body's paragraphs (markTableParagraphs) with the character position of each one's mark, in the order of the text:
 * each paragraph starts after the mark of the one before it.
 */
function paragraphMarks(pieces, paragraphs, bodyLength) {
  const index = byFilePosition(pieces);
  const cpOf = (end) => {
    let low = 0;
    let high = index.sorted.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (index.sorted[middle].endFilePos < end) low = middle + 1;
      else high = middle;
    }
    const piece = index.sorted[low];
    if (!piece || piece.startFilePos >= end) return null;
    return piece.startCp + (end - piece.startFilePos) / piece.bpc - 1;
  };
  const marks = [];
  for (const paragraph of paragraphs) {
    const cp = cpOf(paragraph.end);
    if (cp !== null && Number.isInteger(cp) && cp < bodyLength) marks.push({ cp, paragraph });
  }
  return marks.sort((a, b) => a.cp - b.cp);
}


/** `text`, the characters of [start, end), with the insertions (sorted by cp) at [start, end) in place; at `start` alone when end = start. */
function withInsertions(insertions, start, end, text) {
  let low = 0;
  let high = insertions.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (insertions[middle].cp < start) low = middle + 1;
    else high = middle;
  }
  let out = '';
  let from = 0;
  for (let i = low; i < insertions.length && (insertions[i].cp < end || (end === start && insertions[i].cp === start)); i++) {
    const at = insertions[i].cp - start;
    out += text.slice(from, at) + insertions[i].text;
    from = at;
  }
  return from === 0 && out === '' ? text : out + text.slice(from);
}

/**
 * The text of character positions [start, end) of the document's piece table (word-extractor's pieces, in order); with
 * `numbered`, the list numbers numberLists puts at paragraph starts in [start, end) (at `start` alone when end = start).
 */
function textOfRange(pieces, start, end, numbered = false) {
  if (numbered && pieces.insertions?.length) return withInsertions(pieces.insertions, start, end, textOfRange(pieces, start, end));
  // The first piece ending after start, found by halving: a document may hold many notes and many pieces.
  let low = 0;
  let high = pieces.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (pieces[middle].endCp <= start) low = middle + 1;
    else high = middle;
  }
  let text = '';
  for (let i = low; i < pieces.length && pieces[i].startCp < end; i++) {
    const piece = pieces[i];
    text += piece.text.slice(Math.max(start, piece.startCp) - piece.startCp, Math.min(end, piece.endCp) - piece.startCp);
  }
  return text;
}

/** A PLC of the table stream (MS-DOC 2.2.2): its n + 1 character positions and n data elements of `size` bytes. */
function plcAt(fib, table, at, size) {
  const fc = fib.readUInt32LE(at);
  const lcb = fib.readUInt32LE(at + 4);
  if (lcb === 0) return { positions: [], data: [] };
  const n = (lcb - 4) / (4 + size);
  if (!Number.isInteger(n) || n < 0 || fc + lcb > table.length) throw new Error('a note table lies outside its stream');
  const positions = Array.from({ length: n + 1 }, (_, i) => table.readUInt32LE(fc + 4 * i));
  const data = size === 2 ? Array.from({ length: n }, (_, i) => table.readInt16LE(fc + 4 * (n + 1) + 2 * i)) : [];
  return { positions, data };
}

/** Word's number formats (MS-DOC MSONFC) of the first values, by the .docx names formattedWordNumber reads. */
const NFC_FORMATS = ['decimal', 'upperRoman', 'lowerRoman', 'upperLetter', 'lowerLetter'];

/**
 * How the document numbers its automatic footnotes and endnotes, per kind: the number format (`format`), when the count
 * restarts (`restart`: 0 continuous, 1 each section, 2 each page) and the number it starts from (`start`). The DOP's
 * (DopBase: rncFtn 2 bits and nFtn 14 at offset 0x02, rncEdn and nEdn at 0x34, and the 16 bits at 0x36: epc 2 bits,
 * nfcFtnRef 4, nfcEdnRef 4); digits, continuous from 1 for another value or a DOP that cannot be read.
 */
function docNoteFormats(fib, table) {
  const kind = (format, restart, start) => ({ format: NFC_FORMATS[format] ?? 'decimal', restart: restart <= 2 ? restart : 0, start: start >= 1 ? start : 1 });
  const fc = fib.readUInt32LE(0x0192);
  const lcb = fib.readUInt32LE(0x0196);
  if (lcb < 0x38 || fc + lcb > table.length) return { footnote: kind(0, 0, 1), endnote: kind(0, 0, 1) };
  const footnotes = table.readUInt16LE(fc + 0x02);
  const endnotes = table.readUInt16LE(fc + 0x34);
  const bits = table.readUInt16LE(fc + 0x36);
  return { footnote: kind((bits >> 2) & 0x0f, footnotes & 3, footnotes >> 2), endnote: kind((bits >> 6) & 0x0f, endnotes & 3, endnotes >> 2) };
}

/** The section properties (MS-DOC 2.6.4) of automatic notes: sprm, the kind and the property it sets, its operand's size. */
const SECTION_NOTE_SPRMS = new Map([
  [0x303c, ['footnote', 'restart', 1]],
  [0x303e, ['endnote', 'restart', 1]],
  [0x503f, ['footnote', 'start', 2]],
  [0x5040, ['footnote', 'format', 2]],
  [0x5041, ['endnote', 'start', 2]],
  [0x5042, ['endnote', 'format', 2]],
]);

/**
 * The body's sections (PlcfSed in the table stream, MS-DOC 2.8.26: each section's first character position, and its SED
 * naming its SEPX in the WordDocument stream), each with its first character position, whether it starts a page
 * (sprmSBkc 0x3009 other than 0, continuous; a new page by default) and its notes' numbering: the DOP's (`documentNotes`,
 * docNoteFormats) with the section's own sprms over it (sprmSRncFtn/sprmSRncEdn, sprmSNFtn/sprmSNEdn,
 * sprmSNfcFtnRef/sprmSNfcEdnRef: Word 2002 and later, and Writer, write a section's note settings so). One section of the
 * DOP's numbering when the table cannot be read.
 */
function docSections(fib, table, documentNotes) {
  const whole = [{ start: 0, startsPage: true, notes: documentNotes }];
  const fc = fib.readUInt32LE(0x00ca);
  const lcb = fib.readUInt32LE(0x00ce);
  const n = (lcb - 4) / 16;
  if (lcb === 0 || !Number.isInteger(n) || n < 1 || fc + lcb > table.length) return whole;
  const sections = [];
  for (let i = 0; i < n; i++) {
    const start = table.readUInt32LE(fc + 4 * i);
    if (i > 0 && start <= sections[i - 1].start) return whole;
    const fcSepx = table.readUInt32LE(fc + 4 * (n + 1) + 12 * i + 2);
    const notes = { footnote: { ...documentNotes.footnote }, endnote: { ...documentNotes.endnote } };
    let startsPage = true;
    if (fcSepx !== 0xffffffff && fcSepx + 2 <= fib.length) {
      const cb = fib.readUInt16LE(fcSepx);
      const grpprl = fib.subarray(fcSepx + 2, Math.min(fib.length, fcSepx + 2 + cb));
      for (const { sprm, at } of sprmsOf(grpprl, 0)) {
        if (sprm === 0x3009 && at < grpprl.length) startsPage = grpprl[at] !== 0;
        const property = SECTION_NOTE_SPRMS.get(sprm);
        if (!property || at + property[2] > grpprl.length) continue;
        const value = property[2] === 1 ? grpprl[at] : grpprl.readUInt16LE(at);
        const [kind, name] = property;
        if (name === 'format') notes[kind].format = NFC_FORMATS[value] ?? 'decimal';
        else if (name === 'restart' && value <= 2) notes[kind].restart = value;
        else if (name === 'start' && value >= 1) notes[kind].start = value;
      }
    }
    sections.push({ start, startsPage, notes });
  }
  return sections;
}

/**
 * The character positions where a page starts in the body, as far as the document tells without laying it out (as the
 * .docx reading's eachPage): a page break (0x0C that is no section's end) and a paragraph that starts a page
 * (sprmPFPageBreakBefore); a section that starts a page is one too (docSections). A page that fills and flows on is not known.
 */
function docPageStarts(pieces, paragraphs, bodyLength, sections) {
  const starts = [];
  const sectionEnds = new Set(sections.slice(1).map((section) => section.start - 1));
  const body = textOfRange(pieces, 0, bodyLength);
  for (let at = body.indexOf('\x0c'); at >= 0; at = body.indexOf('\x0c', at + 1)) if (!sectionEnds.has(at)) starts.push(at + 1);
  const marks = paragraphMarks(pieces, paragraphs, bodyLength);
  for (let i = 0; i < marks.length; i++) if (marks[i].paragraph.pageBreak) starts.push(i === 0 ? 0 : marks[i - 1].cp + 1);
  return starts.sort((a, b) => a - b);
}

/**
 * Numbers a kind's automatic notes as Word does, asked for each reference in the order of the text: from the section's
 * start number, in its format, again from it at each section (restart 1) or at each page start the document records
 * (restart 2: docPageStarts, a section starting a page included). A custom mark is not asked for (Word does not count it).
 */
function docNoteCounter(kind, sections, pageStarts) {
  let section = 0;
  let page = 0;
  let count = sections[0].notes[kind].start - 1;
  return (at) => {
    while (section + 1 < sections.length && sections[section + 1].start <= at) {
      section++;
      const { restart, start } = sections[section].notes[kind];
      if (restart === 1 || (restart === 2 && sections[section].startsPage)) count = start - 1;
    }
    const { restart, start, format } = sections[section].notes[kind];
    while (page < pageStarts.length && pageStarts[page] <= at) {
      page++;
      if (restart === 2) count = start - 1;
    }
    return noteLabel(++count, format);
  };
}

/** The body (wordText) with each note put at its reference; null when it has no notes. */
function bodyWithNotes(pieces, boundaries, streams, paragraphs = []) {
  if (!streams) return null;
  const { fib, table } = streams;
  const text = boundaries.ccpText;
  // Where each story starts (its character positions follow one another): the body, the footnotes, the headers, the
  // comments, the endnotes.
  const storyStart = { footnote: text, endnote: text + boundaries.ccpFtn + (boundaries.ccpHdd || 0) + (boundaries.ccpAtn || 0) };
  const storyLength = { footnote: boundaries.ccpFtn || 0, endnote: boundaries.ccpEdn || 0 };
  const sections = docSections(fib, table, docNoteFormats(fib, table));
  const pageStarts = sections.some((section) => section.notes.footnote.restart === 2 || section.notes.endnote.restart === 2) ? docPageStarts(pieces, paragraphs, text, sections) : [];
  const references = [];
  /** Characters of note text placed: each character of the note stories at most once (see below). */
  let placed = 0;
  for (const { kind, ref, text: textTable } of NOTE_TABLES) {
    const refs = plcAt(fib, table, ref, 2);
    const texts = plcAt(fib, table, textTable, 0);
    const count = refs.data.length;
    if (count === 0) continue;
    if (texts.positions.length < count + 1) throw new Error('a note table has fewer texts than references');
    // As Word writes them, references follow one another through the body and each note's text follows the one before in
    // its story. Tables that say otherwise (references at one place or out of order, notes overlapping or past their story)
    // could put the same text at every reference: a few KB of .doc read as references × story length of text, which the
    // worker copies to the service's thread. They are not read so: the notes follow the body (the catch in
    // notesPlacedAtReferences), each once.
    for (let i = 0; i < count; i++) {
      if (i > 0 && refs.positions[i] <= refs.positions[i - 1]) throw new Error('note references out of order');
      if (texts.positions[i + 1] < texts.positions[i]) throw new Error("notes' texts out of order");
    }
    if (texts.positions[count] > storyLength[kind]) throw new Error("a note's text lies outside its story");
    const numbered = docNoteCounter(kind, sections, pageStarts);
    for (let i = 0; i < count; i++) {
      const at = refs.positions[i];
      if (at >= text) throw new Error('a note reference lies outside the body');
      const automatic = refs.data[i] !== 0;
      const raw = textOfRange(pieces, storyStart[kind] + texts.positions[i], storyStart[kind] + texts.positions[i + 1]);
      const mark = automatic ? numbered(at) : wordText(textOfRange(pieces, at, at + 1)).trim();
      // The note's text starts with its mark again (automatic, or the custom mark) and often a tab after it.
      let body = wordText(raw).replace(/\s+/g, ' ').trim();
      if (!automatic && mark && body.startsWith(mark)) body = body.slice(mark.length).trim();
      placed += body.length;
      references.push({ at, note: body ? ` [${mark ? `${mark}: ` : ''}${body}]` : '' });
    }
  }
  // The checks above keep each note's text within its own range of its story; this bound holds whatever clean() does.
  if (placed > storyLength.footnote + storyLength.endnote) throw new Error('the notes hold more text than their stories');
  if (references.length === 0) return null;
  references.sort((a, b) => a.at - b.at);
  // A note referenced in a heading is the paragraph after the heading, as the .docx reading puts it (block-collector.ts),
  // so the heading stays a title (and the cards' tag): its text goes after the heading's end mark, as a line of its own.
  const paragraphEnd = paragraphEnds(pieces, text);
  const events = [];
  const afterHeading = new Map();
  for (const { at, note } of references) {
    const end = paragraphEnd(at);
    if (end !== null && note && HEADING_END_CHARACTER.test(textOfRange(pieces, end, end + 1))) {
      afterHeading.set(end + 1, `${afterHeading.get(end + 1) ?? ''}${note}`);
      events.push({ at, text: '', skip: 1 });
    } else events.push({ at, text: note, skip: 1 });
  }
  for (const [at, notes] of afterHeading) events.push({ at, text: `${notes.trim()}\r`, skip: 0 });
  events.sort((a, b) => a.at - b.at || a.skip - b.skip);
  let body = '';
  let from = 0;
  for (const { at, text: inserted, skip } of events) {
    if (at < from) continue;
    // A numbered paragraph's number at a reference's place goes before the note.
    body += textOfRange(pieces, from, at, true) + (skip > 0 ? textOfRange(pieces, at, at, true) : '') + inserted;
    from = at + skip;
  }
  return wordText(body + textOfRange(pieces, from, text, true));
}

/** A heading's end mark (markTableParagraphs: DOC_HEADING_END + its level). */
const HEADING_END_CHARACTER = /^[\ue011-\ue019]$/;
/** The characters that end a paragraph in the body (a line break, 0x0B, does not: a heading may hold one). */
const PARAGRAPH_END = /[\r\x07\x0c\x0e\x10-\x12\ue011-\ue019]/;

/**
 * The character position of the paragraph end at or after a position of the body (below `limit`), or null: asked in
 * increasing order (the note references), each character is read once, in short steps past the last end found.
 */
function paragraphEnds(pieces, limit) {
  let endAt = -1;
  let scanned = 0;
  return (at) => {
    if (endAt >= at) return endAt;
    let position = Math.max(at, scanned);
    while (position < limit) {
      const chunk = textOfRange(pieces, position, Math.min(limit, position + 256));
      if (chunk.length === 0) break;
      const found = chunk.search(PARAGRAPH_END);
      if (found >= 0) {
        endAt = position + found;
        scanned = endAt + 1;
        return endAt;
      }
      position += chunk.length;
      scanned = position;
    }
    return null;
  };
}

export async function docText(bytes) {
  const { default: WordExtractor } = await import('word-extractor');
  notesPlacedAtReferences();
  const doc = await new WordExtractor().extract(bytes);
  // The body's text boxes are the document's text too (the .docx and .odt readers keep them); word-extractor gives them
  // apart from the body, without where they stand in it, so they follow it. The notes are at their references
  // (notesPlacedAtReferences), or else follow the body too. All read from the pieces by wordText, not by word-extractor's
  // getters (its clean() and filter()).
  // Without the mark characters, as every reading gives its text (the .docx reading's marks are made of them).
  const parts = typeof doc.cardsBodyWithNotes === 'string' ? [doc.cardsBodyWithNotes, doc.cardsTextBoxes] : [doc.cardsBody, doc.cardsTextBoxes, ...doc.cardsNotes];
  return parts.join('\n').replace(MARK_CHARACTERS, '');
}
