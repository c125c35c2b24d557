import { useEffect, useState } from 'preact/hooks';
import type { CardTextEditorProps } from './card-text-editor';

type Editor = typeof import('./card-text-editor').CardTextEditor;

let editorModule: Promise<typeof import('./card-text-editor')> | undefined;

/**
 * Starts loading the editor's chunk (once; again after a failure). The card form's routes call it as soon as they are
 * shown, so on a slow network the chunk comes in beside the session check and the card's own answer instead of after
 * them (the form asked for it only once the edited card had arrived: three round trips one after another).
 */
export function loadCardTextEditor(): Promise<typeof import('./card-text-editor')> {
  if (!editorModule) {
    const loading = import('./card-text-editor');
    editorModule = loading;
    loading.catch(() => {
      if (editorModule === loading) editorModule = undefined;
    });
  }
  return editorModule;
}

/**
 * The card text editor, loaded when a card form first needs it (ProseMirror is about 70 KiB gzip, three times the rest
 * of the app), from the app's own /assets like every other script (the CSP allows nothing else). `onUnavailable`: the
 * module could not be loaded (the form then shows the HTML view).
 */
export function LazyCardTextEditor(props: CardTextEditorProps & { onUnavailable(): void }) {
  const [Editor, setEditor] = useState<{ component: Editor } | null>(null);
  useEffect(() => {
    let live = true;
    loadCardTextEditor().then(
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
