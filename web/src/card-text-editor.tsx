import { useEffect, useRef, useState } from 'preact/hooks';
import { linkProblem, MAX_LINK_CHARS } from '@cards/card-rules';
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

  useEffect(() => {
    if (!place.current) return;
    lib.current = richText;
    view.current = richText.createCardEditor(place.current, latest.current.html, {
      attributes: attributesOf(latest.current),
      onChange: (html) => latest.current.onChange(html),
      onState: setFormat,
      onLinkRequest: () => setLinkOpen(true),
    });
    latest.current.onLoad(richText.htmlOfDocument(view.current.state.doc));
    return () => {
      view.current?.destroy();
      view.current = null;
    };
  }, []);

  useEffect(() => {
    view.current?.setProps({ attributes: richText.editorAttributes(attributesOf(props)) });
  }, [props.invalid, props.describedBy]);

  const runCommand = (key: ToolbarButton['key']) => {
    const v = view.current;
    const mod = lib.current;
    if (!v || !mod) return;
    if (key === 'link') return setLinkOpen(true);
    if (format && BUTTONS.find((b) => b.key === key)?.enabled?.(format) === false) return;
    mod.run(v, mod.commands[key]);
  };

  const onToolbarKey = (e: KeyboardEvent) => {
    const next = { ArrowRight: active + 1, ArrowLeft: active - 1, Home: 0, End: BUTTONS.length - 1 }[e.key];
    if (next === undefined || !(e.target instanceof HTMLButtonElement)) return;
    e.preventDefault();
    const index = (next + BUTTONS.length) % BUTTONS.length;
    setActive(index);
    (e.currentTarget as HTMLElement).querySelectorAll<HTMLButtonElement>('button')[index]?.focus();
  };

  const block = format?.block ?? 'paragraph';
  const blockOptions = BLOCKS.some((b) => b.value === block) || block === 'mixed' ? BLOCKS : [...BLOCKS, { value: block, label: `Heading level ${block.slice(1)}` }];
  return (
    <div
      class="rich-editor"
      onFocusOut={(e) => {
        const to = (e as FocusEvent).relatedTarget;
        if (!(to instanceof Node) || !(e.currentTarget as HTMLElement).contains(to)) props.onLeave();
      }}
    >
      <div class="toolbar" role="toolbar" aria-label="Formatting" aria-controls={props.id}>
        <label for={`${props.id}-block`} class="visually-hidden">
          Text style
        </label>
        <select
          id={`${props.id}-block`}
          value={block === 'mixed' ? '' : block}
          disabled={!format}
          onChange={(e) => {
            const v = view.current;
            const mod = lib.current;
            // Focus stays on the select: arrow keys change a closed select one option at a time.
            if (v && mod && e.currentTarget.value) mod.run(v, mod.setBlock(e.currentTarget.value as Exclude<BlockKind, 'mixed'>), { focus: false });
          }}
        >
          {block === 'mixed' ? <option value="">Mixed</option> : null}
          {blockOptions.map((b) => (
            <option key={b.value} value={b.value}>
              {b.label}
            </option>
          ))}
        </select>
        <span class="toolbar-buttons" onKeyDown={onToolbarKey}>
          {BUTTONS.map((b, i) => {
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
    const value = href.trim();
    const wrong = value === '' ? 'not-http' : linkProblem(value);
    if (wrong === 'too-long') return setProblem(`A link may be at most ${MAX_LINK_CHARS} characters.`);
    if (wrong) return setProblem('Enter a full http:// or https:// address, such as https://example.com/page.');
    onApply(value);
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
