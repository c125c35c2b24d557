import type { PageTextExtractor } from '../../domain/ports';
import { DepthLimitedParser } from '@cards/html-parsing';

/** Elements whose content a reader never sees as text. */
const INVISIBLE = new Set(['script', 'style', 'noscript', 'template', 'svg', 'math', 'iframe', 'object', 'canvas']);

/**
 * Visible text of a page with htmlparser2: entities decoded, tags turned into word breaks, invisible elements dropped.
 * Runs on the service's event loop, so the parser's own nesting is bounded (see DepthLimitedParser).
 */
export class Htmlparser2PageText implements PageTextExtractor {
  textOf(html: string): string {
    const parts: string[] = [];
    let hidden = 0;
    const parser = new DepthLimitedParser(
      {
        onopentagname(name) {
          if (INVISIBLE.has(name)) hidden++;
          parts.push(' ');
        },
        onclosetag(name) {
          if (INVISIBLE.has(name) && hidden > 0) hidden--;
          parts.push(' ');
        },
        ontext(text) {
          if (hidden === 0) parts.push(text);
        },
      },
      { decodeEntities: true, lowerCaseTags: true },
    );
    parser.write(html);
    parser.end();
    return parts.join('').replace(/\s+/g, ' ').trim();
  }
}
