/**
 * User text isolated inside a plain string (a message kept as a string, a confirm(), a tab title), where <bdi>
 * (components.tsx UserText) cannot go: between U+2068 FIRST STRONG ISOLATE and U+2069 POP DIRECTIONAL ISOLATE, which do
 * for a string what <bdi> does for an element. A right-to-left name then takes its own direction without carrying the
 * sentence's quotes, numbers and punctuation along: "The username “مريم 2024” is already taken" reads as English with
 * the name in it. The text must hold no unpaired isolate of its own (usernames, tags and names refuse bidi controls;
 * visibleTag writes them out).
 */
export function isolated(text: string): string {
  return `\u2068${text}\u2069`;
}
