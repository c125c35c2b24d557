import { DepthLimitedParser } from '@cards/html-parsing';
import { hasVisibleText } from '@cards/card-rules';
import { odtContentReader } from './block-collector';

// These checks run on the service's event loop as an upload is accepted, on parts an uploader controls: they parse
// linearly (no pattern that backtracks) and stop at the first text, so a long part is read only as far as needed.

const SLICE_CHARS = 64 * 1024;

interface TextScan {
  write(chunk: string): void;
  end(): void;
  found(): boolean;
}

function scan(markup: string, reader: TextScan): boolean {
  for (let at = 0; at < markup.length && !reader.found(); at += SLICE_CHARS) reader.write(markup.slice(at, at + SLICE_CHARS));
  if (!reader.found()) reader.end();
  return reader.found();
}

/**
 * Whether a .docx's word/document.xml holds text: the text of a Word document is in its text runs (<w:t>), and runs
 * of whitespace or invisible characters (zero-width, BOM), empty runs and markup do not count. Entities are decoded first
 * (&#160; is a space too).
 */
export function docxHasText(documentXml: string): boolean {
  let inRun = 0;
  let text = false;
  const parser = new DepthLimitedParser(
    {
      onopentag(name) {
        if (name === 'w:t') inRun++;
      },
      ontext(value) {
        if (inRun > 0 && hasVisibleText(value)) text = true;
      },
      onclosetag(name) {
        if (name === 'w:t' && inRun > 0) inRun--;
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  return scan(documentXml, { write: (chunk) => parser.write(chunk), end: () => parser.end(), found: () => text });
}

/** Whether an .odt's content.xml holds a heading or paragraph with text, read as the ingestion reads it. */
export function odtHasText(contentXml: string): boolean {
  const reader = odtContentReader();
  return scan(contentXml, { write: (chunk) => reader.write(chunk), end: () => reader.end(), found: () => reader.blocks.length > 0 });
}
