import { DepthLimitedParser } from '@cards/html-parsing';
import { hasVisibleText } from '@cards/card-rules';
import { textPresenceOf, type TextPresence } from '../../domain/card-splitter';
import { odtContentReader } from './block-collector';

// These checks run on the service's event loop as an upload is accepted, on parts an uploader controls: they parse
// linearly (no pattern that backtracks) and stop at the first body text, so a long part is read only as far as needed.

const SLICE_CHARS = 64 * 1024;

interface TextScan {
  write(chunk: string): void;
  end(): void;
  done(): boolean;
}

function scan(markup: string, reader: TextScan): void {
  for (let at = 0; at < markup.length && !reader.done(); at += SLICE_CHARS) reader.write(markup.slice(at, at + SLICE_CHARS));
  if (!reader.done()) reader.end();
}

/**
 * What a .docx's word/document.xml shows at a glance: 'none' when no text run (<w:t>) holds a visible character (entities
 * decoded: &#160; is a space too) and no footnote or endnote is referenced, 'body' when one sits plainly in a paragraph
 * that mammoth cannot read as a heading, 'unsure' otherwise (text only in heading-styled paragraphs, text boxes, tracked
 * changes and the like, or in notes: their text lives in another part, and the ingestion puts it at the reference), where
 * only mammoth's own reading can tell whether anything but headings is there.
 */
export type DocxTextScan = 'none' | 'body' | 'unsure';

/** Elements between the body and a text run that mammoth reads as the ordinary content of a paragraph or table cell. */
const PLAIN_CONTAINERS = new Set(['w:document', 'w:body', 'w:p', 'w:r', 'w:t', 'w:hyperlink', 'w:ins', 'w:smartTag', 'w:fldSimple', 'w:customXml', 'w:sdt', 'w:sdtContent', 'w:tbl', 'w:tr', 'w:tc']);

/** styles.xml larger than this is not read on the event loop: every styled paragraph then counts as a possible heading. */
const MAX_STYLES_CHARS = 2 * 1024 * 1024;

/**
 * Names of paragraph styles whose text may not be body text for the ingestion: headings (the "Title" style too:
 * word-documents.mjs TITLE_STYLES), and the generated tables it leaves out (a table of contents or of figures, an index:
 * word-documents.mjs GENERATED_TABLE_STYLE).
 */
const NOT_BODY_STYLE_NAME = /^(heading|title$|toc |contents |table of figures|index )/i;
/** Ids of such styles as Word writes them (Heading1, Title, TOC1, TOCHeading, TableofFigures, Index1), read without their names. */
const NOT_BODY_STYLE_ID = /^(heading|title$|toc|tableoffigures|index\d)/i;

/**
 * Ids of the paragraph styles named as NOT_BODY_STYLE_NAME says, in any case: mammoth makes h1-h6 of styles named
 * "heading 1" to "heading 6" (and "Heading"), and of the ids Heading1-Heading6; the ingestion leaves generated tables
 * out. Null when the styles are too large to read.
 */
function headingStyleIds(stylesXml: string | undefined): Set<string> | null {
  const ids = new Set<string>();
  if (stylesXml === undefined) return ids;
  if (stylesXml.length > MAX_STYLES_CHARS) return null;
  let styleId: string | null = null;
  const parser = new DepthLimitedParser(
    {
      onopentag(name, attrs) {
        if (name === 'w:style') styleId = attrs['w:type'] === 'paragraph' ? (attrs['w:styleId'] ?? null) : null;
        else if (name === 'w:name' && styleId !== null && NOT_BODY_STYLE_NAME.test(attrs['w:val'] ?? '')) ids.add(styleId);
      },
      onclosetag(name) {
        if (name === 'w:style') styleId = null;
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  parser.write(stylesXml);
  parser.end();
  return ids;
}

export function docxTextScan(documentXml: string, stylesXml?: string): DocxTextScan {
  const headingIds = headingStyleIds(stylesXml);
  const mayBeHeading = (styleId: string) => headingIds === null || NOT_BODY_STYLE_ID.test(styleId) || headingIds.has(styleId);
  // Open elements; a frame is unsure when it is not a plain container, or is a paragraph or row mammoth may not read as
  // plain body text (a heading style, a deleted paragraph mark or row). unsureOpen counts the unsure open frames.
  const frames: { unsure: boolean }[] = [];
  const paragraphs: number[] = [];
  const rows: number[] = [];
  let unsureOpen = 0;
  let propertiesOpen = 0;
  let inRun = 0;
  let text = false;
  let body = false;
  const markUnsure = (at: number | undefined) => {
    if (at === undefined || frames[at]!.unsure) return;
    frames[at]!.unsure = true;
    unsureOpen++;
  };
  const parser = new DepthLimitedParser(
    {
      onopentag(name, attrs) {
        const unsure = !PLAIN_CONTAINERS.has(name);
        frames.push({ unsure });
        if (unsure) unsureOpen++;
        if (name === 'w:p') paragraphs.push(frames.length - 1);
        else if (name === 'w:tr') rows.push(frames.length - 1);
        else if (name === 'w:t') inRun++;
        else if (name === 'w:pPr' || name === 'w:trPr') propertiesOpen++;
        else if (name === 'w:footnoteReference' || name === 'w:endnoteReference') text = true;
        else if (name === 'w:pStyle' && mayBeHeading(attrs['w:val'] ?? '')) markUnsure(paragraphs.at(-1));
        else if ((name === 'w:del' || name === 'w:moveFrom') && propertiesOpen > 0) {
          markUnsure(paragraphs.at(-1));
          markUnsure(rows.at(-1));
        }
      },
      ontext(value) {
        if (inRun === 0 || !hasVisibleText(value)) return;
        text = true;
        if (unsureOpen === 0 && paragraphs.length === 1) body = true;
      },
      onclosetag(name) {
        const frame = frames.pop();
        if (frame?.unsure) unsureOpen--;
        if (name === 'w:p') paragraphs.pop();
        else if (name === 'w:tr') rows.pop();
        else if (name === 'w:t' && inRun > 0) inRun--;
        else if ((name === 'w:pPr' || name === 'w:trPr') && propertiesOpen > 0) propertiesOpen--;
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  scan(documentXml, { write: (chunk) => parser.write(chunk), end: () => parser.end(), done: () => body });
  return body ? 'body' : text ? 'unsure' : 'none';
}

/** Whether an .odt's content.xml holds body text, only headings, or nothing, read as the ingestion reads it. */
export function odtTextPresence(contentXml: string): TextPresence {
  const reader = odtContentReader();
  let presence: TextPresence = 'none';
  let read = 0;
  const done = () => {
    const more = textPresenceOf(reader.blocks.slice(read));
    read = reader.blocks.length;
    if (more !== 'none' && presence !== 'body') presence = more;
    return presence === 'body';
  };
  scan(contentXml, { write: (chunk) => reader.write(chunk), end: () => reader.end(), done });
  done();
  return presence;
}
