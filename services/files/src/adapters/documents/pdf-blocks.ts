import { getDocumentProxy } from 'unpdf';
import type { DocumentBlock } from '../../domain/model';

interface Line {
  text: string;
  y: number;
  size: number;
  links: string[];
}

interface TextItemLike {
  str?: string;
  transform?: number[];
  height?: number;
  hasEOL?: boolean;
}

interface LinkAnnotationLike {
  subtype?: string;
  url?: string;
  rect?: number[];
}

/**
 * Paragraphs of a PDF via unpdf (pdf.js): text items are joined into lines, and a vertical gap clearly
 * larger than the page's usual line pitch starts a new paragraph (PDFs carry no paragraph markup).
 * Link annotations are attached to the line they sit on. PDFs are treated as heading-less.
 */
export async function blocksFromPdf(bytes: Buffer, maxPages = 2000): Promise<DocumentBlock[]> {
  const pdf = await getDocumentProxy(new Uint8Array(bytes), { isEvalSupported: false, stopAtErrors: true });
  const blocks: DocumentBlock[] = [];
  try {
    const pages = Math.min(pdf.numPages, maxPages);
    for (let p = 1; p <= pages; p++) {
      const page = await pdf.getPage(p);
      const content = await page.getTextContent();
      const lines = linesOf(content.items as TextItemLike[]);
      const annotations = (await page.getAnnotations()) as LinkAnnotationLike[];
      for (const a of annotations) {
        if (a.subtype !== 'Link' || !a.url || !a.rect || a.rect.length < 4) continue;
        const [, y1, , y2] = a.rect as [number, number, number, number];
        const line = lines.find((l) => l.y >= Math.min(y1, y2) - 3 && l.y <= Math.max(y1, y2) + 3);
        line?.links.push(a.url);
      }
      blocks.push(...paragraphsOf(lines));
      page.cleanup();
    }
  } finally {
    await pdf.destroy();
  }
  return blocks;
}

function linesOf(items: TextItemLike[]): Line[] {
  const lines: Line[] = [];
  let current: Line | null = null;
  for (const item of items) {
    const y = item.transform?.[5] ?? 0;
    const size = Math.abs(item.transform?.[3] ?? item.height ?? 0) || 10;
    const str = item.str ?? '';
    if (current && Math.abs(current.y - y) > size * 0.5 && str.trim()) {
      lines.push(current);
      current = null;
    }
    if (str.length > 0) {
      if (!current) current = { text: '', y, size, links: [] };
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

function paragraphsOf(lines: Line[]): DocumentBlock[] {
  const pitches = lines
    .slice(1)
    .map((l, i) => lines[i]!.y - l.y)
    .filter((d) => d > 0)
    .sort((a, b) => a - b);
  const typical = pitches[Math.floor(pitches.length / 2)] ?? 0;
  const blocks: DocumentBlock[] = [];
  let block: DocumentBlock | null = null;
  let previous: Line | null = null;
  for (const line of lines) {
    const gap = previous ? previous.y - line.y : 0;
    const newParagraph = !block || gap < 0 || gap > Math.max(typical * 1.3, line.size * 1.45);
    if (newParagraph) {
      if (block) blocks.push(block);
      block = { kind: 'paragraph', text: '', links: [] };
    }
    const b = block!;
    b.text = joinLine(b.text, line.text);
    b.links.push(...line.links);
    previous = line;
  }
  if (block) blocks.push(block);
  return blocks.map((b) => ({ ...b, text: b.text.replace(/\s+/g, ' ').trim() })).filter((b) => b.text.length > 0);
}

/** Joins a wrapped line, undoing end-of-line hyphenation of a word. */
function joinLine(text: string, next: string): string {
  if (!text) return next;
  if (/[A-Za-z]-$/.test(text) && /^[a-z]/.test(next)) return text.slice(0, -1) + next;
  return `${text} ${next}`;
}
