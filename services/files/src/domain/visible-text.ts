// Zero-width spaces and joiners, the word joiner and the byte order mark (Unicode category Cf) are not whitespace to
// JavaScript's \s, yet a reader sees nothing: a document holding only those has no text to make a card of.
const VISIBLE_CHARACTER = /[^\s\p{Cf}\p{Cc}]/u;

/** Whether `text` holds a character a reader sees: anything but whitespace, format (Cf) and control (Cc) characters. */
export function hasVisibleText(text: string): boolean {
  return VISIBLE_CHARACTER.test(text);
}
