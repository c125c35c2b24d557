/**
 * The card rules that the cards service enforces (services/cards/src/domain/rules.ts) and the web app's
 * card form checks while a person types (web/src/card-rules.ts): one place for each limit. Pure
 * TypeScript with no Node, DOM or package dependency, so the server and the browser bundle both import
 * it (`tsconfig.json` here type-checks it without the Node and DOM libraries).
 */

/** A card's derived text must hold more than this many words. */
export const MIN_WORDS_EXCLUSIVE = 70;
export const MAX_WORDS = 5000;
/** Characters (characterCount) of a card's derived text (its `content`). */
export const MAX_CONTENT_CHARS = 29_000;
/** Characters of the `card_html` sent, before sanitizing. */
export const MAX_HTML_CHARS = 500_000;
export const MAX_LINK_CHARS = 2048;

/** Text (or an attribute value in double quotes) written into HTML as it reads: & < > " escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
export const MAX_TAGS = 100;
/** Tags given with an uploaded document at most: one below MAX_TAGS, kept free for a heading's title tag on each card. */
export const MAX_FILE_TAGS = MAX_TAGS - 1;
export const MAX_TAG_CHARS = 200;
export const MAX_COLLECTION_NAME_CHARS = 255;
export const MAX_COLLECTION_DESCRIPTION_CHARS = 2000;

/**
 * What a change sent on a version of a card or collection it is no longer at (HTTP If-Match) is answered, 412: by the
 * gateway for a tag that names no version of ours, by the cards service for a version the card or collection was
 * changed from since. One text, so a client (and the web app) meets one message whichever of the two refused.
 */
export const changedSinceReadMessage = (name: 'card' | 'collection'): string =>
  `The ${name} was changed since you read it (If-Match does not match its current ETag): read it again and apply your change to it`;

// Account rules the identity service enforces and the gateway's OpenAPI document states (from these same values).
export const MIN_PASSWORD_CHARS = 8;
export const MIN_USERNAME_CHARS = 3;
export const MAX_USERNAME_CHARS = 32;
/**
 * The characters a username may hold and its length in code points, as a JSON Schema `pattern` (ECMA-262 read with the
 * u flag, as JSON Schema 2020-12 asks; `new RegExp(USERNAME_PATTERN, 'u')`): letters, combining marks and decimal digits
 * of any script, "_" and "-". Only part of the rule: usernameProblem also holds a name to one script, one digit
 * system, marks after a letter and no compatibility characters.
 */
export const USERNAME_PATTERN = `^[\\p{L}\\p{M}\\p{Nd}_-]{${MIN_USERNAME_CHARS},${MAX_USERNAME_CHARS}}$`;
/** The rule a refused username is told (usernameProblem says what broke it). */
export const USERNAME_RULE = `${MIN_USERNAME_CHARS} to ${MAX_USERNAME_CHARS} letters or digits of one script (Han may go with Hiragana, Katakana or Hangul), "_" or "-"`;
/** Characters (characterCount) of a profile's website, trimmed. */
export const MAX_WEBSITE_CHARS = 512;

/** Elements (lower-case names) whose start and end break a card's derived text into lines. */
export const BLOCK_TAGS: readonly string[] = ['p', 'br', 'li', 'ul', 'ol', 'blockquote', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6'];

/**
 * Elements the card allow-list drops, keeping their text, whose content is a block of its own: the cards service keeps
 * their text apart from the text around them (a line break where the two would otherwise run together: "<div>a</div>
 * <div>b</div>" is "a" and "b", not "ab"), as a browser shows them. Lower-case names.
 */
export const SEPARATED_BLOCK_TAGS: readonly string[] = [
  'div', 'section', 'article', 'aside', 'header', 'footer', 'nav', 'main', 'address', 'hgroup', 'search', 'center',
  'figure', 'figcaption', 'dl', 'dt', 'dd', 'details', 'summary', 'dialog', 'menu', 'dir', 'form', 'fieldset', 'legend',
  'pre', 'listing', 'xmp', 'plaintext', 'hr', 'noscript', 'caption', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th', 'frameset', 'frame',
];
/**
 * A table (a card holds none) becomes text rows, in the web editor and the cards service alike: each row a paragraph of
 * its cells separated by TABLE_CELL_SEPARATOR, a caption a paragraph of its own, rows without text left out, and a
 * cell's blocks (CELL_LINE_TAGS) lines of the row.
 */
export const TABLE_CELL_SEPARATOR = ' | ';
/** Elements that end a line inside a table cell (lower-case names): the allow-list's blocks and the separated ones. */
export const CELL_LINE_TAGS: readonly string[] = [...BLOCK_TAGS.filter((tag) => tag !== 'br'), ...SEPARATED_BLOCK_TAGS];

/** A card's text from the raw text of its HTML (blocks already broken by '\n'): whitespace collapsed within each line, empty lines dropped. */
export function collapseTextLines(raw: string): string {
  return raw
    .split('\n')
    .map((line) => line.replace(/\s+/gu, ' ').trim())
    .filter((line) => line.length > 0)
    .join('\n');
}

/** Characters as a person counts them: Unicode code points, so an emoji is one character, not two UTF-16 units. */
export function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * Whether `text` has at most `max` characters (characterCount). A code point is at most two UTF-16 units, so a text
 * longer than 2 * max units is refused by its size alone and huge input is never walked.
 */
export function fitsCharacters(text: string, max: number): boolean {
  return text.length <= max || (text.length <= 2 * max && characterCount(text) <= max);
}

/**
 * `text` cut to its first `max` characters (characterCount) when it has more, else `text` itself: a cut never leaves half
 * of a surrogate pair (an emoji), as cutting UTF-16 units would.
 */
export function truncatedToCharacters(text: string, max: number): string {
  if (fitsCharacters(text, max)) return text;
  let units = 0;
  let characters = 0;
  for (const character of text) {
    if (characters === max) break;
    units += character.length;
    characters++;
  }
  return text.slice(0, units);
}

// What a reader does not see, though JavaScript's \s is not it: format characters (Cf: zero-width spaces and joiners,
// the word joiner, direction marks and overrides, the soft hyphen, the BOM), the other default-ignorable ones (Hangul
// fillers, the combining grapheme joiner, variation selectors) and the blank Braille pattern.
const INVISIBLE = '\\p{Cf}\\p{Default_Ignorable_Code_Point}\\u2800';
const INVISIBLE_CHARACTER = new RegExp(`[${INVISIBLE}]`, 'u');
const VISIBLE_CHARACTER = new RegExp(`[^\\s\\p{Cc}${INVISIBLE}]`, 'u');

/** Whether `text` holds a character a reader sees: anything but whitespace, control (Cc) and invisible characters. */
export function hasVisibleText(text: string): boolean {
  return VISIBLE_CHARACTER.test(text);
}

/** Whether a field is one line (a name, a tag, a link, an address) or text that may run over lines (a description, a query). */
export type TextShape = 'single-line' | 'multi-line';

// Unicode category Cc: the C0 controls (NUL included), DEL and the C1 controls U+0080-U+009F.
const CONTROL_CHARACTER = /\p{Cc}/u;
const CONTROL_CHARACTER_BUT_LINE_BREAK_OR_TAB = /(?![\t\n\r])\p{Cc}/u;

/**
 * What is wrong with a free-text field that holds control characters, or null when it holds none it may not: every
 * control character (C0, DEL, C1, NUL) is refused, except tab, line feed and carriage return in a multi-line field.
 * Meant to follow "<field>: " in an answer; names the first one found as U+XXXX, since none of them can be seen.
 */
export function controlCharacterProblem(text: string, shape: TextShape): string | null {
  const found = (shape === 'multi-line' ? CONTROL_CHARACTER_BUT_LINE_BREAK_OR_TAB : CONTROL_CHARACTER).exec(text);
  if (!found) return null;
  return `must not contain control characters (found ${codePointName(found[0])})`;
}

/** A character's code point as U+XXXX (at least four hex digits), the way answers name what cannot be seen. */
export const codePointName = (character: string): string => `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

// With the u flag a surrogate half matches only when unpaired (a pair is read as the one code point it encodes).
const LONE_SURROGATE = /\p{Cs}/u;
const LONE_SURROGATES = /\p{Cs}/gu;

/**
 * What is wrong with text that is not well-formed Unicode, or null when it is: a surrogate half without its partner
 * (a JSON "\ud800" escape, half an emoji cut off by a program) encodes no character, and UTF-8, which stores and
 * carries the text, cannot hold it. Meant to follow "<field>: " in an answer; names the first one as U+XXXX.
 */
export function wellFormedProblem(text: string): string | null {
  const found = LONE_SURROGATE.exec(text);
  if (!found) return null;
  return `must be well-formed Unicode (found an unpaired surrogate U+${found[0].charCodeAt(0).toString(16).toUpperCase()})`;
}

/**
 * The rule of every free-text field a person sets: well-formed Unicode (wellFormedProblem), then no control characters
 * it may not hold (controlCharacterProblem). Null when the text passes both.
 */
export function freeTextProblem(text: string, shape: TextShape): string | null {
  return wellFormedProblem(text) ?? controlCharacterProblem(text, shape);
}

/**
 * Invisible characters that do harm in a name shown to other people (besides the control characters
 * controlCharacterProblem refuses): the bidirectional embedding, override and isolate controls (an override can make
 * "x\u202Efdp.docx" look like "xxcod.pdf", or a collection name read backwards), separators that break the line it is
 * shown on, direction marks that reorder its neighbours (an RLM beside digits or an extension), and the BOM, which
 * shows as nothing. Named in the answer, since none of them can be seen.
 */
const INVISIBLE_IN_NAME: ReadonlyMap<string, string> = new Map([
  ['\u202a', 'U+202A (left-to-right embedding)'],
  ['\u202b', 'U+202B (right-to-left embedding)'],
  ['\u202c', 'U+202C (pop directional formatting)'],
  ['\u202d', 'U+202D (left-to-right override)'],
  ['\u202e', 'U+202E (right-to-left override)'],
  ['\u2066', 'U+2066 (left-to-right isolate)'],
  ['\u2067', 'U+2067 (right-to-left isolate)'],
  ['\u2068', 'U+2068 (first strong isolate)'],
  ['\u2069', 'U+2069 (pop directional isolate)'],
  ['\u2028', 'U+2028 (line separator)'],
  ['\u2029', 'U+2029 (paragraph separator)'],
  ['\u200e', 'U+200E (left-to-right mark)'],
  ['\u200f', 'U+200F (right-to-left mark)'],
  ['\u061c', 'U+061C (Arabic letter mark)'],
  ['\ufeff', 'U+FEFF (byte order mark, zero-width no-break space)'],
]);

// Names of the invisible characters a name is most often found holding, for the answer (others are named U+XXXX alone).
const INVISIBLE_NAMES: ReadonlyMap<string, string> = new Map([
  ['\u200b', 'zero width space'],
  ['\u200c', 'zero width non-joiner'],
  ['\u200d', 'zero width joiner'],
  ['\u2060', 'word joiner'],
  ['\u00ad', 'soft hyphen'],
  ['\u034f', 'combining grapheme joiner'],
  ['\u180e', 'Mongolian vowel separator'],
  ['\u3164', 'Hangul filler'],
  ['\u115f', 'Hangul choseong filler'],
  ['\u1160', 'Hangul jungseong filler'],
  ['\uffa0', 'halfwidth Hangul filler'],
  ['\u2800', 'Braille pattern blank'],
  ['\ufe0e', 'variation selector-15'],
  ['\ufe0f', 'variation selector-16'],
]);

/** An invisible character as an answer names it: "U+200B (zero width space)", or "U+XXXX" for one without a name here. */
function invisibleName(character: string): string {
  const name = INVISIBLE_IN_NAME.get(character);
  if (name) return name;
  const known = INVISIBLE_NAMES.get(character) ?? (/^[\u{e0000}-\u{e007f}]$/u.test(character) ? 'tag character' : undefined);
  return known ? `${codePointName(character)} (${known})` : codePointName(character);
}

const ZWNJ = '\u200c';
const ZWJ = '\u200d';
const EMOJI = /^\p{Emoji}$/u;
const PICTOGRAPHIC = /^\p{Extended_Pictographic}$/u;
const EMOJI_MODIFIER = /^\p{Emoji_Modifier}$/u;
const KEYCAP_BASE = /^[0-9#*]$/u;
const TEXT_OR_EMOJI_SELECTOR = /^[\ufe0e\ufe0f]$/u;
const NONSPACING_MARK = /^[\p{Mn}\p{Me}]$/u;
const HAN = /^\p{Ideographic}$/u;
const IDEOGRAPHIC_VARIATION_SELECTOR = /^[\u{e0100}-\u{e01ef}]$/u;
const MONGOLIAN_LETTER = /^(?=\p{L})\p{scx=Mongolian}$/u;
const MONGOLIAN_VARIATION_SELECTOR = /^[\u180b-\u180d\u180f]$/u;
const MONGOLIAN_VOWEL_SEPARATOR = '\u180e';
const BLACK_FLAG = '\u{1f3f4}';
// The tag characters of an emoji tag sequence (a subdivision flag, 🏴 then "gbeng" in tag letters): lower-case letters and
// digits, then CANCEL TAG. A subdivision id is at most 7 of them (a region code, then 1 to 4 characters).
const TAG_SPEC = /^[\u{e0030}-\u{e0039}\u{e0061}-\u{e007a}]$/u;
const CANCEL_TAG = '\u{e007f}';
const MAX_TAG_SPEC = 7;

/** Whether a combining mark is a virama (canonical combining class 9), read from how NFD orders it between marks of class 8 and 10. */
function isVirama(mark: string): boolean {
  if (!NONSPACING_MARK.test(mark) || mark.normalize('NFD') !== mark) return false;
  const afterClass8 = `a${mark}\u3099`;
  const beforeClass10 = `a\u05b0${mark}`;
  return afterClass8.normalize('NFD') !== afterClass8 && beforeClass10.normalize('NFD') !== beforeClass10;
}

// Letters of the scripts whose letters join (cursive), where ZWNJ keeps two letters from joining (Persian "می‌خواهم").
// JavaScript has no Joining_Type property: every letter of these scripts counts as joining on both sides, except the
// Arabic block's right-joining letters (alef, dal, reh, waw...: nothing joins them on their left, so a ZWNJ after one
// changes nothing) and its non-joining hamza, from Unicode's ArabicShaping.txt.
const JOINING_SCRIPT_NAMES = ['Arabic', 'Syriac', 'Nko', 'Mongolian', 'Mandaic', 'Manichaean', 'Psalter_Pahlavi', 'Adlam', 'Hanifi_Rohingya', 'Sogdian', 'Old_Uyghur', 'Phags_Pa', 'Chorasmian'];
const JOINING_LETTER = ((): RegExp => {
  const known = JOINING_SCRIPT_NAMES.filter((name) => {
    try {
      return new RegExp(`\\p{scx=${name}}`, 'u') !== null;
    } catch {
      return false;
    }
  });
  return new RegExp(`^(?=[\\p{L}\\u0640])[${known.map((name) => `\\p{scx=${name}}`).join('')}]$`, 'u');
})();
const ARABIC_RIGHT_JOINING = /^[\u0622-\u0625\u0627\u0629\u062f-\u0632\u0648\u0671-\u0673\u0675-\u0677\u0688-\u0699\u06c0\u06c3-\u06cb\u06cd\u06cf\u06d2\u06d3\u06d5\u06ee\u06ef]$/u;
const ARABIC_NON_JOINING = /^[\u0621\u0674]$/u;

/** The last of the first `count` characters of `before` that is not a combining mark (transparent to joining), or undefined. */
function letterBefore(before: readonly string[], count: number): string | undefined {
  for (let i = count - 1; i >= 0; i--) if (!NONSPACING_MARK.test(before[i]!)) return before[i];
  return undefined;
}

/** The first character of `characters` from `from` on that is not a combining mark, or undefined. */
function letterAfter(characters: readonly string[], from: number): string | undefined {
  for (let i = from; i < characters.length; i++) if (!NONSPACING_MARK.test(characters[i]!)) return characters[i];
  return undefined;
}

/** Whether the tag characters around `characters[at]` make a well-formed emoji tag sequence after 🏴. */
function inEmojiTagSequence(characters: readonly string[], at: number): boolean {
  let start = at;
  while (start > 0 && (TAG_SPEC.test(characters[start - 1]!) || characters[start - 1] === CANCEL_TAG)) start--;
  if (characters[start - 1] !== BLACK_FLAG) return false;
  let end = start;
  while (end < characters.length && TAG_SPEC.test(characters[end]!)) end++;
  return end > start && end - start <= MAX_TAG_SPEC && characters[end] === CANCEL_TAG && at <= end;
}

/**
 * Why the invisible character `characters[at]` may not stand where it is in a name, or null when real text needs it
 * there. The first `count` of `before`: the characters kept before it (what a reader sees to its left). What is kept:
 * - ZWJ inside an emoji sequence (between two pictographs, the first maybe with a skin tone or VS16: 👨‍👩‍👧, 🏳️‍🌈), after a
 *   virama (IDNA ContextJ: Devanagari half forms, Sinhala "ශ්‍රී") or between a letter and a virama (Bengali "র‍্য");
 * - ZWNJ after a virama, or between letters of a joining script, the one before joining on its left (ContextJ:
 *   Persian "می‌خواهم");
 * - VS15/VS16 once after an emoji (❤️; a keycap's digit, #, * only before U+20E3: 1️⃣);
 * - an ideographic variation selector after a Han ideograph (variants of Japanese names), Mongolian free variation
 *   selectors after a Mongolian letter and its vowel separator between Mongolian letters;
 * - tag characters in an emoji tag sequence (the flag of Scotland: 🏴 then "gbsct" in tags and CANCEL TAG).
 * Everything else of the invisible class (zero-width space, word joiner, soft hyphen, Hangul fillers, the combining
 * grapheme joiner, the blank Braille pattern, other variation selectors...) is refused anywhere.
 */
function invisibleInNameProblem(before: readonly string[], count: number, characters: readonly string[], at: number): string | null {
  const character = characters[at]!;
  const previous = count > 0 ? before[count - 1] : undefined;
  const next = characters[at + 1];
  if (character === ZWJ) {
    let base = count - 1;
    while (base >= 0 && (EMOJI_MODIFIER.test(before[base]!) || before[base] === '\ufe0f')) base--;
    if (base >= 0 && PICTOGRAPHIC.test(before[base]!) && next !== undefined && PICTOGRAPHIC.test(next)) return null;
    if (previous !== undefined && isVirama(previous)) return null;
    if (previous !== undefined && /^\p{L}$/u.test(previous) && next !== undefined && isVirama(next)) return null;
    return `must not contain the invisible character ${invisibleName(character)} except inside an emoji sequence or beside a virama`;
  }
  if (character === ZWNJ) {
    if (previous !== undefined && isVirama(previous)) return null;
    const left = letterBefore(before, count);
    const right = letterAfter(characters, at + 1);
    if (left !== undefined && right !== undefined && JOINING_LETTER.test(left) && JOINING_LETTER.test(right)) {
      if (!ARABIC_RIGHT_JOINING.test(left) && !ARABIC_NON_JOINING.test(left) && !ARABIC_NON_JOINING.test(right)) return null;
    }
    return `must not contain the invisible character ${invisibleName(character)} except after a virama or between joining letters (Arabic, Persian...)`;
  }
  if (TEXT_OR_EMOJI_SELECTOR.test(character)) {
    if (previous !== undefined && EMOJI.test(previous) && (!KEYCAP_BASE.test(previous) || next === '\u20e3')) return null;
    return `must not contain the invisible character ${invisibleName(character)} except once after an emoji`;
  }
  if (IDEOGRAPHIC_VARIATION_SELECTOR.test(character) && previous !== undefined && HAN.test(previous)) return null;
  if (MONGOLIAN_VARIATION_SELECTOR.test(character) && previous !== undefined && MONGOLIAN_LETTER.test(previous)) return null;
  if (character === MONGOLIAN_VOWEL_SEPARATOR && previous !== undefined && MONGOLIAN_LETTER.test(previous) && next !== undefined && MONGOLIAN_LETTER.test(next)) return null;
  if ((TAG_SPEC.test(character) || character === CANCEL_TAG) && inEmojiTagSequence(characters, at)) return null;
  return `must not contain the invisible character ${invisibleName(character)}`;
}

/**
 * The rule of every name shown to other people (a collection's name, a file's name, a tag, a card's oc_file_path): the
 * single-line free-text rule (freeTextProblem), none of the characters that reorder, break or hide what is shown
 * (INVISIBLE_IN_NAME), something visible, and no other invisible character (format characters, default-ignorables, the
 * blank Braille pattern: a zero-width space or a Hangul filler makes a look-alike of another name) except where real
 * text needs one (invisibleInNameProblem: ZWJ in emoji sequences, VS16 after an emoji, ZWJ/ZWNJ by IDNA's ContextJ).
 * Null when the name passes; else the text that follows "<field>: " in an answer, naming the character as U+XXXX.
 */
export function nameProblem(name: string): string | null {
  const problem = freeTextProblem(name, 'single-line');
  if (problem) return problem;
  for (const character of name) {
    const invisible = INVISIBLE_IN_NAME.get(character);
    if (invisible) return `must not contain ${invisible}`;
  }
  // A name of zero-width spaces and joiners alone shows as nothing.
  if (name.length > 0 && !VISIBLE_CHARACTER.test(name)) return 'must contain a visible character (found only spaces and invisible characters)';
  if (!INVISIBLE_CHARACTER.test(name)) return null;
  const characters = [...name];
  for (let at = 0; at < characters.length; at++) {
    if (!INVISIBLE_CHARACTER.test(characters[at]!)) continue;
    const invisible = invisibleInNameProblem(characters, at, characters, at);
    if (invisible) return invisible;
  }
  return null;
}

/**
 * The invisible characters nameProblem refuses in a name, dropped (each judged among the characters kept before it):
 * for names and tags a parser took from a document, which the person who sent it cannot correct.
 */
export function withoutInvisibleInName(text: string): string {
  if (!INVISIBLE_CHARACTER.test(text)) return text;
  const characters = [...text];
  const kept: string[] = [];
  for (let at = 0; at < characters.length; at++) {
    const character = characters[at]!;
    if (INVISIBLE_CHARACTER.test(character) && (INVISIBLE_IN_NAME.has(character) || invisibleInNameProblem(kept, kept.length, characters, at) !== null)) continue;
    kept.push(character);
  }
  return kept.join('');
}

/**
 * The first character of an e-mail address that no address holds but that hides in it: a format character (Cf: zero-width
 * spaces and joiners, direction marks and overrides, the BOM, the soft hyphen) or another default-ignorable one (Hangul
 * fillers, the combining grapheme joiner, variation selectors), which makes the address shown to other users differ
 * from the one mail is sent to. Null when none; else the text that follows "email: ".
 */
export function emailCharacterProblem(email: string): string | null {
  for (const character of email) {
    if (INVISIBLE_CHARACTER.test(character)) return `must not contain invisible characters (found ${INVISIBLE_IN_NAME.get(character) ?? codePointName(character)})`;
  }
  return null;
}

/** The dots IDNA reads as label separators: the full stop, and the ideographic, fullwidth and halfwidth ideographic ones. */
export const DOMAIN_DOT = /[.\u3002\uff0e\uff61]/u;

/**
 * The one form of every spelling of an e-mail address: the key identity stores an account under (its normalizeEmail,
 * which first refuses what is no address) and the gateway counts attempts per address by, so the two stay in step.
 * Trimmed, lower-cased and in Unicode NFC (after lower-casing, which can leave a letter and a combining mark that
 * compose), the domain in the ASCII form of IDNA (UTS #46, as every browser writes it: "x@exämple.com" is
 * "x@xn--exmple-cua.com"; kept as written when IDNA refuses it), without one final dot of the domain ("bob@example.com."
 * is the fully qualified spelling of "bob@example.com"; any DOMAIN_DOT). `domainToAscii` is IDNA's ASCII form of a
 * domain, "" when it refuses it: node:url's domainToASCII on a server (this package depends on nothing). Text without
 * an "@" is only trimmed, lower-cased and NFC.
 */
export function emailKey(raw: string, domainToAscii: (domain: string) => string): string {
  const email = raw.trim().toLowerCase().normalize('NFC');
  const at = email.lastIndexOf('@');
  if (at === -1) return email;
  let domain = domainToAscii(email.slice(at + 1)) || email.slice(at + 1);
  if (DOMAIN_DOT.test(domain.slice(-1))) domain = domain.slice(0, -1);
  return `${email.slice(0, at + 1)}${domain}`;
}

/**
 * Text with each unpaired surrogate replaced by U+FFFD (String.prototype.toWellFormed): for text a parser produced,
 * which the person who sent the document cannot correct.
 */
export function withLoneSurrogatesReplaced(text: string): string {
  return text.replace(LONE_SURROGATES, '\ufffd');
}

const CONTROL_CHARACTERS_BUT_HTML_WHITESPACE = /(?![\t\n\r\f])\p{Cc}/gu;

/**
 * Text with its control characters dropped, except tab, line feed, carriage return and form feed (HTML's whitespace):
 * for pasted or extracted text (card HTML), where a stray control character is noise to drop rather than a typo to
 * refuse.
 */
export function withoutControlCharacters(text: string): string {
  return text.replace(CONTROL_CHARACTERS_BUT_HTML_WHITESPACE, '');
}

/** The scripts written without spaces between their words (Chinese, Japanese, Thai, Lao, Khmer, Burmese), as a regex class body. */
export const UNSPACED_SCRIPT_CLASS = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}`;
/** A character of a script written without spaces between its words. */
const UNSPACED_SCRIPT = new RegExp(`[${UNSPACED_SCRIPT_CLASS}]`, 'u');
/** Dictionary word segmentation (full ICU in Node; every current browser). Without it a run is one word. */
const WORD_SEGMENTER = typeof Intl === 'object' && typeof Intl.Segmenter === 'function' ? new Intl.Segmenter('und', { granularity: 'word' }) : null;

/**
 * Where the words of one run of non-whitespace start (code-unit offsets, the first 0): a run of a spaced script is one
 * word; a run holding characters of a script written without spaces is cut where its readers see words end
 * (Intl.Segmenter's word segments that are word-like), each word keeping the punctuation after it (the first also the
 * punctuation before it), so "我们今天去图书馆。" is 6 words and "Node.js的框架" 3.
 */
export function wordStartsInRun(run: string): number[] {
  if (!WORD_SEGMENTER || !UNSPACED_SCRIPT.test(run)) return [0];
  const starts = [0];
  let seenWord = false;
  for (const segment of WORD_SEGMENTER.segment(run)) {
    if (!segment.isWordLike) continue;
    if (seenWord) starts.push(segment.index);
    seenWord = true;
  }
  return starts;
}

/** Whether the text holds a character of a script written without spaces (its runs are cut by wordStartsInRun). */
export function hasUnspacedScript(text: string): boolean {
  return UNSPACED_SCRIPT.test(text);
}

// A letter or a number (any script: "3.5", "١٢", "漢"), not one of the invisible ones (the Hangul fillers are letters).
const WORD_CHARACTER = new RegExp(`(?![${INVISIBLE}])[\\p{L}\\p{N}]`, 'u');

/**
 * Whether a run of non-whitespace is a word: it holds a letter or a number (marks count with the letter they sit on).
 * Punctuation, symbols and emoji alone ("—", "&", "|", "…", "😀") are no word, nor are invisible characters.
 */
export function holdsWord(run: string): boolean {
  return WORD_CHARACTER.test(run);
}

/**
 * Words as readers count them: runs of non-whitespace holding a letter or a number (holdsWord), a run of a script
 * written without spaces (Chinese, Japanese, Thai ...) counting the words its readers see in it (wordStartsInRun). A
 * run of only punctuation, symbols or emoji (71 "—", "&" or "😀") or of invisible format or control characters
 * (zero-width space, joiners, soft hyphen, BOM) is no word, or 71 of them would make any text long enough; so is a
 * table row's " | " separator.
 */
export function wordCount(text: string): number {
  const unspaced = hasUnspacedScript(text);
  let words = 0;
  for (const run of text.split(/\s+/u)) if (holdsWord(run)) words += unspaced ? wordStartsInRun(run).length : 1;
  return words;
}

/**
 * The text's first `n` words as its readers see them, followed by "…" when it has more: runs of non-whitespace, a run of
 * a script written without spaces cut where its words start (wordStartsInRun), so a Chinese card's first words are a
 * few words, not the whole unspaced passage. Whitespace between the words kept is one space; "" for a blank text.
 */
export function leadingWords(text: string, n: number): string {
  const kept: string[] = [];
  let words = 0;
  for (const run of text.split(/\s+/u)) {
    if (run === '') continue;
    const starts = wordStartsInRun(run);
    if (words + starts.length > n) {
      const cut = run.slice(0, starts[n - words]);
      if (cut !== '') kept.push(cut);
      return `${kept.join(' ')}…`;
    }
    kept.push(run);
    words += starts.length;
  }
  return kept.join(' ');
}

/** What a card's word count counts, to follow "(found N" in an answer about the number of words. */
export const WORDS_COUNTED = 'a word holds a letter or a digit; punctuation, symbols and emoji alone are not counted';

/** Tags as stored: each value split at commas (tags are shown comma-joined), trimmed, empty ones and repeats dropped. */
export function splitTags(values: readonly string[]): string[] {
  return [...new Set(values.flatMap((value) => value.split(',')).map((tag) => tag.trim()).filter((tag) => tag.length > 0))];
}

/**
 * What is wrong with tags as splitTags leaves them, or null: more than `maxTags`, one over MAX_TAG_CHARS characters, or
 * one that breaks the free-text rule (freeTextProblem). Meant to follow "tag_set: " in an answer.
 */
export function tagsProblem(tags: readonly string[], maxTags = MAX_TAGS): string | null {
  if (tags.length > maxTags) return `at most ${maxTags} tags`;
  if (tags.some((t) => characterCount(t) > MAX_TAG_CHARS)) return `each tag at most ${MAX_TAG_CHARS} characters`;
  // Tags are shown to other people beside the card, and filter searches: the rule of names.
  for (const tag of tags) {
    const problem = nameProblem(tag);
    if (problem) return problem;
  }
  return null;
}

/**
 * The WHATWG URL parser that Node and every browser provide; declared here because this package type-checks
 * without the Node and DOM libraries.
 */
declare const URL: new (input: string) => { readonly protocol: string; readonly hostname: string };

/** What can be wrong with a card link. */
export type LinkProblem = 'too-long' | 'not-http' | 'invisible-character' | 'space' | 'backslash' | 'not-full-url' | 'credentials' | 'host' | 'look-alike-host';

// A DNS label as IDNA leaves it (RFC 1123): 1-63 letters, digits or hyphens, no hyphen at either end.
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
// An IPv4 address as the URL parser writes every spelling it takes ("127.1", "0x7f.0.0.1"), and an IPv6 literal.
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/**
 * Whether a URL's host, as the URL parser gives it (`hostname`: IDNA applied, lower case, an IP address rewritten),
 * is a DNS name a resolver can look up or an IP literal: labels of 1-63 letters, digits or hyphens, no hyphen at
 * either end, at most 253 characters (one dot may end it). The parser alone takes "x..com", "-x-.com", labels of 64
 * characters and "_" or "!".
 */
export function isValidUrlHost(hostname: string): boolean {
  if (hostname.startsWith('[') || IPV4.test(hostname)) return true;
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return name.length > 0 && name.length <= 253 && name.split('.').every((label) => DNS_LABEL.test(label));
}

// "http://" or "https://" (any case), then the authority up to the path, query or fragment.
const FULL_HTTP_URL = /^https?:\/\/([^/?#]*)/i;

/** The host of an authority as written ("user@host:port", "[::1]:80"): empty when none is written. */
function hostOf(authority: string): string {
  const hostAndPort = authority.slice(authority.lastIndexOf('@') + 1);
  if (hostAndPort.startsWith('[')) return hostAndPort.slice(0, hostAndPort.indexOf(']') + 1);
  const colon = hostAndPort.indexOf(':');
  return colon === -1 ? hostAndPort : hostAndPort.slice(0, colon);
}

/**
 * What is wrong with a card link, or null when it is fine: empty (no link), or a well-formed absolute http(s) URL as
 * written, of at most MAX_LINK_CHARS, with whitespace around it trimmed. As written: "http://" or "https://" then a
 * host (the URL parser would also take "https:/example.com", "https:///example.com" or "https:\\example.com" and
 * open https://example.com/), no space, backslash (read as "/") or invisible character anywhere (a reader sees none, a
 * URL parser percent-encodes one into the address opened, and a trailing BOM, which trimming removes, is refused too);
 * no user name or password before the host; a host that is a DNS name or an IP literal (isValidUrlHost). The profile's
 * website takes the same rule (identity's normalizeWebsite).
 */
export function linkProblem(link: string): LinkProblem | null {
  const trimmed = link.trim();
  if (trimmed.length === 0 && !INVISIBLE_CHARACTER.test(link)) return null;
  if (trimmed.length > MAX_LINK_CHARS) return 'too-long';
  if (INVISIBLE_CHARACTER.test(link)) return 'invisible-character';
  if (/\s/u.test(trimmed)) return 'space';
  let hostname: string;
  try {
    const url = new URL(trimmed);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'not-http';
    hostname = url.hostname;
  } catch {
    return 'not-http';
  }
  if (trimmed.includes('\\')) return 'backslash';
  const written = FULL_HTTP_URL.exec(trimmed);
  if (!written || hostOf(written[1]!).length === 0) return 'not-full-url';
  // "https://user:secret@host/", even "https://@host/": a secret shown to everyone, and a host readers misread.
  if (written[1]!.includes('@')) return 'credentials';
  if (!isValidUrlHost(hostname)) return 'host';
  // Shown as written, opened as IDNA maps it: a written host that reads as another one is refused (idnHostProblem).
  if (idnHostProblem(writtenHost(written[1]!)) !== null) return 'look-alike-host';
  return null;
}

/** The host of a link's authority as a reader sees it: percent-escapes decoded (the URL parser decodes them too). */
function writtenHost(authority: string): string {
  const host = hostOf(authority);
  try {
    return decodeURIComponent(host);
  } catch {
    return host;
  }
}

/**
 * What is wrong with a card link (linkProblem) as the text that follows "link: " in an answer, or null when it is
 * fine. Names an invisible character as U+XXXX.
 */
export function linkProblemText(link: string): string | null {
  const problem = linkProblem(link);
  switch (problem) {
    case null:
      return null;
    case 'too-long':
      return `must be at most ${MAX_LINK_CHARS} characters`;
    case 'not-http':
      return 'must be an http or https URL';
    case 'invisible-character':
      return `must be an http or https URL without invisible characters (found ${codePointName(INVISIBLE_CHARACTER.exec(link)![0])})`;
    case 'space':
      return 'must be an http or https URL without spaces';
    case 'backslash':
      return 'must be an http or https URL without backslashes';
    case 'not-full-url':
      return 'must be an http or https URL written in full, "http://" or "https://" then a host, such as https://example.com/page';
    case 'credentials':
      return 'must be an http or https URL without a user name or password ("user:password@" before the host)';
    case 'host':
      return `must be an http or https URL whose host is a domain name (labels of 1 to 63 letters, digits or hyphens, no hyphen at either end, no empty label, at most 253 characters) or an IP address (found "${new URL(link.trim()).hostname}")`;
    case 'look-alike-host':
      return `must be an http or https URL whose host reads as the site it opens: ${idnHostProblem(writtenHost(FULL_HTTP_URL.exec(link.trim())![1]!))} (a link is shown as written; write the host in ASCII or in punycode, "xn--...", to link to it anyway)`;
  }
}

// ---- Internationalized host names (links, websites, shown e-mail domains) ----------------------------------------

// The dots IDNA reads as label separators (UTS #46 maps the ideographic and fullwidth full stops to ".").
const HOST_LABEL_SEPARATOR = /[.\u3002\uff0e\uff61]/u;
const ASCII_ONLY = /^[\x00-\x7f]*$/;
const HOST_LABEL_CHARACTER = /^[\p{L}\p{M}\p{Nd}-]$/u;
const LATIN = /^\p{scx=Latin}$/u;
// Cyrillic and Greek letters that look like Latin ones in common fonts (after Chromium's IDN spoof checker), with the
// Latin letter each reads as: a label written only with them (and digits or hyphens) reads as a Latin name.
const CYRILLIC_LATIN_LOOK_ALIKES: ReadonlyMap<string, string> = new Map(Object.entries({ а: 'a', ъ: 'b', ь: 'b', с: 'c', ԁ: 'd', е: 'e', ҽ: 'e', һ: 'h', і: 'i', ј: 'j', ӏ: 'l', п: 'n', о: 'o', р: 'p', ԛ: 'q', г: 'r', ѕ: 's', ѵ: 'v', ԝ: 'w', ѡ: 'w', х: 'x', у: 'y' }));
const GREEK_LATIN_LOOK_ALIKES: ReadonlyMap<string, string> = new Map(Object.entries({ α: 'a', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', γ: 'y', ω: 'w' }));
// Top-level domains under which whole-Cyrillic or whole-Greek names are the language's own (ASCII ccTLDs of countries
// writing the script; an IDN top-level label in the script itself counts too).
const CYRILLIC_TLDS = new Set(['bg', 'by', 'kg', 'kz', 'mk', 'mn', 'rs', 'ru', 'su', 'tj', 'ua', 'uz']);
const GREEK_TLDS = new Set(['gr', 'cy']);
// Katakana and Han characters that look like "/", "-" or "\\" (ノ ソ ゾ ン ー 一 丶 丿 乀): beside Latin letters they make
// "example.comノlogin" read as a path.
const SLASH_OR_DASH_LIKE = /[\u30ce\u30bd\u30be\u30f3\u30fc\u4e00\u4e36\u4e3f\u4e40]/u;

/** What is wrong with one non-ASCII host label (lower case, NFC), or null: the rule of idnHostProblem. */
function idnLabelProblem(label: string, topLabel: string): string | null {
  let systems: Set<string> | null = null;
  let narrowedBy: { character: string; names: string[] } | null = null;
  let firstDigit: { character: string; zero: number } | null = null;
  let hasLatin = false;
  for (const character of label) {
    if (INVISIBLE_CHARACTER.test(character)) return `"${label}" holds an invisible character (${codePointName(character)})`;
    if (!HOST_LABEL_CHARACTER.test(character)) return `"${label}" holds ${shown(character)}, which is no letter, digit or hyphen (a sign that can pass for "/", "." or another one)`;
    if (character.normalize('NFKC') !== character) return `"${label}" holds the compatibility character ${shown(character)} (write "${character.normalize('NFKC')}")`;
    if (DECIMAL_DIGIT.test(character)) {
      const zero = digitZero(character);
      if (!firstDigit) firstDigit = { character, zero };
      else if (firstDigit.zero !== zero) return `"${label}" mixes digits of different systems (${shown(firstDigit.character)} and ${shown(character)})`;
    }
    const scripts = scriptsOf(character);
    if (!scripts) continue;
    // UTS #39 "highly restrictive": one script, or Latin with Han and Hiragana/Katakana, Han and Bopomofo, Han and Hangul.
    if (LATIN.test(character)) {
      hasLatin = true;
      ['Japanese', 'Korean', 'Han_with_Bopomofo'].forEach((s) => scripts.systems.add(s));
    }
    const common: Set<string> = systems === null ? scripts.systems : new Set([...systems].filter((s) => scripts.systems.has(s)));
    if (common.size === 0) {
      const earlier = narrowedBy!;
      return `"${label}" mixes scripts: ${earlier.names.join('/')} ${shown(earlier.character)} and ${scripts.names.join('/')} ${shown(character)} (one script per label; Latin may go with Chinese, Japanese or Korean)`;
    }
    if (systems === null || common.size < systems.size) narrowedBy = { character, names: scripts.names };
    systems = common;
  }
  const slashLike = hasLatin ? SLASH_OR_DASH_LIKE.exec(label) : null;
  if (slashLike) return `"${label}" holds ${shown(slashLike[0])} beside Latin letters, where it reads as "/" or "-"`;
  for (const [lookAlikes, tlds, script] of [
    [CYRILLIC_LATIN_LOOK_ALIKES, CYRILLIC_TLDS, 'Cyrillic'],
    [GREEK_LATIN_LOOK_ALIKES, GREEK_TLDS, 'Greek'],
  ] as const) {
    const letters = [...label].filter((c) => c !== '-' && !DECIMAL_DIGIT.test(c));
    if (letters.length === 0 || !letters.every((c) => lookAlikes.has(c))) continue;
    if (tlds.has(topLabel) || (!ASCII_ONLY.test(topLabel) && [...topLabel].some((c) => scriptsOf(c)?.names.includes(script)))) continue;
    const reading = [...label].map((c) => lookAlikes.get(c) ?? c).join('');
    return `"${label}" is written in ${script} letters that all look like Latin ones (it reads as "${reading}")`;
  }
  return null;
}

/**
 * What makes a host name (as written, or as url.domainToUnicode gives it) read as another one, or null: the IDN
 * display policy of browsers (Chromium's and Firefox's, after UTS #39), by label. An ASCII label (punycode "xn--..."
 * too, which shows as what it is) passes; a label with other characters must hold only letters, combining marks,
 * digits of one system and hyphens (no "⁄" U+2044, "∕" U+2215, "／" U+FF0F, "․" U+2024 or other signs, no fullwidth or
 * other compatibility characters), be in one script (UTS #39 "highly restrictive": Latin may go with Han and
 * Hiragana/Katakana, with Han and Bopomofo, or with Han and Hangul; Latin with Cyrillic or Greek is refused), hold no
 * Katakana or Han character that reads as "/" or "-" beside Latin letters, and not be a whole-label Cyrillic or Greek
 * look-alike of a Latin name ("аррӏе") unless the top-level domain is of that script's countries (.ru, .рф, .gr ...).
 * The message names the label and the fault. One policy for card links, websites (both refuse, being shown as
 * written) and shown e-mail domains (shown in ASCII instead).
 */
export function idnHostProblem(host: string): string | null {
  if (ASCII_ONLY.test(host)) return null;
  const labels = host.toLowerCase().normalize('NFC').split(HOST_LABEL_SEPARATOR);
  if (labels.length > 1 && labels[labels.length - 1] === '') labels.pop();
  const topLabel = labels[labels.length - 1] ?? '';
  for (const label of labels) {
    if (ASCII_ONLY.test(label)) continue;
    const problem = idnLabelProblem(label, topLabel);
    if (problem) return problem;
  }
  return null;
}

// ---- Usernames -------------------------------------------------------------------------------------------------

/** Combining marks after one letter at most: enough for Indic, Thai, Hebrew points and Tibetan stacks, not for "Zalgo". */
export const MAX_USERNAME_MARKS_IN_A_ROW = 4;

const USERNAME_CHARACTER = /^[\p{L}\p{M}\p{Nd}_-]$/u;
const LETTER = /^\p{L}$/u;
const MARK = /^\p{M}$/u;
const DECIMAL_DIGIT = /^\p{Nd}$/u;
// The Arabic tatweel (kashida) is a letter (Lm) that only stretches the joining between two letters, so "مـحمد",
// "مـــحمد" and "محمد" are one name to a reader, and repeating it makes any number of look-alikes: refused.
const TATWEEL = '\u0640';
// Hangul compatibility jamo (ㄱ, ㅋ, ㅏ...) are how Korean keyboards type lone jamo ("ㅋㅋ"): NFKC maps them to the
// conjoining jamo, which do not stand alone, so they are the one compatibility form a username keeps.
const HANGUL_COMPATIBILITY_JAMO = /^[\u3131-\u318e]$/u;
// Script_Extensions Common or Inherited only: goes with any script (ASCII digits, modifier letters, most combining marks).
const ANY_SCRIPT = /^[\p{scx=Zyyy}\p{scx=Zinh}]$/u;

// Every script of Unicode 17 by its property value name. A browser whose engine predates one does not know its name
// (new RegExp throws): that script is left out there and its letters count as one script of their own; the identity
// service, on Node, knows them all and decides.
const SCRIPT_NAMES = `Latin Han Hiragana Katakana Hangul Cyrillic Greek Arabic Hebrew Devanagari Thai Bengali Tamil Telugu Kannada
  Malayalam Gujarati Gurmukhi Oriya Sinhala Armenian Georgian Ethiopic Lao Khmer Myanmar Tibetan Mongolian Bopomofo Syriac
  Thaana Nko Cherokee Canadian_Aboriginal Tifinagh Yi Vai Adlam Ahom Anatolian_Hieroglyphs Avestan Balinese Bamum Bassa_Vah
  Batak Bhaiksuki Brahmi Braille Buginese Buhid Carian Caucasian_Albanian Chakma Cham Chorasmian Coptic Cuneiform Cypriot
  Cypro_Minoan Deseret Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic Glagolitic Gothic Grantha Gunjala_Gondi
  Hanifi_Rohingya Hanunoo Hatran Imperial_Aramaic Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kawi Kayah_Li
  Kharoshthi Khitan_Small_Script Khojki Khudawadi Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar Mandaic
  Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mro
  Multani Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian
  Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Osage Osmanya
  Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Sharada Shavian
  Siddham SignWriting Sogdian Sora_Sompeng Soyombo Sundanese Syloti_Nagri Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri
  Tangsa Tangut Tirhuta Toto Ugaritic Vithkuqi Wancho Warang_Citi Yezidi Zanabazar_Square Garay Gurung_Khema Kirat_Rai Ol_Onal
  Sunuwar Todhri Tulu_Tigalari Beria_Erfe Sidetic Tai_Yo Tolong_Siki`
  .split(/\s+/)
  .filter((name) => name.length > 0);

const SCRIPTS: ReadonlyArray<{ name: string; test: RegExp }> = SCRIPT_NAMES.flatMap((name) => {
  try {
    return [{ name, test: new RegExp(`^\\p{scx=${name}}$`, 'u') }];
  } catch {
    return [];
  }
});

/**
 * The scripts a character is written in (its Script_Extensions, so the Japanese long-vowel mark "ー" is Hiragana and
 * Katakana, not Common), each with the writing systems it belongs to (UTS #39's augmented script sets: Han belongs to
 * Japanese, Korean and Chinese with Bopomofo; Hiragana and Katakana to Japanese; Hangul to Korean); null for Common and
 * Inherited characters, which go with any script.
 */
function scriptsOf(character: string): { names: string[]; systems: Set<string> } | null {
  if (ANY_SCRIPT.test(character)) return null;
  const names = SCRIPTS.filter((script) => script.test.test(character)).map((script) => script.name);
  if (names.length === 0) names.push('Unknown');
  const systems = new Set<string>(names);
  for (const name of names) {
    if (name === 'Han') ['Japanese', 'Korean', 'Han_with_Bopomofo'].forEach((s) => systems.add(s));
    if (name === 'Hiragana' || name === 'Katakana') systems.add('Japanese');
    if (name === 'Hangul') systems.add('Korean');
    if (name === 'Bopomofo') systems.add('Han_with_Bopomofo');
  }
  return { names, systems };
}

/** The zero of a decimal digit's system: digits (Nd) come in runs of ten, 0 to 9, one run after another. */
function digitZero(digit: string): number {
  const code = digit.codePointAt(0)!;
  let start = code;
  while (start > 0 && DECIMAL_DIGIT.test(String.fromCodePoint(start - 1))) start--;
  return start + Math.floor((code - start) / 10) * 10;
}

const shown = (character: string): string => `"${character}" (${codePointName(character)})`;

/**
 * What is wrong with a username (in NFC: callers normalize first), or null when it may be one; meant to follow
 * "username: " in an answer. The rule, in the spirit of Unicode's identifier security (UTS #39):
 * - 3 to 32 characters, counted in code points of the NFC form (as characterCount: "김철수" is 3, "Zoë" is 3);
 * - letters (L), decimal digits (Nd), "_" and "-", and combining marks (M) after a letter, at most
 *   MAX_USERNAME_MARKS_IN_A_ROW in a row;
 * - nothing invisible (format characters, default-ignorables such as joiners and variation selectors);
 * - no compatibility characters (those NFKC changes: fullwidth "ａ", ligatures, mathematical "𝐚", circled or
 *   superscript letters), which copy an ordinary letter; Hangul compatibility jamo excepted;
 * - one script (characters of Common and Inherited go with any), except that Han may be written with Hiragana and
 *   Katakana (Japanese), with Hangul (Korean) or with Bopomofo: "pаypal" with a Cyrillic "а" is refused;
 * - digits of one system: "12" and "١٢" but not "1٢";
 * - no Arabic tatweel (U+0640), which only stretches a joining.
 */
export function usernameProblem(name: string): string | null {
  // fitsCharacters first: a huge value is refused by its size, never spread into characters.
  if (!fitsCharacters(name, MAX_USERNAME_CHARS)) return `must be ${USERNAME_RULE}`;
  const characters = [...name];
  if (characters.length < MIN_USERNAME_CHARS) return `must be ${USERNAME_RULE}`;
  let marksInARow = 0;
  let afterLetter = false;
  // The character that last narrowed the scripts the name may be in: the one to name beside a character that fits none.
  let narrowedBy: { character: string; names: string[] } | null = null;
  let systems: Set<string> | null = null;
  let firstDigit: { character: string; zero: number } | null = null;
  for (const character of characters) {
    if (INVISIBLE_CHARACTER.test(character)) return `must not contain invisible characters (found ${codePointName(character)})`;
    if (!USERNAME_CHARACTER.test(character)) return `must be ${USERNAME_RULE}; ${shown(character)} is not one of them`;
    if (character === TATWEEL) return `must not contain the Arabic tatweel ${shown(character)}, which only stretches the joining of two letters: write the name without it`;
    if (character.normalize('NFKC') !== character && !HANGUL_COMPATIBILITY_JAMO.test(character)) {
      return `must not contain compatibility characters such as fullwidth, styled or circled letters (found ${shown(character)}, write "${character.normalize('NFKC')}" instead)`;
    }
    if (MARK.test(character)) {
      if (!afterLetter) return `a combining mark must follow a letter (found ${shown(character)})`;
      if (++marksInARow > MAX_USERNAME_MARKS_IN_A_ROW) return `must not stack more than ${MAX_USERNAME_MARKS_IN_A_ROW} combining marks on one letter`;
    } else {
      marksInARow = 0;
      afterLetter = LETTER.test(character);
    }
    if (DECIMAL_DIGIT.test(character)) {
      const zero = digitZero(character);
      if (!firstDigit) firstDigit = { character, zero };
      else if (firstDigit.zero !== zero) return `must not mix digits of different systems (found ${shown(firstDigit.character)} and ${shown(character)})`;
    }
    const scripts = scriptsOf(character);
    if (!scripts) continue;
    const common: Set<string> = systems === null ? scripts.systems : new Set([...systems].filter((s) => scripts.systems.has(s)));
    if (common.size === 0) {
      const earlier = narrowedBy!;
      return `must be written in one script (Han may go with Hiragana, Katakana or Hangul): found ${earlier.names.join('/')} ${shown(earlier.character)} and ${scripts.names.join('/')} ${shown(character)}`;
    }
    if (systems === null || common.size < systems.size) narrowedBy = { character, names: scripts.names };
    systems = common;
  }
  return null;
}

/**
 * A username's case fold, so that no two names differ only in case: the NFC form case-folded the way Unicode's full
 * case folding does ("Zoë" and "ZOË", "Straße" and "STRASSE", "ΣΊΣΥΦΟΣ" and "σίσυφος" each share one). Lower, upper,
 * then lower again: upper-casing folds what lower-casing keeps apart ("ß" and "ss", the final and the other sigma), the
 * first lower-casing brings the capital "ẞ" to "ß" first. For ASCII it is plain lower case. Only for comparing: the
 * name is stored as written. Identity's usernameKey, the key a username is unique under, folds, takes the confusable
 * skeleton (UTS #39), and folds again.
 */
export function usernameCaseFold(name: string): string {
  return name.normalize('NFC').toLowerCase().toUpperCase().toLowerCase().normalize('NFC');
}
