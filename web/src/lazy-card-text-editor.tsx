import { useEffect, useState } from 'preact/hooks';
import type { CardTextEditorProps } from './card-text-editor';

type Editor = typeof import('./card-text-editor').CardTextEditor;

/**
 * The card text editor, loaded when a card form first needs it (ProseMirror is about 70 KiB gzip, three times the rest
 * of the app), from the app's own /assets like every other script (the CSP allows nothing else). `onUnavailable`: the
 * module could not be loaded (the form then shows the HTML view).
 */
export function LazyCardTextEditor(props: CardTextEditorProps & { onUnavailable(): void }) {
  const [Editor, setEditor] = useState<{ component: Editor } | null>(null);
  useEffect(() => {
    let live = true;
    import('./card-text-editor').then(
      (mod) => live && setEditor({ component: mod.CardTextEditor }),
      () => live && props.onUnavailable(),
    );
    return () => {
      live = false;
    };
  }, []);
  if (!Editor) return props.hidden ? null : <p class="muted">Loading the editor…</p>;
  return <Editor.component {...props} />;
}
