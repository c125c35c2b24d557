import { Parser, type Handler, type ParserOptions } from 'htmlparser2';

/** Elements the parser itself keeps open at most (Blink's HTML parser also stops nesting at 512). */
export const MAX_PARSER_DEPTH = 512;

/** Open element names, innermost last, with a count per name so membership is O(1). */
class OpenElements {
  private readonly names: string[] = [];
  private readonly counts = new Map<string, number>();

  get size(): number {
    return this.names.length;
  }

  has(name: string): boolean {
    return (this.counts.get(name) ?? 0) > 0;
  }

  push(name: string): void {
    this.names.push(name);
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
  }

  clear(): void {
    this.names.length = 0;
    this.counts.clear();
  }

  pop(): string | undefined {
    const name = this.names.pop();
    if (name !== undefined) this.counts.set(name, (this.counts.get(name) ?? 1) - 1);
    return name;
  }
}

/**
 * End tags that htmlparser2's Parser (9.1) acts on in HTML mode even when no such element is open: `</p>` and `</br>`
 * stand for an empty element, and the foreign-content ones switch how a self-closing tag is read.
 */
const STRAY_END_TAGS_WITH_EFFECT = new Set(['p', 'br', 'math', 'svg', 'mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml', 'foreignobject', 'desc', 'title']);

interface PendingTag {
  name: string;
  attribs: Record<string, string>;
}

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
export class DepthLimitedParser extends Parser {
  /** Mirror of the parser's own stack, kept from the events it emits (every open is matched by a close, innermost first). */
  private readonly stacked: OpenElements;
  /** Elements opened past `maxDepth`, which the parser never saw. */
  private readonly beyond = new OpenElements();
  /** A start tag past `maxDepth` whose attributes are being read. */
  private readonly pending: { tag: PendingTag | null };
  private source = '';
  private readonly html: boolean;
  private readonly lowerCaseNames: boolean;
  private readonly selfClosing: boolean;

  constructor(
    private readonly handler: Partial<Handler>,
    options: ParserOptions = {},
    private readonly maxDepth = MAX_PARSER_DEPTH,
  ) {
    const stacked = new OpenElements();
    const pending: { tag: PendingTag | null } = { tag: null };
    super(
      {
        ...handler,
        onopentagname(name) {
          stacked.push(name);
          handler.onopentagname?.(name);
        },
        onclosetag(name, isImplied) {
          stacked.pop();
          handler.onclosetag?.(name, isImplied);
        },
        onattribute(name, value, quote) {
          const tag = pending.tag;
          if (tag && !Object.hasOwn(tag.attribs, name)) tag.attribs[name] = value;
          handler.onattribute?.(name, value, quote);
        },
      },
      options,
    );
    this.stacked = stacked;
    this.pending = pending;
    this.html = !options.xmlMode;
    this.lowerCaseNames = options.lowerCaseTags ?? this.html;
    this.selfClosing = options.recognizeSelfClosing ?? Boolean(options.xmlMode);
  }

  override write(chunk: string): void {
    this.source += chunk;
    super.write(chunk);
  }

  override reset(): void {
    super.reset();
    this.stacked.clear();
    this.beyond.clear();
    this.pending.tag = null;
    this.source = '';
  }

  override onopentagname(start: number, endIndex: number): void {
    if (this.stacked.size < this.maxDepth) {
      super.onopentagname(start, endIndex);
      return;
    }
    const name = this.nameAt(start, endIndex);
    this.pending.tag = { name, attribs: {} };
    this.handler.onopentagname?.(name);
  }

  override onopentagend(endIndex: number): void {
    this.endPendingTag(false);
    super.onopentagend(endIndex);
  }

  override onselfclosingtag(endIndex: number): void {
    this.endPendingTag(this.selfClosing);
    super.onselfclosingtag(endIndex);
  }

  override onclosetag(start: number, endIndex: number): void {
    const name = this.nameAt(start, endIndex);
    if (this.beyond.has(name)) {
      this.closeBeyond(name);
    } else if (this.stacked.has(name)) {
      this.closeBeyond(undefined);
      return super.onclosetag(start, endIndex);
    } else if (this.html && STRAY_END_TAGS_WITH_EFFECT.has(name)) {
      return super.onclosetag(start, endIndex);
    }
    // Past the limit, or open nowhere (the parser would scan its whole stack for it, then ignore it).
    this.endIndex = endIndex;
    this.startIndex = endIndex + 1;
  }

  /** Whether htmlparser2 reads `name` as a void element (no content, no end tag; always closed at once). */
  override isVoidElement(name: string): boolean {
    return super.isVoidElement(name);
  }

  override onend(): void {
    this.closeBeyond(undefined);
    super.onend();
  }

  private endPendingTag(selfClosed: boolean): void {
    const tag = this.pending.tag;
    if (!tag) return;
    this.pending.tag = null;
    this.handler.onopentag?.(tag.name, tag.attribs, false);
    if (selfClosed || this.isVoidElement(tag.name)) this.handler.onclosetag?.(tag.name, true);
    else this.beyond.push(tag.name);
  }

  /** Closes the elements past the depth limit down to `name` (all of them when undefined), innermost first. */
  private closeBeyond(name: string | undefined): void {
    while (this.beyond.size > 0) {
      const element = this.beyond.pop()!;
      this.handler.onclosetag?.(element, element !== name);
      if (element === name) return;
    }
  }

  private nameAt(start: number, endIndex: number): string {
    const name = this.source.slice(start, endIndex);
    return this.lowerCaseNames ? name.toLowerCase() : name;
  }
}
