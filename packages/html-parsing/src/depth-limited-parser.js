'use strict';
// Plain CommonJS, typed by depth-limited-parser.d.ts: worker threads load it too, and Node 20 runs no TypeScript
// loader in a worker.
const { Parser } = require('htmlparser2');

/** Elements the parser itself keeps open at most (Blink's HTML parser also stops nesting at 512). */
const MAX_PARSER_DEPTH = 512;

/** Open element names, innermost last, with a count per name so membership is O(1). */
class OpenElements {
  /** @type {string[]} */
  #names = [];
  /** @type {Map<string, number>} */
  #counts = new Map();

  get size() {
    return this.#names.length;
  }

  /** @param {string} name */
  has(name) {
    return (this.#counts.get(name) ?? 0) > 0;
  }

  /** @param {string} name */
  push(name) {
    this.#names.push(name);
    this.#counts.set(name, (this.#counts.get(name) ?? 0) + 1);
  }

  clear() {
    this.#names.length = 0;
    this.#counts.clear();
  }

  pop() {
    const name = this.#names.pop();
    if (name !== undefined) this.#counts.set(name, (this.#counts.get(name) ?? 1) - 1);
    return name;
  }
}

/**
 * End tags that htmlparser2's Parser (9.1) acts on in HTML mode even when no such element is open: `</p>` and `</br>`
 * stand for an empty element, and the foreign-content ones switch how a self-closing tag is read.
 */
const STRAY_END_TAGS_WITH_EFFECT = new Set(['p', 'br', 'math', 'svg', 'mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml', 'foreignobject', 'desc', 'title']);

/** See depth-limited-parser.d.ts. */
class DepthLimitedParser extends Parser {
  /** Mirror of the parser's own stack, kept from the events it emits (every open is matched by a close, innermost first). */
  #stacked;
  /** Elements opened past `maxDepth`, which the parser never saw. */
  #beyond = new OpenElements();
  /** A start tag past `maxDepth` whose attributes are being read: `{ tag: { name, attribs } | null }`. */
  #pending;
  #source = '';
  #handler;
  #maxDepth;
  #html;
  #lowerCaseNames;
  #selfClosing;

  /**
   * @param {Partial<import('htmlparser2').Handler>} handler
   * @param {import('htmlparser2').ParserOptions} [options]
   * @param {number} [maxDepth]
   */
  constructor(handler, options = {}, maxDepth = MAX_PARSER_DEPTH) {
    const stacked = new OpenElements();
    /** @type {{ tag: { name: string, attribs: Record<string, string> } | null }} */
    const pending = { tag: null };
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
    this.#stacked = stacked;
    this.#pending = pending;
    this.#handler = handler;
    this.#maxDepth = maxDepth;
    this.#html = !options.xmlMode;
    this.#lowerCaseNames = options.lowerCaseTags ?? this.#html;
    this.#selfClosing = options.recognizeSelfClosing ?? Boolean(options.xmlMode);
  }

  /** @override @param {string} chunk */
  write(chunk) {
    this.#source += chunk;
    super.write(chunk);
  }

  /** @override */
  reset() {
    super.reset();
    this.#stacked.clear();
    this.#beyond.clear();
    this.#pending.tag = null;
    this.#source = '';
  }

  /** @override @param {number} start @param {number} endIndex */
  onopentagname(start, endIndex) {
    if (this.#stacked.size < this.#maxDepth) {
      super.onopentagname(start, endIndex);
      return;
    }
    const name = this.#nameAt(start, endIndex);
    this.#pending.tag = { name, attribs: {} };
    this.#handler.onopentagname?.(name);
  }

  /** @override @param {number} endIndex */
  onopentagend(endIndex) {
    this.#endPendingTag(false);
    super.onopentagend(endIndex);
  }

  /** @override @param {number} endIndex */
  onselfclosingtag(endIndex) {
    this.#endPendingTag(this.#selfClosing);
    super.onselfclosingtag(endIndex);
  }

  /** @override @param {number} start @param {number} endIndex */
  onclosetag(start, endIndex) {
    const name = this.#nameAt(start, endIndex);
    if (this.#beyond.has(name)) {
      this.#closeBeyond(name);
    } else if (this.#stacked.has(name)) {
      this.#closeBeyond(undefined);
      return super.onclosetag(start, endIndex);
    } else if (this.#html && STRAY_END_TAGS_WITH_EFFECT.has(name)) {
      return super.onclosetag(start, endIndex);
    }
    // Past the limit, or open nowhere (the parser would scan its whole stack for it, then ignore it).
    this.endIndex = endIndex;
    this.startIndex = endIndex + 1;
  }

  /** Public here (protected in Parser): whether htmlparser2 reads `name` as a void element. @override @param {string} name */
  isVoidElement(name) {
    return super.isVoidElement(name);
  }

  /** @override */
  onend() {
    this.#closeBeyond(undefined);
    super.onend();
  }

  /** @param {boolean} selfClosed */
  #endPendingTag(selfClosed) {
    const tag = this.#pending.tag;
    if (!tag) return;
    this.#pending.tag = null;
    this.#handler.onopentag?.(tag.name, tag.attribs, false);
    if (selfClosed || this.isVoidElement(tag.name)) this.#handler.onclosetag?.(tag.name, true);
    else this.#beyond.push(tag.name);
  }

  /**
   * Closes the elements past the depth limit down to `name` (all of them when undefined), innermost first.
   * @param {string | undefined} name
   */
  #closeBeyond(name) {
    while (this.#beyond.size > 0) {
      const element = /** @type {string} */ (this.#beyond.pop());
      this.#handler.onclosetag?.(element, element !== name);
      if (element === name) return;
    }
  }

  /** @param {number} start @param {number} endIndex */
  #nameAt(start, endIndex) {
    const name = this.#source.slice(start, endIndex);
    return this.#lowerCaseNames ? name.toLowerCase() : name;
  }
}

module.exports = { DepthLimitedParser, MAX_PARSER_DEPTH };
