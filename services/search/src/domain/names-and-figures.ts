import { editDistance, typoEdits, WORD } from './text';
/** What ends a sentence, a heading or a list item, or opens a quotation: a capital after it names nothing. */
const SENTENCE_END = new Set(['.', '!', '?', ':', ';', '\n', '\r', '•', '–', '—', '-']);
/** What may stand between a sentence's end and its first word: spaces, quotation marks, brackets. */
const BETWEEN = new Set([' ', '\t', '\u00a0', '"', "'", '“', '”', '‘', '’', '«', '»', '(', ')', '[', ']']);

/** Whether the word at `index` of `text` is the first of its sentence (or of the text). */
function startsSentence(text: string, index: number): boolean {
  let i = index - 1;
  while (i >= 0 && BETWEEN.has(text[i]!)) i--;
  return i < 0 || SENTENCE_END.has(text[i]!);
}

/**
 * How many times each digit occurs in a text's figures (amounts, percentages, years, the 1 of "Q1"). Digits rather than
 * numbers, since a copy's punctuation may be dropped or spaced out: "2.4" is "24" in one copy and "2 4" in another.
 */
function digitsOf(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [digit] of text.matchAll(/\p{Nd}/gu)) counts.set(digit, (counts.get(digit) ?? 0) + 1);
  return counts;
}

/** Whether one text's digits are all among the other's (see digitsOf), as often as there. */
function oneHoldsTheOthersDigits(a: Map<string, number>, b: Map<string, number>): boolean {
  const within = (x: Map<string, number>, y: Map<string, number>) => [...x].every(([digit, n]) => n <= (y.get(digit) ?? 0));
  return within(a, b) || within(b, a);
}

/** The words of a text written with a capital inside a sentence (people, companies, places), lower-cased. */
function namesOf(text: string): Set<string> {
  const out = new Set<string>();
  // A word as words() reads one, its case kept.
  for (const match of text.matchAll(WORD)) {
    if (/^\p{Lu}/u.test(match[0]) && !/\p{N}/u.test(match[0]) && !startsSentence(text, match.index)) out.add(match[0].toLowerCase());
  }
  return out;
}

/** Whether the smaller set's names are all in the larger, each as it is or as a misspelling of one only the larger has. */
function oneHoldsTheOthersNames(a: Set<string>, b: Set<string>): boolean {
  const [fewer, more] = a.size <= b.size ? [a, b] : [b, a];
  const onlyInMore = [...more].filter((name) => !fewer.has(name));
  return [...fewer].every((name) => more.has(name) || onlyInMore.some((other) => misspeltName(name, other)));
}

/** A name with a typo, or with one fixed: as few edits apart as full-text search takes for a typo of a word that long. */
function misspeltName(name: string, other: string): boolean {
  const edits = typoEdits(Math.max(name.length, other.length));
  return edits > 0 && editDistance(name, other, edits) <= edits;
}

/**
 * Whether two texts name and count the same things: the digits of one's figures are all among the other's, and its
 * names too, but for a typo (so a copy with a sentence added or dropped, lower-cased or without punctuation, still
 * does). "Northwind's revenue rose 5% in Q1" and "fell 3% in Q2", or the same report of another company, are two
 * reports however alike their wording: a bag-of-words embedder puts them at cosine 0.965 to 0.996, sharing 56-76% of
 * their word shingles.
 */
export function sameNamesAndFigures(a: string, b: string): boolean {
  return oneHoldsTheOthersDigits(digitsOf(a), digitsOf(b)) && oneHoldsTheOthersNames(namesOf(a), namesOf(b));
}
