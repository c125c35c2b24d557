import { Parser } from 'htmlparser2';
import type { DocumentBlock } from '../../domain/model';

/** Gathers text into headings and paragraphs while a markup parser walks a document. */
class BlockCollector {
  readonly blocks: DocumentBlock[] = [];
  private current: DocumentBlock | null = null;

  start(kind: DocumentBlock['kind'], level?: number): void {
    this.end();
    this.current = { kind, text: '', links: [], ...(kind === 'heading' ? { level } : {}) };
  }

  end(): void {
    const block = this.current;
    this.current = null;
    if (!block) return;
    block.text = block.text.replace(/\s+/g, ' ').trim();
    if (block.text.length > 0) this.blocks.push(block);
  }

  text(value: string): void {
    if (!this.current) this.current = { kind: 'paragraph', text: '', links: [] };
    this.current.text += value;
  }

  link(href: string | undefined): void {
    if (!href || !/^https?:\/\//i.test(href.trim())) return;
    if (!this.current) this.current = { kind: 'paragraph', text: '', links: [] };
    this.current.links.push(href.trim());
  }
}

const HTML_BLOCKS = new Set(['p', 'li', 'td', 'th', 'blockquote', 'pre', 'dd', 'dt', 'caption']);

/** Blocks from HTML such as mammoth's rendering of a .docx: h1-h6 are headings, other block elements paragraphs. */
export function blocksFromHtml(html: string): DocumentBlock[] {
  const collector = new BlockCollector();
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        const heading = /^h([1-6])$/.exec(name);
        if (heading) collector.start('heading', Number(heading[1]));
        else if (HTML_BLOCKS.has(name)) collector.start('paragraph');
        else if (name === 'br') collector.text(' ');
        else if (name === 'a') collector.link(attrs.href);
      },
      ontext(text) {
        collector.text(text);
      },
      onclosetag(name) {
        if (/^h[1-6]$/.test(name) || HTML_BLOCKS.has(name)) collector.end();
        else if (name === 'td' || name === 'th') collector.text(' ');
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  collector.end();
  return collector.blocks;
}

/** Blocks from an OpenDocument content.xml: text:h (with its outline level) and text:p inside office:text. */
export function blocksFromOdtContent(xml: string): DocumentBlock[] {
  const collector = new BlockCollector();
  let inBody = 0;
  let skipDepth = 0;
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (name === 'office:text') inBody++;
        if (!inBody) return;
        if (skipDepth > 0 || name === 'office:annotation' || name === 'text:note' || name === 'text:tracked-changes') {
          skipDepth++;
          return;
        }
        if (name === 'text:h') collector.start('heading', Number(attrs['text:outline-level'] ?? '1') || 1);
        else if (name === 'text:p') collector.start('paragraph');
        else if (name === 'text:s') collector.text(' '.repeat(Math.min(100, Number(attrs['text:c'] ?? '1') || 1)));
        else if (name === 'text:tab' || name === 'text:line-break') collector.text(' ');
        else if (name === 'text:a') collector.link(attrs['xlink:href']);
      },
      ontext(text) {
        if (inBody && skipDepth === 0) collector.text(text);
      },
      onclosetag(name) {
        if (skipDepth > 0) {
          skipDepth--;
          return;
        }
        if (name === 'office:text') inBody--;
        if (name === 'text:h' || name === 'text:p') collector.end();
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  parser.write(xml);
  parser.end();
  collector.end();
  return collector.blocks;
}
