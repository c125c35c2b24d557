/**
 * The card text editor's engine: ProseMirror with a schema holding exactly what the cards service's sanitizer keeps
 * (services/cards/src/domain/rules.ts CARD_SANITIZE_OPTIONS: p, br, b/strong, i/em, u, mark, ul, ol[start], li,
 * blockquote, h1-h6, a[href] with http(s) links; span is kept there too, but without attributes it means nothing, so
 * it is read as its text). Whatever comes in, the card's stored HTML or a paste from a word processor or a web page,
 * is read through this schema: other elements become their text, styles and attributes are dropped, and a bold or
 * italic written as a style (as Google Docs and Word write them) becomes <strong> or <em>. The server cleans again.
 *
 * Loaded on demand (dynamic import) by the card form only, so the rest of the app does not carry it.
 */
import { baseKeymap, lift, setBlockType, toggleMark, wrapIn } from 'prosemirror-commands';
import { history, redo, undo } from 'prosemirror-history';
import { keymap } from 'prosemirror-keymap';
import { DOMParser as PMDOMParser, DOMSerializer, Schema, type Attrs, type MarkType, type Node as PMNode, type NodeType } from 'prosemirror-model';
import { liftListItem, sinkListItem, splitListItem, wrapInList } from 'prosemirror-schema-list';
import { EditorState, TextSelection, type Command, type Transaction } from 'prosemirror-state';
import { EditorView } from 'prosemirror-view';
import 'prosemirror-view/style/prosemirror.css';

/** An href the server keeps: http(s), or relative but not protocol-relative (sanitize-html's allowedSchemes). */
export function keptHref(href: string | null): string | null {
  if (href === null) return null;
  const value = href.trim();
  if (value === '' || value.startsWith('//')) return null;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value);
  if (scheme && !/^https?$/i.test(scheme[1]!)) return null;
  return value;
}

/**
 * Pasted HTML (from a word processor or a web page) carries style attributes and event handlers. The page's CSP
 * (style-src 'self', no inline script) refuses them in any document the page parses, inert ones too, and logs a
 * refusal for each; so before parsing, they are renamed to data-pasted-* attributes, which nothing applies or runs,
 * and style sheets (<style>, <link>) are left out.
 * The renamed style is still read for bold, italic and underline (Google Docs and Word write them as styles).
 */
export function withInertAttributes(html: string): string {
  return html
    .replace(/<style\b[^>]*>[\s\S]*?<\/style\s*>/gi, '')
    .replace(/<link\b[^>]*>/gi, '').replace(/<[a-z][^>]*>/gi, (tag) => tag.replace(/(\s)(style|on[a-z]+)(?=\s*=)/gi, (_, space: string, name: string) => `${space}data-pasted-${name.toLowerCase()}`));
}

/** One CSS property of an element's (renamed) style attribute, lower-cased; '' when absent. */
function styleOf(dom: HTMLElement, property: string): string {
  const style = dom.getAttribute('data-pasted-style') ?? '';
  for (const declaration of style.split(';')) {
    const colon = declaration.indexOf(':');
    if (colon > 0 && declaration.slice(0, colon).trim().toLowerCase() === property) return declaration.slice(colon + 1).trim().toLowerCase();
  }
  return '';
}

const BOLD_WEIGHT = /^(bold(er)?|[6-9]\d\d)$/;
/** A styled element of a paste that means a mark: matched without consuming it, so one span can be bold and italic. */
const styled = (test: (dom: HTMLElement) => boolean) => ({ tag: '[data-pasted-style]', consuming: false, getAttrs: (dom: HTMLElement) => test(dom) && null });

export const cardSchema = new Schema({
  nodes: {
    doc: { content: 'block+' },
    paragraph: { content: 'inline*', group: 'block', parseDOM: [{ tag: 'p' }], toDOM: () => ['p', 0] },
    heading: {
      attrs: { level: { default: 2 } },
      content: 'inline*',
      group: 'block',
      defining: true,
      parseDOM: [1, 2, 3, 4, 5, 6].map((level) => ({ tag: `h${level}`, attrs: { level } })),
      toDOM: (node) => [`h${node.attrs.level as number}`, 0],
    },
    blockquote: { content: 'block+', group: 'block', defining: true, parseDOM: [{ tag: 'blockquote' }], toDOM: () => ['blockquote', 0] },
    bullet_list: { content: 'list_item+', group: 'block', parseDOM: [{ tag: 'ul' }], toDOM: () => ['ul', 0] },
    ordered_list: {
      attrs: { order: { default: 1 } },
      content: 'list_item+',
      group: 'block',
      parseDOM: [{ tag: 'ol', getAttrs: (dom) => ({ order: /^\d{1,9}$/.test(dom.getAttribute('start') ?? '') ? Number(dom.getAttribute('start')) : 1 }) }],
      toDOM: (node) => (node.attrs.order === 1 ? ['ol', 0] : ['ol', { start: String(node.attrs.order) }, 0]),
    },
    list_item: { content: 'paragraph block*', defining: true, parseDOM: [{ tag: 'li' }], toDOM: () => ['li', 0] },
    text: { group: 'inline' },
    hard_break: { inline: true, group: 'inline', selectable: false, parseDOM: [{ tag: 'br' }], toDOM: () => ['br'] },
  },
  marks: {
    link: {
      attrs: { href: {} },
      inclusive: false,
      parseDOM: [{ tag: 'a[href]', getAttrs: (dom) => (keptHref(dom.getAttribute('href')) === null ? false : { href: keptHref(dom.getAttribute('href')) }) }],
      toDOM: (mark) => ['a', { href: mark.attrs.href as string }, 0],
    },
    strong: {
      parseDOM: [
        { tag: 'strong' },
        // Google Docs wraps a whole paste in <b style="font-weight:normal">.
        { tag: 'b', getAttrs: (dom) => styleOf(dom, 'font-weight') !== 'normal' && null },
        styled((dom) => BOLD_WEIGHT.test(styleOf(dom, 'font-weight'))),
      ],
      toDOM: () => ['strong', 0],
    },
    em: { parseDOM: [{ tag: 'em' }, { tag: 'i' }, styled((dom) => styleOf(dom, 'font-style') === 'italic')], toDOM: () => ['em', 0] },
    underline: { parseDOM: [{ tag: 'u' }, styled((dom) => /underline/.test(styleOf(dom, 'text-decoration') || styleOf(dom, 'text-decoration-line')))], toDOM: () => ['u', 0] },
    mark: { parseDOM: [{ tag: 'mark' }], toDOM: () => ['mark', 0] },
  },
});

const { nodes, marks } = cardSchema;

/** Card HTML (the stored card's, or typed in the HTML view) as an editor document, through the schema. */
export function documentOfHtml(html: string): PMNode {
  // An inert document: nothing in the HTML runs or loads.
  const body = new DOMParser().parseFromString(withInertAttributes(html), 'text/html').body;
  return PMDOMParser.fromSchema(cardSchema).parse(body);
}

/** The document as card HTML: only allow-listed elements; '' when it holds no text. */
export function htmlOfDocument(doc: PMNode): string {
  if (doc.textContent.trim() === '' && doc.childCount <= 1) return '';
  const holder = document.createElement('div');
  holder.appendChild(DOMSerializer.fromSchema(cardSchema).serializeFragment(doc.content));
  return holder.innerHTML;
}

/** The paste of HTML, cleaned as documentOfHtml cleans: what the editor would insert. For tests and the HTML view. */
export function cleanHtml(html: string): string {
  return htmlOfDocument(documentOfHtml(html));
}

export type BlockKind = 'paragraph' | 'h1' | 'h2' | 'h3' | 'h4' | 'h5' | 'h6' | 'mixed';

/** What the toolbar shows as pressed at the selection. */
export interface FormatState {
  strong: boolean;
  em: boolean;
  underline: boolean;
  mark: boolean;
  link: string | null;
  bulletList: boolean;
  orderedList: boolean;
  blockquote: boolean;
  block: BlockKind;
  canUndo: boolean;
  canRedo: boolean;
}

function markActive(state: EditorState, type: MarkType): boolean {
  const { from, $from, to, empty } = state.selection;
  if (empty) return Boolean(type.isInSet(state.storedMarks ?? $from.marks()));
  return state.doc.rangeHasMark(from, to, type);
}

function insideNode(state: EditorState, type: NodeType): boolean {
  const { $from } = state.selection;
  for (let d = $from.depth; d > 0; d--) if ($from.node(d).type === type) return true;
  return false;
}

/** The innermost list around the selection. */
function innermostList(state: EditorState): NodeType | null {
  const { $from } = state.selection;
  for (let d = $from.depth; d > 0; d--) {
    const type = $from.node(d).type;
    if (type === nodes.bullet_list || type === nodes.ordered_list) return type;
  }
  return null;
}

function linkAt(state: EditorState): string | null {
  const { from, to } = linkAround(state) ?? state.selection;
  let href: string | null = null;
  state.doc.nodesBetween(from, to, (node) => {
    const mark = marks.link.isInSet(node.marks);
    if (mark && href === null) href = mark.attrs.href as string;
  });
  return href;
}

export function formatState(state: EditorState): FormatState {
  const { $from, $to } = state.selection;
  let block: BlockKind = 'paragraph';
  const parent = $from.parent;
  if (parent !== $to.parent) block = 'mixed';
  else if (parent.type === nodes.heading) block = `h${parent.attrs.level as number}` as BlockKind;
  const list = innermostList(state);
  return {
    strong: markActive(state, marks.strong),
    em: markActive(state, marks.em),
    underline: markActive(state, marks.underline),
    mark: markActive(state, marks.mark),
    link: linkAt(state),
    bulletList: list === nodes.bullet_list,
    orderedList: list === nodes.ordered_list,
    blockquote: insideNode(state, nodes.blockquote),
    block,
    canUndo: undo(state),
    canRedo: redo(state),
  };
}

/** A list button: wraps the selection in that list, turns the list around it into that kind, or lifts it out. */
function toggleList(type: NodeType): Command {
  return (state, dispatch) => {
    const current = innermostList(state);
    if (current === type) return liftListItem(nodes.list_item)(state, dispatch);
    if (current) {
      const { $from } = state.selection;
      for (let d = $from.depth; d > 0; d--) {
        if ($from.node(d).type === current) {
          if (dispatch) dispatch(state.tr.setNodeMarkup($from.before(d), type, type === nodes.ordered_list ? { order: 1 } : null));
          return true;
        }
      }
    }
    return wrapInList(type)(state, dispatch);
  };
}

function toggleBlockquote(): Command {
  return (state, dispatch) => (insideNode(state, nodes.blockquote) ? lift(state, dispatch) : wrapIn(nodes.blockquote)(state, dispatch));
}

/** Sets the selection's blocks to a paragraph or a heading of the level. */
export function setBlock(kind: Exclude<BlockKind, 'mixed'>): Command {
  return kind === 'paragraph' ? setBlockType(nodes.paragraph) : setBlockType(nodes.heading, { level: Number(kind.slice(1)) } as Attrs);
}

/** The extent of the link at an empty selection (its neighbouring text nodes with the same link mark), or null. */
function linkAround(state: EditorState): { from: number; to: number } | null {
  const { $from, empty } = state.selection;
  if (!empty) return null;
  const start = $from.start();
  let run: { from: number; to: number; href: unknown } | null = null;
  let found: { from: number; to: number } | null = null;
  $from.parent.forEach((child, offset) => {
    const childFrom = start + offset;
    const childTo = childFrom + child.nodeSize;
    const mark = marks.link.isInSet(child.marks);
    if (!mark) run = null;
    else if (run && run.href === mark.attrs.href && run.to === childFrom) run.to = childTo;
    else run = { from: childFrom, to: childTo, href: mark.attrs.href };
    if (run && run.from <= $from.pos && run.to >= $from.pos && (run.from < $from.pos || run.to > $from.pos)) found = { from: run.from, to: run.to };
  });
  return found;
}

/** Links the selection (or the link the cursor is in) to href; with no selection, inserts href as linked text. */
export function setLink(href: string): Command {
  return (state, dispatch) => {
    const { from, to } = linkAround(state) ?? state.selection;
    if (!dispatch) return true;
    const mark = marks.link.create({ href });
    if (from === to) {
      const tr = state.tr.insert(from, cardSchema.text(href, [mark]));
      dispatch(tr.setSelection(TextSelection.create(tr.doc, from + href.length)).removeStoredMark(marks.link).scrollIntoView());
      return true;
    }
    dispatch(state.tr.removeMark(from, to, marks.link).addMark(from, to, mark).scrollIntoView());
    return true;
  };
}

/** Removes links from the selection, or the whole link the cursor is in. */
export const removeLink: Command = (state, dispatch) => {
  const { from, to } = linkAround(state) ?? state.selection;
  if (from === to) return false;
  if (dispatch) dispatch(state.tr.removeMark(from, to, marks.link));
  return true;
};

export const commands = {
  strong: toggleMark(marks.strong),
  em: toggleMark(marks.em),
  underline: toggleMark(marks.underline),
  mark: toggleMark(marks.mark),
  bulletList: toggleList(nodes.bullet_list),
  orderedList: toggleList(nodes.ordered_list),
  blockquote: toggleBlockquote(),
  undo,
  redo,
};

export interface CardEditorOptions {
  /** The contenteditable element's attributes (id, aria-labelledby, aria-describedby...). */
  attributes: Record<string, string>;
  /** Called with the card HTML after each change of the document, and with the state after every transaction. */
  onChange(html: string): void;
  onState(state: FormatState): void;
  /** Mod-K: the page asks for a link address. */
  onLinkRequest(): void;
}

/** A card editor in `place`, holding `html` read through the schema. Tab still moves focus out of it. */
export function createCardEditor(place: HTMLElement, html: string, options: CardEditorOptions): EditorView {
  const hardBreak: Command = (state, dispatch) => {
    if (dispatch) dispatch(state.tr.replaceSelectionWith(nodes.hard_break.create()).scrollIntoView());
    return true;
  };
  const state = EditorState.create({
    doc: documentOfHtml(html),
    plugins: [
      history(),
      keymap({
        'Mod-z': undo,
        'Shift-Mod-z': redo,
        'Mod-y': redo,
        'Mod-b': commands.strong,
        'Mod-i': commands.em,
        'Mod-u': commands.underline,
        'Mod-Shift-h': commands.mark,
        'Mod-Shift-8': commands.bulletList,
        'Mod-Shift-7': commands.orderedList,
        'Mod-Shift-9': commands.blockquote,
        'Mod-Alt-0': setBlock('paragraph'),
        'Mod-Alt-2': setBlock('h2'),
        'Mod-Alt-3': setBlock('h3'),
        'Mod-Alt-4': setBlock('h4'),
        'Mod-k': () => {
          options.onLinkRequest();
          return true;
        },
        'Shift-Enter': hardBreak,
        Enter: splitListItem(nodes.list_item),
        'Mod-]': sinkListItem(nodes.list_item),
        'Mod-[': liftListItem(nodes.list_item),
      }),
      keymap(baseKeymap),
    ],
  });
  const view: EditorView = new EditorView(place, {
    state,
    attributes: editorAttributes(options.attributes),
    // A paste from elsewhere is cleaned to the allow-list before ProseMirror reads it (so no style or handler reaches
    // a parser); one copied inside the editor (ProseMirror marks it data-pm-slice) is already clean and keeps its shape.
    transformPastedHTML: (html) => (html.includes('data-pm-slice') ? html : cleanHtml(html)),
    dispatchTransaction(tr: Transaction) {
      const next = view.state.apply(tr);
      view.updateState(next);
      if (tr.docChanged) options.onChange(htmlOfDocument(next.doc));
      options.onState(formatState(next));
    },
  });
  options.onState(formatState(view.state));
  return view;
}

/** The editable element's attributes: the page's (id, label, description, invalid) and the editor's own. */
export function editorAttributes(attributes: Record<string, string>): Record<string, string> {
  return { ...attributes, role: 'textbox', 'aria-multiline': 'true', class: 'rich-text' };
}

/** Runs a toolbar command on the view and, unless told not to, gives the editor focus back. */
export function run(view: EditorView, command: Command, { focus = true } = {}): boolean {
  const done = command(view.state, view.dispatch, view);
  if (focus) view.focus();
  return done;
}
