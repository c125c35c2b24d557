import { Parser, type Handler, type ParserOptions } from 'htmlparser2';

/** Elements the parser itself keeps open at most (Blink's HTML parser also stops nesting at 512). */
export declare const MAX_PARSER_DEPTH = 512;

/**
 * htmlparser2's Parser (9.x) keeps its open elements in an array that it unshifts and shifts at the front and scans
 * for every end tag, so each tag costs time in proportion to its nesting depth: 200,000 nested elements took minutes.
 * This Parser hands it at most `maxDepth` open elements. A start tag met at that depth is kept here instead, at O(1)
 * per tag: the handler still hears its open, attributes, text and close, so no text is lost; its end tag closes it and
 * everything opened inside it, and an end tag of an element further out closes all of those first (as an implied
 * close). Documents nested less deeply produce exactly the events of htmlparser2's Parser.
 *
 * The handler must be a plain object (its callbacks are copied).
 */
export declare class DepthLimitedParser extends Parser {
  constructor(handler: Partial<Handler>, options?: ParserOptions, maxDepth?: number);
  /** Whether htmlparser2 reads `name` as a void element (no content, no end tag; always closed at once). */
  isVoidElement(name: string): boolean;
}
