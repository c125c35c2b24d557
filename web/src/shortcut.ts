const MAC = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.userAgent);

/** A keyboard shortcut ("Mod+B") as this computer writes it: "Ctrl+B", or "⌘B" on Apple systems. */
export function shortcut(keys: string): string {
  return MAC ? keys.replace('Mod+', '⌘').replace('Alt+', '⌥').replace('Shift+', '⇧') : keys.replace('Mod+', 'Ctrl+');
}
