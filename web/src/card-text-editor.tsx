import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { linkFieldMessage } from './card-rules';
import type { EditorView } from 'prosemirror-view';
import * as richText from './rich-text';
import type { BlockKind, FormatState } from './rich-text';
import { shortcut } from './shortcut';

type RichText = typeof richText;

interface ToolbarButton {
  key: keyof RichText['commands'] | 'link';
  glyph: string;
  /** A symbol shown before the glyph, hidden from assistive technology (the name says it; no digit: the visible text must be part of the name). */
  symbol?: string;
  name: string;
  keys?: string;
  pressed?: (s: FormatState) => boolean;
  enabled?: (s: FormatState) => boolean;
  classes?: string;
}

const BUTTONS: ToolbarButton[] = [
  { key: 'strong', glyph: 'B', name: 'Bold', keys: 'Mod+B', pressed: (s) => s.strong, classes: 'glyph-bold' },
  { key: 'em', glyph: 'I', name: 'Italic', keys: 'Mod+I', pressed: (s) => s.em, classes: 'glyph-italic' },
  { key: 'underline', glyph: 'U', name: 'Underline', keys: 'Mod+U', pressed: (s) => s.underline, classes: 'glyph-underline' },
  { key: 'mark', glyph: 'H', name: 'Highlight', keys: 'Mod+Shift+H', pressed: (s) => s.mark, classes: 'glyph-mark' },
  { key: 'link', glyph: 'Link', name: 'Link', keys: 'Mod+K', pressed: (s) => s.link !== null },
  { key: 'bulletList', symbol: '•', glyph: 'Bulleted', name: 'Bulleted list', keys: 'Mod+Shift+8', pressed: (s) => s.bulletList },
  { key: 'orderedList', glyph: 'Numbered', name: 'Numbered list', keys: 'Mod+Shift+7', pressed: (s) => s.orderedList },
  { key: 'blockquote', symbol: '“', glyph: 'Quote', name: 'Quote', keys: 'Mod+Shift+9', pressed: (s) => s.blockquote },
  { key: 'undo', glyph: '↶', name: 'Undo', keys: 'Mod+Z', enabled: (s) => s.canUndo },
  { key: 'redo', glyph: '↷', name: 'Redo', keys: 'Mod+Shift+Z', enabled: (s) => s.canRedo },
];

const BLOCKS: { value: Exclude<BlockKind, 'mixed'>; label: string }[] = [
  { value: 'paragraph', label: 'Paragraph' },
  { value: 'h2', label: 'Heading' },
  { value: 'h3', label: 'Subheading' },
  { value: 'h4', label: 'Minor heading' },
];

export interface CardTextEditorProps {
  /** The editable element's id; the visible label is `${id}-label`. */
  id: string;
  html: string;
  describedBy: string;
  invalid: boolean;
  onChange(html: string): void;
  /** The HTML the editor holds once it has read `html` through the card allow-list. */
  onLoad(html: string): void;
  /** Focus left the editor and its toolbar. */
  onLeave(): void;
  /**
   * Hidden while the form shows the HTML view: the editor stays (with its undo history) and, shown again, reads `html`
   * only when it differs from what it holds, as one more undoable change.
   */
  hidden?: boolean;
}

/**
 * The card text as formatted text: a contenteditable (ProseMirror; this module is loaded on demand, see
 * ./lazy-card-text-editor) limited to what the server keeps,
 * with a toolbar (one tab stop; arrow keys move inside it, as the WAI-ARIA toolbar pattern has it) and shortcuts.
 */
export function CardTextEditor(props: CardTextEditorProps) {
  const place = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const lib = useRef<RichText | null>(null);
  const latest = useRef(props);
  latest.current = props;
  const [format, setFormat] = useState<FormatState | null>(null);
  const [linkOpen, setLinkOpen] = useState(false);
  const [active, setActive] = useState(0);
  /** The HTML the editor's document makes (what it last told the form). */
  const held = useRef('');

  useEffect(() => {
    if (!place.current) return;
    lib.current = richText;
    view.current = richText.createCardEditor(place.current, latest.current.html, {
      attributes: attributesOf(latest.current),
      onChange: (html) => {
        held.current = html;
        latest.current.onChange(html);
      },
      onState: setFormat,
      onLinkRequest: () => setLinkOpen(true),
    });
    held.current = richText.htmlOfDocument(view.current.state.doc);
    latest.current.onLoad(held.current);
    return () => {
      view.current?.destroy();
      view.current = null;
    };
  }, []);

  // Shown again after the HTML view: the HTML read only when it was changed there (an unchanged one keeps the
  // document as it is, its undo history and a space typed at a paragraph's end included).
  // Layout effects: the editor gives up (and takes back) the field's id and label in the same commit as the textarea.
  useLayoutEffect(() => {
    const v = view.current;
    if (props.hidden || !v || props.html === held.current) return;
    richText.replaceDocument(v, props.html);
  }, [props.hidden]);

  useLayoutEffect(() => {
    view.current?.setProps({ attributes: richText.editorAttributes(attributesOf(props)) });
  }, [props.hidden, props.invalid, props.describedBy]);

  const runCommand = (key: ToolbarButton['key']) => {
    const v = view.current;
    const mod = lib.current;
    if (!v || !mod) return;
    if (key === 'link') return setLinkOpen(true);
    if (format && BUTTONS.find((b) => b.key === key)?.enabled?.(format) === false) return;
    mod.run(v, mod.commands[key]);
  };

  // The toolbar is one tab stop (the WAI-ARIA toolbar pattern): the Text style select (item 0) and the buttons take
  // tabindex 0 in turn, the one used last; ArrowLeft/ArrowRight move between them, Home/End from a button to either end
  // (on the select, Up/Down/Home/End keep choosing its options).
  const controls = 1 + BUTTONS.length;
  const onToolbarKey = (e: KeyboardEvent) => {
    const onSelect = e.target instanceof HTMLSelectElement;
    const moves: Record<string, number> = onSelect ? { ArrowRight: active + 1, ArrowLeft: active - 1 } : { ArrowRight: active + 1, ArrowLeft: active - 1, Home: 0, End: controls - 1 };
    const next = moves[e.key];
    if (next === undefined || !(onSelect || e.target instanceof HTMLButtonElement)) return;
    e.preventDefault();
    const index = (next + controls) % controls;
    setActive(index);
    (e.currentTarget as HTMLElement).querySelectorAll<HTMLElement>('select, button')[index]?.focus();
  };

  const block = format?.block ?? 'paragraph';
  const blockOptions = BLOCKS.some((b) => b.value === block) || block === 'mixed' ? BLOCKS : [...BLOCKS, { value: block, label: `Heading level ${block.slice(1)}` }];
  return (
    <div
      class="rich-editor"
      hidden={props.hidden}
      onFocusOut={(e) => {
        const to = (e as FocusEvent).relatedTarget;
        if (!(to instanceof Node) || !(e.currentTarget as HTMLElement).contains(to)) props.onLeave();
      }}
    >
      <div class="toolbar" role="toolbar" aria-label="Formatting" aria-controls={props.id} onKeyDown={onToolbarKey}>
        <label for={`${props.id}-block`} class="visually-hidden">
          Text style
        </label>
        <select
          id={`${props.id}-block`}
          value={block === 'mixed' ? '' : block}
          disabled={!format}
          tabIndex={active === 0 ? 0 : -1}
          onFocus={() => setActive(0)}
          onChange={(e) => {
            const v = view.current;
            const mod = lib.current;
            const select = e.currentTarget;
            // Focus stays on the select: arrow keys change a closed select one option at a time.
            const done = v && mod && select.value ? mod.run(v, mod.setBlock(select.value as Exclude<BlockKind, 'mixed'>), { focus: false }) : false;
            // A style that could not apply leaves the select showing the text's real style.
            if (!done) select.value = block === 'mixed' ? '' : block;
          }}
        >
          {block === 'mixed' ? <option value="">Mixed</option> : null}
          {blockOptions.map((b) => (
            // A style that cannot apply to the selection is offered but disabled.
            <option key={b.value} value={b.value} disabled={Boolean(format && b.value !== block && format.blocks[b.value] === false)}>
              {b.label}
            </option>
          ))}
        </select>
        <span class="toolbar-buttons">
          {BUTTONS.map((b, index) => {
            const i = index + 1;
            const title = b.keys ? `${b.name} (${shortcut(b.keys)})` : b.name;
            return (
              <button
                key={b.key}
                type="button"
                class={`tool ${b.classes ?? ''}`}
                tabIndex={i === active ? 0 : -1}
                aria-label={b.name}
                title={title}
                aria-pressed={b.pressed ? Boolean(format && b.pressed(format)) : undefined}
                disabled={!format}
                // Undo and Redo stay focusable when there is nothing to undo, so the arrow keys do not skip them.
                aria-disabled={format && b.enabled && !b.enabled(format) ? 'true' : undefined}
                // Keep the editor's selection: a click would otherwise move focus (and the selection) to the button.
                onMouseDown={(e) => e.preventDefault()}
                onFocus={() => setActive(i)}
                onClick={() => runCommand(b.key)}
              >
                {b.symbol ? <span aria-hidden="true">{b.symbol} </span> : null}
                {b.glyph}
              </button>
            );
          })}
        </span>
      </div>
      {linkOpen && view.current && lib.current ? (
        <LinkField
          id={`${props.id}-href`}
          current={format?.link ?? null}
          onApply={(href) => {
            lib.current!.run(view.current!, lib.current!.setLink(href));
            setLinkOpen(false);
          }}
          onRemove={() => {
            lib.current!.run(view.current!, lib.current!.removeLink);
            setLinkOpen(false);
          }}
          onClose={() => {
            setLinkOpen(false);
            view.current?.focus();
          }}
        />
      ) : null}
      <div ref={place} class="rich-editor-place" />
    </div>
  );
}

function attributesOf(props: CardTextEditorProps): Record<string, string> {
  // Hidden behind the HTML view, the textarea is the field: it takes the id and the label.
  if (props.hidden) return {};
  return { id: props.id, 'aria-labelledby': `${props.id}-label`, 'aria-describedby': props.describedBy, 'aria-invalid': String(props.invalid) };
}

/** The link address for the selection: Enter applies, Escape closes (focus goes back to the text). */
function LinkField({ id, current, onApply, onRemove, onClose }: { id: string; current: string | null; onApply(href: string): void; onRemove(): void; onClose(): void }) {
  const [href, setHref] = useState(current ?? 'https://');
  const [problem, setProblem] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, []);
  const apply = () => {
    // The field checks the address untrimmed of invisible characters: trimming would hide a pasted BOM.
    const wrong = linkFieldMessage(href);
    if (wrong) return setProblem(wrong);
    onApply(href.trim());
  };
  return (
    <div class="link-field" role="group" aria-label="Link of the selected text">
      <label for={id}>
        Link address
      </label>
      <div class="row">
        <input
          ref={input}
          id={id}
          type="url"
          value={href}
          aria-invalid={Boolean(problem)}
          aria-describedby={`${id}-problem`}
          onInput={(e) => {
            setHref(e.currentTarget.value);
            setProblem(null);
          }}
          onKeyDown={(e) => {
            if (e.key === 'Enter') {
              e.preventDefault();
              apply();
            } else if (e.key === 'Escape') {
              e.preventDefault();
              onClose();
            }
          }}
        />
        <button type="button" onClick={apply}>
          Apply link
        </button>
        {current !== null ? (
          <button type="button" onClick={onRemove}>
            Remove link
          </button>
        ) : null}
        <button type="button" onClick={onClose}>
          Cancel
        </button>
      </div>
      <p id={`${id}-problem`} class="field-problem" aria-live="polite">
        {problem ?? ''}
      </p>
    </div>
  );
}
