import { DepthLimitedParser } from '@cards/html-parsing';
import { escapeHtml } from '../../domain/card-splitter';
import type { DocumentBlock } from '../../domain/model';
import { hasVisibleText } from '@cards/card-rules';

const INLINE_TAGS: Record<string, string> = { strong: 'strong', b: 'strong', em: 'em', i: 'em', u: 'u' };

/** Gathers text into headings and paragraphs while a markup parser walks a document. */
class BlockCollector {
  readonly blocks: DocumentBlock[] = [];
  private current: DocumentBlock | null = null;

  private openLink = false;
  private open: string[] = [];

  start(kind: DocumentBlock['kind'], level?: number): void {
    this.end();
    this.current = { kind, text: '', links: [], html: '', ...(kind === 'heading' ? { level } : {}) };
  }

  private ensure(): DocumentBlock {
    if (!this.current) this.current = { kind: 'paragraph', text: '', links: [], html: '' };
    return this.current;
  }

  /** Opens an inline element (strong, em, u) in the block's HTML. */
  inline(tag: string): void {
    const name = INLINE_TAGS[tag];
    if (!name) return;
    this.ensure().html += `<${name}>`;
    this.open.push(name);
  }

  closeInline(tag: string): void {
    const name = INLINE_TAGS[tag];
    if (!name || !this.current) return;
    const at = this.open.lastIndexOf(name);
    if (at < 0) return;
    // Close in nesting order so the HTML stays well-formed.
    for (const t of this.open.splice(at).reverse()) this.current.html += `</${t}>`;
  }

  closeLink(): void {
    if (this.openLink && this.current) this.current.html += '</a>';
    this.openLink = false;
  }

  end(): void {
    this.closeLink();
    for (const t of this.open.splice(0).reverse()) if (this.current) this.current.html += `</${t}>`;
    const block = this.current;
    this.current = null;
    if (!block) return;
    block.text = block.text.replace(/\s+/g, ' ').trim();
    block.html = (block.html ?? '').replace(/\s+/g, ' ').trim();
    if (hasVisibleText(block.text)) this.blocks.push(block);
  }

  text(value: string): void {
    const block = this.ensure();
    block.text += value;
    block.html += escapeHtml(value);
  }

  link(href: string | undefined): void {
    if (!href || !/^https?:\/\//i.test(href.trim())) return;
    const block = this.ensure();
    block.links.push(href.trim());
    this.closeLink();
    block.html += `<a href="${escapeHtml(href.trim())}">`;
    this.openLink = true;
  }
}

const HTML_BLOCKS = new Set(['p', 'li', 'td', 'th', 'blockquote', 'pre', 'dd', 'dt', 'caption']);

/** Blocks from HTML such as mammoth's rendering of a .docx: h1-h6 are headings, other block elements paragraphs. */
export function blocksFromHtml(html: string): DocumentBlock[] {
  const collector = new BlockCollector();
  const parser = new DepthLimitedParser(
    {
      onopentag(name, attrs) {
        const heading = /^h([1-6])$/.exec(name);
        if (heading) collector.start('heading', Number(heading[1]));
        else if (HTML_BLOCKS.has(name)) collector.start('paragraph');
        else if (name === 'br') collector.text(' ');
        else if (name === 'a') collector.link(attrs.href);
        else collector.inline(name);
      },
      ontext(text) {
        collector.text(text);
      },
      onclosetag(name) {
        if (/^h[1-6]$/.test(name) || HTML_BLOCKS.has(name)) collector.end();
        else if (name === 'a') collector.closeLink();
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

/** Blocks from an OpenDocument content.xml: text:h (with its outline level) and text:p inside office:text. */
export function blocksFromOdtContent(xml: string): DocumentBlock[] {
  const reader = odtContentReader();
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

/** The reader behind blocksFromOdtContent, for callers that may stop at the first block (the upload's text check). */
export function odtContentReader(): IncrementalBlockReader {
  const collector = new BlockCollector();
  let inBody = 0;
  let skipDepth = 0;
  const parser = new DepthLimitedParser(
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
        else if (name === 'text:a') collector.closeLink();
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  return {
    blocks: collector.blocks,
    write: (chunk) => parser.write(chunk),
    end() {
      parser.end();
      collector.end();
    },
  };
}
