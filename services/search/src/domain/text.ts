import { domainToUnicode } from 'node:url';
import { usernameCaseFold } from '@cards/card-rules';
import type { ConverterFunction, ConverterOptions } from 'opencc-js';

/** Text rules shared by the embedders and the full-text index: one tokenizer, pg_trgm-style trigrams. */

/**
 * A word: a letter or digit, then letters, digits and combining marks (an inner apostrophe kept). The marks belong to
 * the word: in Devanagari, Bengali, Tamil and the other Indic scripts the vowel signs and the virama are marks
 * (हिन्दी is ह ि न ् द ी), so a word cut at each mark fell apart into letters that other words share.
 */
export const WORD = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*(?:'\p{L}[\p{L}\p{M}]*)?/gu;

/** Lower-cased words of a text (letters and digits with their combining marks, an inner apostrophe kept), in order; words over 40 UTF-16 units are left out. */
export function words(text: string): string[] {
  const out: string[] = [];
  for (const match of text.toLowerCase().matchAll(WORD)) {
    const word = match[0];
    if (word.length <= 40) out.push(word);
  }
  return out;
}

/**
 * Longest word full-text search keeps whole, in characters (code points). A longer one (a German compound, a chemical
 * name, a long identifier or a URL's path part written as one word) is indexed and looked for as its first
 * SEARCH_WORD_CHARACTERS characters, so it is found (typos included) while a run of letters thousands long (a pasted
 * key, base64) is one word of bounded size in the vocabulary, not a trigram list as long as itself.
 */
export const SEARCH_WORD_CHARACTERS = 64;

/** A search word no longer than SEARCH_WORD_CHARACTERS characters: its start when longer, never a lone surrogate. */
function searchWord(word: string): string {
  if (word.length <= SEARCH_WORD_CHARACTERS) return word;
  let end = 0;
  for (let kept = 0; kept < SEARCH_WORD_CHARACTERS && end < word.length; kept++) end += word.codePointAt(end)! > 0xffff ? 2 : 1;
  return word.slice(0, end);
}

/**
 * A symbol standing as a word of its own: an emoji or another pictograph (Extended_Pictographic), or another sign of
 * Unicode's category So (★, ♥, ✓, °, ⚠). Full-text search indexes each one alone (a query of "🌊🔥" looks for both, in
 * a row for the phrase), dropping what only shapes it (variation selectors, skin tones, the zero-width joiner).
 */
const SYMBOL = /[\p{Extended_Pictographic}\p{So}]/u;
const SYMBOL_OR_WORD = /[\p{Extended_Pictographic}\p{So}]|[\p{L}\p{N}][\p{L}\p{N}\p{M}]*(?:'\p{L}[\p{L}\p{M}]*)?/gu;
const SYMBOL_WORD = /^[\p{Extended_Pictographic}\p{So}]$/u;

/**
 * Whether a search word is a symbol (see SYMBOL): matched only as itself (no misspelling of one is another), and
 * never in the vocabulary misspellings are corrected to.
 */
export function isSymbolWord(word: string): boolean {
  return word.length <= 2 && word.charCodeAt(0) > 0x7f && SYMBOL_WORD.test(word);
}

/** The search words of a folded text without unspaced scripts: words (long ones cut, searchWord) and symbols. */
function foldedTextWords(text: string, ascii: boolean): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(!ascii && SYMBOL.test(text) ? SYMBOL_OR_WORD : WORD)) out.push(searchWord(match[0]));
  return out;
}

const ASCII = /^[\x00-\x7f]*$/;

/**
 * How tag and link filters compare a tag or link, stored or asked for: lower-cased and in Unicode NFC, so "café" typed
 * composed or decomposed is one tag. The gateway sends text in NFC; this also covers tags and links stored decomposed
 * before it did (the embedded index builds its lists at start; Elasticsearch holds them as written, see decisions.md).
 */
export function filterForm(text: string): string {
  const lower = text.toLowerCase();
  return ASCII.test(lower) ? lower : lower.normalize('NFC');
}

/**
 * How the link filter compares a link, stored or asked for (any part of one: a bare host, a host or path fragment):
 * filterForm of the link as a browser shows it. Browsers show Unicode hosts and decoded paths but copy punycode and
 * percent-encoded ones, so "xn--mnchen-3ya.de/wiki/M%C3%BCnchen" and "münchen.de/wiki/München" are one link: runs of
 * %XX are decoded where their bytes are UTF-8 (other bytes, and %25 itself, stay encoded, so the form of a form is
 * itself), and each whole `xn--` label is spelled in Unicode (domainToUnicode). A label cut short in a filter
 * ("xn--mnch") is not decoded and so no longer finds the link spelled in punycode.
 */
export function linkFilterForm(text: string): string {
  const lower = filterForm(text);
  if (!lower.includes('%') && !lower.includes('xn--')) return lower;
  return filterForm(lower.replace(PERCENT_RUN, percentDecoded).replace(PUNYCODE_LABEL, unicodeLabel));
}

const PERCENT_RUN = /(?:%[0-9a-f]{2})+/g;
/** A whole punycode label: not preceded or followed by a character a label holds. */
const PUNYCODE_LABEL = /(?<![a-z0-9-])xn--[a-z0-9-]+(?![a-z0-9-])/g;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** A run of %XX with each UTF-8 character decoded; bytes that are no UTF-8 (and %25) kept as written. */
function percentDecoded(run: string): string {
  const bytes = Buffer.from(run.replace(/%/g, ''), 'hex');
  let out = '';
  for (let i = 0; i < bytes.length; ) {
    const lead = bytes[i]!;
    const length = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    let decoded: string | undefined;
    if (length > 0 && lead !== 0x25 && i + length <= bytes.length) {
      try {
        decoded = strictUtf8.decode(bytes.subarray(i, i + length));
      } catch {
        decoded = undefined;
      }
    }
    if (decoded === undefined) {
      out += `%${lead.toString(16).padStart(2, '0')}`;
      i += 1;
    } else {
      out += decoded;
      i += length;
    }
  }
  return out;
}

/** A punycode label in Unicode, or as written when it does not decode (domainToUnicode answers ''). */
function unicodeLabel(label: string): string {
  return domainToUnicode(label) || label;
}

/**
 * How the tag filter compares a tag, stored or asked for: filterForm, then case-folded as usernames are
 * (usernameCaseFold: lower case of its upper case, JavaScript having no case fold), so a tag typed in capitals or in lower case is one
 * tag in every script: "STRASSE" is "Straße" (ß folds to ss), "σίσυφοσ" is "ΣΊΣΥΦΟΣ" (final sigma). A dotted "i"
 * (the lower case of Turkish "İ": i and U+0307) is a plain "i", and "ı" a plain "i" too (its capital is "I"), so
 * "istanbul" is "İstanbul" and "IŞIK" is "ışık", as full-text search reads them. Other marks stay ("Zoë" is not "Zoe").
 */
export function tagFilterForm(tag: string): string {
  const form = filterForm(tag);
  return ASCII.test(form) ? form : usernameCaseFold(form).replace(/i\u0307/g, 'i').normalize('NFC');
}
/**
 * Combining diacritical marks (accents, umlauts, cedillas, ...): the blocks folding drops after decomposition; and the
 * optional marks of Arabic (short vowels, shadda, sukun, the superscript alef, and the tatweel that only stretches a
 * word) and of Hebrew (vowel points, dagesh, cantillation), which most text leaves out, so a vocalized كِتَابٌ is
 * كتاب and בְּרֵאשִׁית is בראשית, as Lucene's Arabic normalizer reads them. Marks that are letters of a word (the vowel
 * signs of Indic scripts) stay.
 */
const DIACRITICS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\u064b-\u065f\u0670\u0640\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7]/g;
/**
 * Lower-case letters that decomposition leaves whole, spelled out as their plain Latin letters; and the music sharp
 * sign (U+266F), which C♯ and F♯ are named with and which keyboards write as # (C# is how the language is typed), so
 * "C♯" is the name C# (symbolNames), not the letter C.
 */
const LETTERS_WITHOUT_DECOMPOSITION: Record<string, string> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', đ: 'd', ð: 'd', ł: 'l', þ: 'th', ı: 'i', '\u266f': '#' };

/**
 * The text lower-cased with its diacritics folded, as full-text search compares words: compatibility decomposition
 * (NFKD: ligatures and full-width forms spelled out too), combining diacritical marks dropped, the few letters that do
 * not decompose spelled out (Straße -> strasse; ♯ is #), then recomposed (NFC: Hangul and other marks stay as they were).
 * So "café", "Cafe" and "CAFÉ" are one word; "Zürich" is "zurich". ASCII text is returned lower-cased only.
 */
export function foldedText(text: string): string {
  const lower = text.toLowerCase();
  if (ASCII.test(lower)) return lower;
  const folded = lower
    .normalize('NFKD')
    .replace(DIACRITICS, '')
    .replace(/[ßæœøđðłþı\u266f]/g, (c) => LETTERS_WITHOUT_DECOMPOSITION[c]!);
  return (DEVANAGARI.test(folded) ? hindiSpelling(folded) : folded).normalize('NFC');
}

const DEVANAGARI = /[\u0900-\u097f]/;

/**
 * Hindi written either way as one spelling, as Lucene's Hindi normalizer reads it: a nasal consonant with a virama
 * before another consonant is the anusvara (हिन्दी and हिंदी, सुन्दर and सुंदर: both spellings are in common use), the
 * candrabindu is the anusvara (हँसी, हंसी), and the nukta is dropped (ज़ and ज, फ़ and फ: often left out in typing;
 * after NFKD the precomposed letters are a base and the nukta too).
 */
function hindiSpelling(text: string): string {
  return text
    .replace(/\u093c/g, '')
    .replace(/\u0901/g, '\u0902')
    .replace(/[\u0919\u091e\u0923\u0928\u092e]\u094d(?=[\u0915-\u0939])/g, '\u0902');
}

/** A letter or digit of a script written without spaces between words that is split into character bigrams. */
const BIGRAM_CHAR = String.raw`(?:(?=[\p{L}\p{N}])[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}])`;
/** A character of a script written without spaces that a dictionary segments (Intl.Segmenter): Thai, Lao, Khmer, Myanmar. */
const SEGMENTED_CHAR = String.raw`[\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}]`;
/** Whether a (folded) text holds any character of an unspaced script: only then is it tokenized by unspacedWords(). */
const UNSPACED = new RegExp(`${BIGRAM_CHAR}|${SEGMENTED_CHAR}`, 'u');
/** A run of one unspaced script, or a word of other letters and digits (an inner apostrophe kept), as WORD. */
const UNSPACED_TOKEN = new RegExp(
  `(${BIGRAM_CHAR}+)|(${SEGMENTED_CHAR}+)|[\\p{Extended_Pictographic}\\p{So}]|(?!${BIGRAM_CHAR}|${SEGMENTED_CHAR})[\\p{L}\\p{N}](?:(?!${BIGRAM_CHAR}|${SEGMENTED_CHAR})[\\p{L}\\p{N}\\p{M}])*(?:'(?!${BIGRAM_CHAR}|${SEGMENTED_CHAR})\\p{L}(?:(?!${BIGRAM_CHAR}|${SEGMENTED_CHAR})[\\p{L}\\p{M}])*)?`,
  'gu',
);
const CJK_WORD = new RegExp(`^${BIGRAM_CHAR}`, 'u');
let segmenter: Intl.Segmenter | undefined;

/**
 * Words of a folded text holding unspaced scripts (see decisions.md, "Full-text search of Chinese and Japanese"): each
 * run of Han, Hiragana and Katakana becomes its overlapping character bigrams (a run of one character stays whole),
 * as Lucene's CJKAnalyzer does, so any two or more characters of a passage are found as the phrase of their bigrams;
 * a run of Thai, Lao, Khmer or Myanmar is split into words by ICU's dictionary (Intl.Segmenter); other words as words().
 */
function unspacedWords(text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(UNSPACED_TOKEN)) {
    if (match[1] !== undefined) {
      const chars = Array.from(match[1]);
      if (chars.length === 1) out.push(chars[0]!);
      for (let i = 1; i < chars.length; i++) out.push(chars[i - 1]! + chars[i]!);
    } else if (match[2] !== undefined) {
      segmenter ??= new Intl.Segmenter('und', { granularity: 'word' });
      for (const part of segmenter.segment(match[2])) if (part.isWordLike) out.push(searchWord(part.segment));
    } else out.push(searchWord(match[0]));
  }
  return out;
}

/**
 * Whether a search word is a Han, Hiragana or Katakana bigram (or single character): no typo tolerance applies to it,
 * since one character changed, added or dropped makes another word, not a misspelling.
 */
export function isCjkWord(word: string): boolean {
  return CJK_WORD.test(word);
}

const SOFT_HYPHEN = '\u00ad';

/** Whether a search word is one Han, Hiragana or Katakana character (a one-character query or run). */
export function isCjkCharacter(word: string): boolean {
  return word.length <= 2 && word.charCodeAt(0) > 0x7f && isCjkWord(word) && Array.from(word).length === 1;
}

/** Whether a search word is a Han, Hiragana or Katakana bigram (as unspacedWords() makes them). */
export function isCjkBigram(word: string): boolean {
  return word.length <= 4 && word.charCodeAt(0) > 0x7f && isCjkWord(word) && Array.from(word).length === 2;
}

/**
 * Most bigrams a one-character Chinese or Japanese query word stands for. Text is indexed as bigrams (a character
 * alone only as a run of one), so a query of one character (书 "book", 人, 水: whole words) matches the vocabulary
 * bigrams holding it (的书, 书馆, ...), the ones the most cards the reader may see hold, as well as itself: the
 * bound keeps a common character (的, 是) from making the query hundreds of words. A card holding only a rarer bigram
 * of a very common character is then not found by that character alone (decisions.md).
 */
export const CJK_CHARACTER_BIGRAMS = 64;

/**
 * The bigrams a one-character query word stands for (see CJK_CHARACTER_BIGRAMS): of the given ones, those holding the
 * character that some card the reader may see holds, the most frequent first (ties by spelling), at most
 * CJK_CHARACTER_BIGRAMS. Both full-text indexes use this rule.
 */
export function characterBigrams<T extends { word: string; frequency: number }>(character: string, candidates: readonly T[]): T[] {
  const holding = candidates.filter((c) => c.frequency > 0 && c.word !== character && c.word.includes(character) && isCjkBigram(c.word));
  holding.sort((a, b) => b.frequency - a.frequency || (a.word < b.word ? -1 : a.word > b.word ? 1 : 0));
  return holding.slice(0, CJK_CHARACTER_BIGRAMS);
}

/** A Hangul syllable (precomposed, U+AC00-U+D7A3): what Korean text is written in, and what foldedText() leaves. */
const HANGUL_SYLLABLE = /[\uac00-\ud7a3]/;
const HANGUL_SYLLABLES = /[\uac00-\ud7a3]/g;

/**
 * Korean particles (josa), the commonest pairs of them and the plural 들, written after a noun without a space:
 * 학교에서 is 학교 + 에서, 학교를 is 학교 + 를, 사람들이 is 사람 + 들 + 이.
 */
const KOREAN_PARTICLES = [
  '에서부터', '으로부터', '에게서는', '한테서는',
  '에서는', '에서도', '에서만', '에게서', '에게는', '에게도', '한테서', '한테는', '으로는', '으로도', '으로써', '으로서', '께서는', '까지는', '까지도', '부터는', '이라도', '이라고', '이라는',
  '에서', '에게', '한테', '께서', '으로', '로써', '로서', '로는', '에는', '에도', '에만', '까지', '부터', '처럼', '보다', '마저', '조차', '이랑', '하고', '와는', '과는', '이나', '이며', '밖에', '라도', '라고', '라는',
  '을', '를', '은', '는', '이', '가', '의', '에', '도', '만', '로', '와', '과', '랑', '나', '께', '들',
];
/** A word ending in a particle, with a letter before it. The match starting first is the longest particle: 학교에서 loses 에서. */
const KOREAN_PARTICLE_ENDING = new RegExp(`(?<=[\\p{L}\\p{N}])(?:${KOREAN_PARTICLES.join('|')})$`, 'u');

/**
 * What a one-syllable stem is indexed and looked for as: the stem behind this mark, a word no text gives (a word is
 * letters and digits), so a one-syllable query word meets a one-syllable stem only at KOREAN_SYLLABLE_STEM_MATCH.
 */
const SYLLABLE_STEM_MARK = '~';

/** Conjoining Hangul jamo: what Korean words are indexed in. */
const JAMO = /[\u1100-\u11ff]/;

/**
 * Whether an indexed word is one of indexWords' extra forms (a Korean word as written or a shorter form of it, a marked
 * one-syllable stem), never a search word: such a word is matched only as itself, and misspellings are corrected to
 * search words only (the vocabulary holds no extra form). A form as written always loses a further particle, which a
 * stem never does.
 */
export function isExtraIndexWord(word: string): boolean {
  if (word.startsWith(SYLLABLE_STEM_MARK) || isSymbolName(word)) return true;
  if (!JAMO.test(word)) return false;
  const composed = word.normalize('NFC');
  const particle = KOREAN_PARTICLE_ENDING.exec(composed);
  return particle !== null && Array.from(composed.slice(0, particle.index)).length >= 2;
}

/** How alike a Korean word and its stem are (학교를 and 학교, 고양이 and 고양): less than the word as written. */
export const KOREAN_STEM_MATCH = 0.9;
/**
 * How alike a Korean word and a one-syllable stem of it are (집에 and 집, 마을 and 마): a two-syllable word ending like a
 * particle may be a noun (마을 "village", 사과 "apple"), so it is found by the syllable well below the syllable itself.
 */
export const KOREAN_SYLLABLE_STEM_MATCH = 0.6;

const spelledInJamo = (word: string) => word.replace(HANGUL_SYLLABLES, (syllable) => syllable.normalize('NFD'));

/**
 * A word holding Korean as full-text search reads it, each form spelled out in its letters (jamo, Unicode NFD: 학교 is
 * ㅎㅏㄱㄱㅛ as conjoining jamo), so a misspelling is a letter or two away as in an alphabet (학꾜 for 학교, 도서곽 for
 * 도서관), not a whole syllable: `stem`, the word without its trailing particles (dropped repeatedly, the longest first,
 * while two letters at least stay: 학교에서, 학교를 and 학교 are 학교, 사람들이 is 사람, iPhone을 is iphone, 마을 stays
 * 마을); `written`, the word as written and each shorter form on the way to the stem (고양이가, 고양이 for the stem 고양:
 * a noun ending like a particle is cut, so its whole form is kept too); `syllable`, the one letter a further particle
 * would leave (집에 and 마을 give 집 and 마), a guess that a word ending like a particle may be wrong about, so it is
 * kept apart.
 */
function koreanForms(word: string): { written: string[]; stem: string; syllable: string | undefined } {
  let stem = word;
  const written: string[] = [];
  let syllable: string | undefined;
  for (let particle = KOREAN_PARTICLE_ENDING.exec(stem); particle; particle = KOREAN_PARTICLE_ENDING.exec(stem)) {
    const rest = stem.slice(0, particle.index);
    if (Array.from(rest).length < 2) {
      syllable = rest;
      break;
    }
    written.push(spelledInJamo(stem));
    stem = rest;
  }
  return { written, stem: spelledInJamo(stem), syllable: syllable === undefined ? undefined : spelledInJamo(syllable) };
}

/**
 * A word holding Korean as the word sequence (phrases) and the query's terms name it: without its trailing particles,
 * in jamo (koreanForms' stem). Words without Hangul are returned as they are. See decisions.md, "Full-text search of
 * Korean".
 */
export function koreanSearchWord(word: string): string {
  return HANGUL_SYLLABLE.test(word) ? koreanForms(word).stem : word;
}

/**
 * The words of a text before Korean words are read: folded, unspaced scripts split; and `names`, the names written
 * with signs it holds (symbolNames), each time it holds one.
 */
function foldedWords(text: string): { words: string[]; korean: boolean; prefixed: boolean; names: string[] } {
  const lower = text.toLowerCase();
  if (ASCII.test(lower)) return { words: foldedTextWords(lower, true), korean: false, prefixed: false, names: symbolNames(lower) };
  // A soft hyphen (U+00AD) only marks where a word may break: "soft\u00ADhyphen" is the word "softhyphen", in a query
  // as in a card (cards drop it from their content, but ones stored before may hold it).
  const folded = foldedText(lower.includes(SOFT_HYPHEN) ? lower.replaceAll(SOFT_HYPHEN, '') : lower);
  return {
    words: UNSPACED.test(folded) ? unspacedWords(HAN.test(folded) ? simplifiedChinese(folded) : folded) : foldedTextWords(folded, false),
    korean: HANGUL_SYLLABLE.test(folded),
    prefixed: PREFIXING_LETTER.test(folded),
    names: symbolNames(folded),
  };
}

/** A letter of the alphabets names written with signs are read in (Latin, Greek, Cyrillic). */
const NAME_LETTER = String.raw`[\p{sc=Latin}\p{sc=Greek}\p{sc=Cyrillic}]`;
/** A part of such a name: a letter, then letters, digits and combining marks. */
const NAME_PART = String.raw`${NAME_LETTER}[\p{sc=Latin}\p{sc=Greek}\p{sc=Cyrillic}\p{N}\p{M}]*`;
/**
 * A name whose signs are part of it (symbolNames): a leading dot before letters (.net), dotted parts (node.js,
 * asp.net, socket.io), a name followed by ++ or # (c++, c#, f#), with a version's digits after (c++17). Not inside a
 * word, nor after another sign or dot ("#climate" and "...and" are no names); "3.14", "v1.2" and "$100" are none
 * either (each part starts with a letter). A match holding no sign (a plain word) is not a name.
 */
const SYMBOL_NAME = new RegExp(
  String.raw`(?<![\p{sc=Latin}\p{sc=Greek}\p{sc=Cyrillic}\p{N}\p{M}.'+#])\.?${NAME_PART}(?:\.${NAME_PART})*(?:(?:\+{2,}|#+)\p{N}*)?(?![\p{sc=Latin}\p{sc=Greek}\p{sc=Cyrillic}\p{N}\p{M}+#])`,
  'gu',
);
/** Signs repeated past a name's own (C+++, C++++, C##): the name's ++ or #, a key held down or struck twice. */
const REPEATED_NAME_SIGNS = /\+{3,}|#{2,}/u;
/** Whether a text may hold a name written with signs: a dot before a letter, ++ or #. */
const MAY_HOLD_SYMBOL_NAME = /\.\p{L}|\+\+|#/u;
/** The version a name ending in ++ or # is followed by (c++17, c#10). */
const NAME_VERSION = /(?<=\+\+|#)\p{N}+$/u;

/**
 * The names written with signs of a lower-cased, folded text, each time it holds one, in order: a word whose signs
 * are part of its name (SYMBOL_NAME: "C++", "C#", "F#", ".NET", "node.js", "C++17"), which the word tokenizer reads
 * as its parts alone ("c"; "node" and "js"; "c" and "17"). Full-text search lists a card under these names too
 * (indexWords' extra forms) and looks for a query's names before their parts (queryTerms), so "C++" finds the cards
 * saying C++ first and "C" still finds both. At most SEARCH_WORD_CHARACTERS characters (a longer run is no name).
 */
export function symbolNames(text: string): string[] {
  if (!MAY_HOLD_SYMBOL_NAME.test(text)) return [];
  const out: string[] = [];
  for (const match of text.matchAll(SYMBOL_NAME)) {
    const written = match[0];
    const name = REPEATED_NAME_SIGNS.test(written) ? written.replace(REPEATED_NAME_SIGNS, (signs) => (signs[0] === '+' ? '++' : '#')) : written;
    if (name.length <= SEARCH_WORD_CHARACTERS && isSymbolName(name)) out.push(name);
  }
  return out;
}

/** Whether an indexed word is a name written with signs (symbolNames): no word the tokenizer gives holds . + or #. */
function isSymbolName(word: string): boolean {
  return word.includes('.') || word.includes('+') || word.includes('#');
}

/** The words a name written with signs is read as by the tokenizer (c++ is c, node.js node and js). */
function symbolNameParts(name: string): string[] {
  return name.match(WORD) ?? [];
}

/**
 * How alike a query's name written with signs and one of its parts alone are ("C++" and a card saying C, ".NET" and
 * one saying net): such cards are found after those holding the name, as a phrase holding a word's variant is.
 */
export const SYMBOL_NAME_PART_MATCH = 0.5;

/** A Han character (Chinese, and the kanji of Japanese). */
const HAN = /\p{scx=Han}/u;
let toSimplified: ((text: string) => string) | undefined;

/**
 * Chinese written in traditional characters as in simplified ones (一個 as 一个, 圖書館 as 图书馆), so either finds the
 * other: OpenCC's character conversion from traditional (Taiwan's variants included) to simplified (opencc-js, its
 * t2cn dictionaries only, loaded at the first text holding a Han character). Characters only, no phrase rewriting
 * (軟體 stays 软体, not 软件): a text means what it says, only its characters' forms are folded. Japanese kanji in
 * their traditional forms fold the same way, in cards and queries alike.
 */
function simplifiedChinese(text: string): string {
  if (toSimplified === undefined) {
    // The t2cn entry (its 100 KB of dictionaries, not the 1.2 MB of both directions), required by its path: this
    // project's module resolution ("node") reads no subpath exports.
    const { Converter } = require('opencc-js/t2cn') as { Converter(options: ConverterOptions): ConverterFunction };
    toSimplified = Converter({ from: 'tw', to: 'cn' });
  }
  return toSimplified(text);
}

/** A letter of Arabic or Hebrew, scripts that write the article and some prepositions and conjunctions onto the word. */
const PREFIXING_LETTER = /[\u0621-\u064a\u05d0-\u05ea]/;
/** The Arabic article ال, alone or after و "and", ف "so", ب "with", ك "like", or after ل "for" (لل), longest first. */
const ARABIC_ARTICLE = /^(?:وال|فال|بال|كال|لل|ال)/;
/** Hebrew one-letter prefixes: ו "and", ה "the", ב "in", כ "as", ל "to", מ "from", ש "that". */
const HEBREW_PREFIX = /^[והבכלמש]/;

/** How alike a word and the same word with an article or prefix written onto it are (كتاب and الكتاب, ספר and הספר). */
export const PREFIX_MATCH = 0.9;

/**
 * The word without the article or prefixes written onto it, when it may have them: an Arabic word without its article
 * (الكتاب, والكتاب, للكتاب: كتاب; two letters at least left), a Hebrew word without one and without two of its
 * one-letter prefixes (ובבית: בבית, בית; three letters at least left, since most words begin with one of those letters:
 * בית is not ב + ית). A guess like Korean's stems: מספר "number" gives ספר "book", so these forms are kept apart from
 * the words a text gives (marked, matched at PREFIX_MATCH).
 */
function withoutPrefixes(word: string): string[] {
  const article = ARABIC_ARTICLE.exec(word);
  if (article) {
    const rest = word.slice(article[0].length);
    return rest.length >= 2 ? [rest] : [];
  }
  const forms: string[] = [];
  let rest = word;
  for (let i = 0; i < 2 && HEBREW_PREFIX.test(rest) && rest.length - 1 >= 3; i++) forms.push((rest = rest.slice(1)));
  return forms;
}

/**
 * The words full-text search reads a text as, in order (what phrases compare): words() of the text with its diacritics
 * folded (foldedText), except that runs of unspaced scripts are split (unspacedWords: Chinese and Japanese into
 * character bigrams, Thai and its neighbours by dictionary) and Korean words lose their particles and are spelled in
 * jamo (koreanSearchWord). ASCII text is never scanned for them.
 */
export function searchWords(text: string): string[] {
  const { words: split, korean } = foldedWords(text);
  return korean ? split.map(koreanSearchWord) : split;
}

/**
 * The words a card is indexed under: `sequence`, its searchWords in order (phrases), and `extra`, distinct further
 * forms of its Korean words: the word as written and its shorter forms where they differ from the stem (고양이가 and
 * 고양이 of 고양, 학교에서), and the one-syllable stem a further particle would leave, marked (집 of 집에,
 * 마 of 마을). Both indexes list a card under all.
 */
export function indexWords(text: string): { sequence: string[]; extra: string[] } {
  const { words: split, korean, prefixed, names } = foldedWords(text);
  if (!korean && !prefixed && names.length === 0) return { sequence: split, extra: [] };
  const extra = new Set<string>();
  // Names written with signs (c++, node.js), and a versioned one without its version too (c++17 is c++).
  for (const name of names) {
    extra.add(name);
    const version = NAME_VERSION.exec(name);
    if (version) extra.add(name.slice(0, version.index));
  }
  if (!korean && !prefixed) return { sequence: split, extra: [...extra] };
  const sequence = split.map((word) => {
    if (!HANGUL_SYLLABLE.test(word)) {
      if (prefixed) for (const form of withoutPrefixes(word)) extra.add(SYLLABLE_STEM_MARK + form);
      return word;
    }
    const { written, stem, syllable } = koreanForms(word);
    for (const form of written) extra.add(form);
    if (syllable !== undefined) extra.add(SYLLABLE_STEM_MARK + syllable);
    return stem;
  });
  return { sequence, extra: [...extra] };
}

/** An indexed word a query term looks for: its similarity is the match's times `factor`; misspellings of it when `variants`. */
export interface TermForm {
  word: string;
  factor: number;
  variants: boolean;
  /**
   * Indexed words whose holders this form does not match: the names of a query sharing the part the form looks for
   * (withSymbolNames), so a card saying C++ gets nothing for "C#" through the "c" inside its C++.
   */
  unless?: readonly string[];
  /**
   * Indexed words one of which a card must hold for this form to match it: the names of a query naming two or more
   * (withSymbolNames, each with its versionless form), so a name's part alone (the "c" of C#, the "f" of F#) adds to a
   * card naming one of the query's names and to no other, whatever plain words the query holds too.
   */
  onlyWith?: readonly string[];
}

/** A query word as full-text search looks for it: `word` as searchWords gives it (phrases), and the indexed words it matches. */
export interface QueryTerm {
  word: string;
  forms: TermForm[];
  /**
   * Share of its idf weight the term weighs (1 when absent): a part of a name of several words weighs its share of the
   * name (withSymbolNames), so the name counts once in the score. Both indexes multiply the weight by it.
   */
  share?: number;
  /**
   * The name written with signs the term looks for (withSymbolNames; the parts of a name of several words share it),
   * when the query does not also write the term's word alone: a query whose every term has one is a query of names
   * (namesFloor).
   */
  name?: string;
}

/** Most distinct words of a query full-text search looks for: the most telling ones of a longer query (tellingTerms). */
export const MAX_QUERY_TERMS = 32;
/** Most distinct words of a query read at all (queryTerms), among which tellingTerms chooses: a bound on the work a paste makes. */
export const QUERY_WORDS_READ = 512;

/** Parts of a long query (its distinct words in order, cut in equal runs) each giving a share of its words (tellingTerms). */
export const QUERY_PARTS = 4;

/**
 * The MAX_QUERY_TERMS words full-text search looks for in a query of more distinct words (a pasted paragraph or card):
 * the most telling ones of each of its QUERY_PARTS parts (its distinct words in order, cut into equal runs), not its
 * first ones, so a paste finds the cards its middle and end came from too, whichever holds the rarest words. Within a
 * part, known words (some card the reader may see holds them: `frequency` > 0) go first, the rarest first (as idf
 * weighs them); then words no such card holds (typos, words of text no card holds), which may tell nothing. Words of
 * one frequency that do not all fit are taken evenly spread over the part. The chosen terms keep the query's order.
 * Both full-text indexes use this rule.
 */
export function tellingTerms(terms: readonly QueryTerm[], frequency: (word: string) => number): QueryTerm[] {
  if (!hasMoreWordsThanSearched(terms)) return [...terms];
  // The query's distinct words, in order: the terms of one word (names sharing a part, C++ and C#: "c") are chosen
  // together, as one word, so the cap counts words as a paste is counted (isLongQuery), not the terms names add.
  const words = [...new Set(terms.map((term) => term.word))];
  const chosenWords = new Set(tellingWords(words, frequency));
  return terms.filter((term) => chosenWords.has(term.word));
}

/** Whether a query's terms hold more distinct words than MAX_QUERY_TERMS (tellingTerms then chooses among them). */
export function hasMoreWordsThanSearched(terms: readonly { word: string }[]): boolean {
  if (terms.length <= MAX_QUERY_TERMS) return false;
  return new Set(terms.map((term) => term.word)).size > MAX_QUERY_TERMS;
}

/** The MAX_QUERY_TERMS most telling of a query's distinct words (tellingTerms), in the query's order. */
function tellingWords(terms: readonly string[], frequency: (word: string) => number): string[] {
  // Unknown words last (Infinity), then the rarest first; within one frequency, the query's order.
  const known = terms.map((word) => frequency(word) || Infinity);
  const chosen: number[] = [];
  for (let part = 0; part < QUERY_PARTS; part++) {
    const from = Math.floor((part * terms.length) / QUERY_PARTS);
    const to = Math.floor(((part + 1) * terms.length) / QUERY_PARTS);
    const ranked = Array.from({ length: to - from }, (_, i) => from + i).sort((a, b) => known[a]! - known[b]! || a - b);
    const wanted = Math.floor(((part + 1) * MAX_QUERY_TERMS) / QUERY_PARTS) - Math.floor((part * MAX_QUERY_TERMS) / QUERY_PARTS);
    let taken = 0;
    for (let start = 0; taken < wanted && start < ranked.length; ) {
      let end = start;
      while (end < ranked.length && known[ranked[end]!] === known[ranked[start]!]) end++;
      const group = end - start;
      const room = wanted - taken;
      // Words of one frequency that do not all fit are taken evenly spread over the part, not its first ones.
      if (group <= room) for (let i = start; i < end; i++) chosen.push(ranked[i]!);
      else for (let i = 0; i < room; i++) chosen.push(ranked[start + Math.floor((i * group) / room)]!);
      taken += Math.min(group, room);
      start = end;
    }
  }
  return chosen.sort((a, b) => a - b).map((place) => terms[place]!);
}

/**
 * A query's words as full-text search looks for them: `sequence`, its searchWords (phrases), and `terms`, its
 * distinct words (at most QUERY_WORDS_READ, of which an index looks for tellingTerms), each with the indexed forms it matches. A word without Hangul matches
 * itself and its misspellings. A Korean word (see indexWords): as written, exactly (1); its shorter forms exactly, and
 * its stem and the stem's misspellings, at KOREAN_STEM_MATCH, so 학교를 finds 학교에서 and 학교, the word as written
 * first, and 고양이 finds 고양이가 above 고양에 (Goyang); its one-syllable stem,
 * marked or bare, at KOREAN_SYLLABLE_STEM_MATCH (마을 finds 마 and 마가 low); a one-syllable word the one-syllable stems of
 * other words at KOREAN_SYLLABLE_STEM_MATCH (집 finds 집에, 마 finds 마을, below the cards saying 집 or 마). Both indexes
 * use these terms, through bestFormMatches.
 */
export function queryTerms(text: string): { sequence: string[]; terms: QueryTerm[] } {
  const { words: split, korean, prefixed, names } = foldedWords(text);
  if (!korean && !prefixed) {
    const sequence = split;
    const terms = [...new Set(sequence)].slice(0, QUERY_WORDS_READ).map((word) => ({ word, forms: [{ word, factor: 1, variants: !isSymbolWord(word) }] }));
    return { sequence, terms: names.length === 0 ? terms : withSymbolNames(terms, sequence, names) };
  }
  const sequence: string[] = [];
  const terms = new Map<string, Map<string, TermForm>>();
  for (const written of split) {
    const forms: TermForm[] = [];
    let word = written;
    if (HANGUL_SYLLABLE.test(written)) {
      const { written: shorter, stem, syllable } = koreanForms(written);
      word = stem;
      shorter.forEach((form, i) => forms.push({ word: form, factor: i === 0 ? 1 : KOREAN_STEM_MATCH, variants: false }));
      forms.push({ word: stem, factor: shorter.length === 0 ? 1 : KOREAN_STEM_MATCH, variants: true });
      if (syllable !== undefined) {
        forms.push({ word: SYLLABLE_STEM_MARK + syllable, factor: KOREAN_SYLLABLE_STEM_MATCH, variants: false });
        forms.push({ word: syllable, factor: KOREAN_SYLLABLE_STEM_MATCH, variants: false });
      } else if (Array.from(written).length === 1) {
        forms.push({ word: SYLLABLE_STEM_MARK + stem, factor: KOREAN_SYLLABLE_STEM_MATCH, variants: false });
      }
    } else {
      forms.push({ word, factor: 1, variants: !isSymbolWord(word) });
      if (prefixed && PREFIXING_LETTER.test(word)) {
        // The word with a prefix in a card (كتاب finds الكتاب), and without its own (الكتاب finds كتاب).
        forms.push({ word: SYLLABLE_STEM_MARK + word, factor: PREFIX_MATCH, variants: false });
        for (const shorter of withoutPrefixes(word)) {
          forms.push({ word: shorter, factor: PREFIX_MATCH, variants: false });
          forms.push({ word: SYLLABLE_STEM_MARK + shorter, factor: PREFIX_MATCH, variants: false });
        }
      }
    }
    sequence.push(word);
    let term = terms.get(word);
    if (term === undefined) {
      if (terms.size === QUERY_WORDS_READ) continue;
      terms.set(word, (term = new Map()));
    }
    // The same stem written twice (학교 학교에서): each form at the better of its factors.
    for (const form of forms) {
      const had = term.get(form.word);
      term.set(form.word, had === undefined ? form : { word: form.word, factor: Math.max(had.factor, form.factor), variants: had.variants || form.variants });
    }
  }
  const read = [...terms].map(([word, forms]) => ({ word, forms: [...forms.values()] }));
  return { sequence, terms: names.length === 0 ? read : withSymbolNames(read, sequence, names) };
}

/**
 * How alike a query's versioned name and the same name without a version are ("C++17" and a card saying C++): below
 * the name as written, above its part alone (SYMBOL_NAME_PART_MATCH: a card saying only C).
 */
export const VERSIONLESS_NAME_MATCH = 0.75;

/** A name's parts as the tokenizer reads them, without its version (c++17: c; node.js: node and js), and the name without its version. */
function nameParts(name: string): { parts: string[]; versionless: string | undefined } {
  const version = NAME_VERSION.exec(name);
  if (!version) return { parts: symbolNameParts(name), versionless: undefined };
  const versionless = name.slice(0, version.index);
  return { parts: symbolNameParts(versionless), versionless };
}

/**
 * A query's terms with the names written with signs it holds (symbolNames) looked for first, each name counting once
 * in the score, as a plain word does. A name of one word (C++, C#, .NET, and C++17, whose version goes with it) is a
 * term of its own: the name exactly at 1, a versioned name without its version at VERSIONLESS_NAME_MATCH (C++ for
 * "C++17"), the part's own forms at SYMBOL_NAME_PART_MATCH; so "C++ C#" is two terms, and a card naming both holds
 * twice what a card naming one does (the part "c" was one term for both). A name of several words (node.js) is looked
 * for through each part, matching the name exactly at 1 and the part's own forms at SYMBOL_NAME_PART_MATCH, each part
 * weighing its share of the name (`share`: node and js half each), so node.js counts once, not twice. A part the query
 * also writes alone ("C++ or C") stays one term matching the names and itself at 1. So a card holding the name ranks
 * above one holding its parts only, which is still found, lower; a query of the part alone ("C") matches both alike.
 */
function withSymbolNames(terms: readonly QueryTerm[], sequence: readonly string[], names: readonly string[]): QueryTerm[] {
  // Each name once, with its parts as the tokenizer reads them (`every`, the version's digits included).
  const distinct = [...new Set(names)].map((name) => ({ name, every: symbolNameParts(name), ...nameParts(name) }));
  const inNames = new Map<string, number>();
  for (const name of names) for (const part of symbolNameParts(name)) inNames.set(part, (inNames.get(part) ?? 0) + 1);
  const written = new Map<string, number>();
  for (const word of sequence) if (inNames.has(word)) written.set(word, (written.get(word) ?? 0) + 1);
  // A query of two names or more, plain words beside them or not: a part alone counts only for a card naming one of
  // them (TermForm.onlyWith). A letter in a card naming none is no mention of any ("She got a C in maths and an F in
  // French" for "C# and F#"); a query of one name keeps its part for the name written apart ("C ++", "Node JS").
  const onlyWith = distinct.length >= NAMES_QUERY_NAMES ? [...new Set(distinct.flatMap(({ name, versionless }) => (versionless === undefined ? [name] : [name, versionless])))] : undefined;
  const out: QueryTerm[] = [];
  for (const term of terms) {
    const inQueryNames = inNames.get(term.word);
    if (inQueryNames === undefined) {
      out.push(term);
      continue;
    }
    const holding = distinct.filter(({ every }) => every.includes(term.word));
    if ((written.get(term.word) ?? 0) > inQueryNames) {
      // Written alone too: one term, the names and the part alike.
      out.push({ word: term.word, forms: [...holding.map(({ name }) => ({ word: name, factor: 1, variants: false })), ...term.forms] });
      continue;
    }
    const oneWord = holding.filter(({ parts }) => parts.length === 1 && parts[0] === term.word);
    const longer = holding.filter(({ parts }) => parts.length > 1 && parts.includes(term.word));
    // Names sharing this part (C++ and C#: "c") make a term each, and the part alone is one mention for them all: it
    // counts once over them (SYMBOL_NAME_PART_MATCH shared out), and not for a card naming one of them, whose part is
    // inside that name (a card saying C++ got half of "C#" through it, and a card saying only C as much as one
    // naming a third name of the query).
    const siblings = oneWord.length + (longer.length > 0 ? 1 : 0);
    const unless = siblings > 1 ? [...new Set(holding.flatMap(({ name, versionless }) => (versionless === undefined ? [name] : [name, versionless])))] : undefined;
    const partForms = term.forms.map((form) => ({ ...form, factor: (form.factor * SYMBOL_NAME_PART_MATCH) / siblings, ...(unless === undefined ? {} : { unless }), ...(onlyWith === undefined ? {} : { onlyWith }) }));
    // Names of one word: a term each. A version's digits (17 of C++17) are the name's, no term of their own.
    for (const { name, versionless } of oneWord) {
      const forms: TermForm[] = [{ word: name, factor: 1, variants: false }];
      if (versionless !== undefined) forms.push({ word: versionless, factor: VERSIONLESS_NAME_MATCH, variants: false });
      out.push({ word: term.word, forms: [...forms, ...partForms], name });
    }
    // Names of several words holding this part: one term through the part, weighing its share of the name.
    if (longer.length > 0) {
      const share = 1 / Math.max(...longer.map(({ parts }) => parts.length));
      out.push({ word: term.word, forms: [...longer.map(({ name }) => ({ word: name, factor: 1, variants: false })), ...partForms], share, name: longer.map(({ name }) => name).join(' ') });
    }
  }
  return out;
}

/** A run of ASCII letters and digits: one word as written, joined to no other (heldQueryWords skips reading it). */
const ONE_ASCII_WORD = /^[a-z0-9]+$/i;

/**
 * The words of `unmatched` a query writes joined, with no space between, to a word not among them: parts of one written
 * thing some card holds a part of ("card-3f9a1c7e5b2d" in a library of cards saying "card", one part of "node.js", a
 * run of Chinese bigrams), each token read by queryTerms.
 */
function joinedToHeldWords(text: string, unmatched: ReadonlySet<string>): Set<string> {
  const joined = new Set<string>();
  for (const token of text.split(/\s+/u)) {
    if (token === '' || ONE_ASCII_WORD.test(token)) continue;
    const words = queryTerms(token).terms.map((term) => term.word);
    if (words.length > 1 && words.some((word) => !unmatched.has(word))) for (const word of words) if (unmatched.has(word)) joined.add(word);
  }
  return joined;
}

/**
 * A full-text query's terms and phrase sequence without the words that can weigh in no card's score: a word that no
 * card the caller may see holds and that is no typo of a word one holds (`matchesNothing`: its forms matched
 * nothing). Such a word (a name, a rare word, a word of another field, "or" in a library without it) counted in the
 * score's denominator and in the floor, so the cards holding the rest of the query scored low or not at all ("tides
 * qwertyuiop zebra" found nothing beside a card about tides); left out, they are found and ranked as if it were not
 * written (phrase included). A word written joined to a word some card holds ("card-<id>" of a card never stored
 * where cards say "card", one part of "node.js") still counts: the query names one thing no card holds, not its known
 * part. A query of such words alone keeps them (and finds nothing). A query of LONG_QUERY_WORDS distinct words or
 * more (a paste) keeps them too when they are more than one in LONG_QUERY_STRAY_PART of its distinct words, or those
 * are more than MAX_QUERY_TERMS: there they tell that the text is not a card's (a paste of prose no card holds would
 * otherwise match cards sharing its common words), and longQueryFloor already finds the best card whatever it lacks.
 * `text` is the query as sent; `sequence` its words in order (phrases). Both full-text indexes use this rule.
 */
export function heldQueryWords<T extends { word: string }>(text: string, sequence: readonly string[], terms: readonly T[], matchesNothing: (term: T) => boolean): { terms: readonly T[]; sequence: readonly string[] } {
  let unmatched: Set<string> | undefined;
  for (const term of terms) if (matchesNothing(term)) (unmatched ??= new Set()).add(term.word);
  if (unmatched === undefined || unmatched.size === terms.length) return { terms, sequence };
  // A paste's words no card holds, when they are many, tell that it is no card's text; its floor is relative to the
  // best card already. A few in a long question are strays, as in a short one. Past MAX_QUERY_TERMS words, the words
  // looked for are the known ones first (tellingTerms), so how many are unknown there tells nothing: kept.
  if (isLongQuery(terms)) {
    const distinct = new Set(sequence).size;
    if (distinct > MAX_QUERY_TERMS || unmatched.size * LONG_QUERY_STRAY_PART > distinct) return { terms, sequence };
  }
  for (const word of joinedToHeldWords(text, unmatched)) unmatched.delete(word);
  if (unmatched.size === 0) return { terms, sequence };
  return { terms: terms.filter((term) => !unmatched.has(term.word)), sequence: sequence.filter((word) => !unmatched.has(word)) };
}

/** The cards a match counts for, from its form (TermForm): none holding a word of `unless`, one holding a word of `onlyWith`. */
export interface FormLimits {
  unless?: readonly string[];
  onlyWith?: readonly string[];
}

/**
 * A query term's matches over its forms: each form's matches (`matchesOf`: the word itself when some card holds it,
 * and, when the form takes variants, its misspellings) at their similarity times the form's factor, the best one of each
 * indexed word (`keyOf`), best first, each with its form's `unless` and `onlyWith` (FormLimits: a match of it counts
 * only for cards holding none of the first and, when given, one of the second). Both indexes combine a term's forms this way.
 */
export function bestFormMatches<M extends { similarity: number }>(forms: readonly TermForm[], matchesOf: (form: TermForm) => M[], keyOf: (match: M) => string | number): (M & FormLimits)[] {
  if (forms.length === 1 && forms[0]!.factor === 1 && forms[0]!.unless === undefined && forms[0]!.onlyWith === undefined) return matchesOf(forms[0]!);
  const best = new Map<string | number, M & FormLimits>();
  for (const form of forms) {
    for (const match of matchesOf(form)) {
      const similarity = match.similarity * form.factor;
      const key = keyOf(match);
      if ((best.get(key)?.similarity ?? 0) < similarity) {
        best.set(key, { ...match, similarity, ...(form.unless === undefined ? {} : { unless: form.unless }), ...(form.onlyWith === undefined ? {} : { onlyWith: form.onlyWith }) });
      }
    }
  }
  return [...best.values()].sort((a, b) => b.similarity - a.similarity);
}

/** The text as its search words joined by single spaces: what phrase matching compares. */
export function normalizedText(text: string): string {
  return searchWords(text).join(' ');
}

/** Trigrams of one word as pg_trgm makes them: padded with two spaces in front and one behind. */
export function wordTrigrams(word: string): string[] {
  const padded = `  ${word} `;
  const set = new Set<string>();
  for (let i = 0; i + 3 <= padded.length; i++) set.add(padded.slice(i, i + 3));
  return [...set];
}

/** pg_trgm similarity of two words: shared trigrams over the union of both sets. */
export function trigramSimilarity(a: string, b: string): number {
  if (a === b) return 1;
  const ta = new Set(wordTrigrams(a));
  const tb = wordTrigrams(b);
  let shared = 0;
  for (const t of tb) if (ta.has(t)) shared++;
  return shared / (ta.size + tb.length - shared);
}

/** Word-shingle Jaccard similarity (k words per shingle), the near-copy measure of DESIGN.md. */
export function shingleJaccard(a: string, b: string, k = 3): number {
  const shingles = (text: string) => {
    const w = words(text);
    const set = new Set<string>();
    if (w.length < k) set.add(w.join(' '));
    for (let i = 0; i + k <= w.length; i++) set.add(w.slice(i, i + k).join(' '));
    return set;
  };
  const sa = shingles(a);
  const sb = shingles(b);
  let shared = 0;
  for (const s of sb) if (sa.has(s)) shared++;
  const union = sa.size + sb.size - shared;
  return union === 0 ? 1 : shared / union;
}

const rowsBuffer = [new Int32Array(64), new Int32Array(64), new Int32Array(64)];

/** Optimal-string-alignment edit distance (insert, delete, substitute, swap neighbours), stopping early above `max`. */
export function editDistance(a: string, b: string, max = Infinity): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const cols = b.length + 1;
  if (rowsBuffer[0]!.length < cols) for (let i = 0; i < 3; i++) rowsBuffer[i] = new Int32Array(cols * 2);
  let prev2 = rowsBuffer[0]!;
  let prev = rowsBuffer[1]!;
  let cur = rowsBuffer[2]!;
  for (let j = 0; j < cols; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j < cols; j++) {
      const cb = b.charCodeAt(j - 1);
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (ca === cb ? 0 : 1));
      if (i > 1 && j > 1 && ca === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === cb) d = Math.min(d, prev2[j - 2]! + 1);
      cur[j] = d;
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > max) return max + 1;
    const spare = prev2;
    prev2 = prev;
    prev = cur;
    cur = spare;
  }
  return prev[cols - 1]!;
}

/** 1 - edits / longer length when at most `maxEdits` edits apart, else 0. */
export function editSimilarity(a: string, b: string, maxEdits = 2): number {
  const edits = editDistance(a, b, maxEdits);
  return edits > maxEdits ? 0 : 1 - edits / Math.max(a.length, b.length);
}

/**
 * Edits a misspelling of a word of this many letters may hold: none up to 3 letters, 1 up to 6, 2 from 7 ("recieve"
 * is two edits from "received"). Two edits of a 4-letter word leave half of it ("moth" and "with"): another word, not
 * a typo. At 4 letters the one edit must be two neighbours swapped (onlyTransposition).
 */
export function typoEdits(length: number): number {
  return length <= 3 ? 0 : length <= 6 ? 1 : 2;
}

/**
 * Whether a typo of a word this long may only swap two neighbouring letters ("bnod" for "bond"): at 4 letters, one
 * letter changed, added or dropped is as often another word ("cafe" and "care", "mars" and "mass", "card" and "cart")
 * as a typo, while a swap of neighbours rarely makes one.
 */
export function onlyTransposition(length: number): boolean {
  return length === 4;
}

/** Whether b is a with exactly two neighbouring letters swapped. */
export function isTransposition(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let i = 0;
  while (i < a.length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i + 1 >= a.length || a[i] !== b[i + 1] || a[i + 1] !== b[i] || a[i] === a[i + 1]) return false;
  return a.slice(i + 2) === b.slice(i + 2);
}

/** Least similarity of a close variant (plural, inflection) of a query word some visible card holds. */
export const KNOWN_WORD_VARIANT_FLOOR = 0.6;
/** Least similarity of a vocabulary word a query word no visible card holds is taken for (a typo). */
export const UNKNOWN_WORD_VARIANT_FLOOR = 0.45;
/** Vocabulary words a query word takes besides itself: a known word, a few close variants; an unknown one, more. */
export const KNOWN_WORD_VARIANTS = 3;
export const UNKNOWN_WORD_VARIANTS = 6;

/**
 * How alike a vocabulary word is to a query word, 0 when it is no variant of it; both full-text indexes use this rule.
 * `shared` trigrams of the query word's `queryTrigrams` and the candidate's `candidateTrigrams` give the pg_trgm
 * similarity. A known query word (some card the caller may see holds it) takes close variants by that alone. An
 * unknown one is taken for a typo: the similarity is the better of pg_trgm's and 1 - edits / longer length, the
 * latter within typoEdits(query length) edits and, below 2 edits, with the first letter kept (as Lucene's spell
 * checker keeps a 1-letter prefix: "moth" is no typo of "both"); a 4-letter word's one edit must swap two neighbours
 * (onlyTransposition: "cafe" is no typo of "care"). Within the allowed edits the edit similarity is
 * always taken, so a word fewer edits away never loses to one more edits away of about the same length. Chinese and
 * Japanese words (isCjkWord: bigrams) have no variants.
 */
export function variantSimilarity(query: string, candidate: string, shared: number, queryTrigrams: number, candidateTrigrams: number, known: boolean): number {
  // A Chinese or Japanese bigram is no misspelling of another: edits and shared trigrams of them mean nothing.
  if (isCjkWord(query) || isCjkWord(candidate) || isSymbolWord(query) || isSymbolWord(candidate)) return 0;
  const trigram = shared / (queryTrigrams + candidateTrigrams - shared);
  const floor = known ? KNOWN_WORD_VARIANT_FLOOR : UNKNOWN_WORD_VARIANT_FLOOR;
  let similarity = trigram;
  const edits = known ? 0 : typoEdits(query.length);
  // Each edit breaks at most 4 of the query word's trigrams, so a word sharing fewer cannot be that close; and even
  // one edit must beat what the word has already.
  if (
    edits > 0 &&
    Math.abs(candidate.length - query.length) <= edits &&
    shared >= queryTrigrams - 4 * edits &&
    (edits >= 2 || candidate.charCodeAt(0) === query.charCodeAt(0)) &&
    (!onlyTransposition(query.length) || isTransposition(query, candidate)) &&
    1 - 1 / Math.max(candidate.length, query.length) > Math.max(trigram, floor)
  ) {
    similarity = Math.max(trigram, editSimilarity(query, candidate, edits));
  }
  return similarity >= floor ? similarity : 0;
}

/**
 * Least share of the full-text score a query's most telling word must give alone to lower the floor to it
 * (textScoreFloor): a word of a long query (a pasted paragraph's 32 words) gives much less, and lowering the floor to
 * it let cards sharing any few of those words match: 188 of 239 cards for a pasted card's text, instead of 1.
 */
export const TELLING_WORD_MIN_SCORE = 0.2;

/**
 * The least full-text score a card needs to match this query: `floor`, lowered (a hair under, for float rounding) to
 * what the query's most telling word gives a card holding it alone, when that is less but at least
 * TELLING_WORD_MIN_SCORE. A short query of a few rare words and a common one ("volcano that destroyed pompeii") weighs
 * each rare word at a fraction of the sum, so the only card saying "pompeii" (0.29) fell under the floor while a card
 * sharing "destroyed" and "that" passed it. `terms` are the query's words with their idf weight and the similarities
 * of their matches (a word matching nothing gives nothing); `phraseWeight` the share of the score the phrase takes.
 * Both full-text indexes use this rule.
 */
export function textScoreFloor(floor: number, terms: readonly { weight: number; matches: readonly { similarity: number }[]; name?: string }[], phraseWeight: number): number {
  let weightSum = 0;
  // The most telling word is the heaviest one, matched or not: when it matches nothing ("card-3f9a…" of a card never
  // stored), what a common word of the query gives alone must not lower the floor to every card holding that word.
  let heaviestWeight = -1;
  let heaviest = 0;
  for (const { weight, matches } of terms) {
    weightSum += weight;
    let best = 0;
    for (const m of matches) if (m.similarity > best) best = m.similarity;
    if (weight > heaviestWeight || (weight === heaviestWeight && weight * best > heaviest)) {
      heaviestWeight = weight;
      heaviest = weight * best;
    }
  }
  if (weightSum <= 0) return floor;
  const alone = ((1 - phraseWeight) * heaviest) / weightSum;
  return alone >= TELLING_WORD_MIN_SCORE && alone < floor ? alone - 1e-6 : floor;
}

/**
 * The least score a card's naming matches (NAMING_MATCH or more: the name, or the name without its version) must give
 * for the card to match a query of names written with signs only, NAMES_QUERY_NAMES of them or more ("C# F#", "C++
 * C# F# .NET node.js"; every term has a name, see withSymbolNames): what a card naming its lightest name alone gets,
 * by its least naming match (NAMING_MATCH: a card saying C++ for "C++17 C#" names one of them too); Infinity for any
 * other query. Such a query finds the cards naming one of its names, those naming more first, and
 * only them, whatever their whole score (the textScoreFloor of other queries does not apply): a list of names asks
 * for cards about any of them. Each of five names weighs about a fifth of the query, and a name sharing its part with
 * many cards (C++ and C#: "c") less, so a card naming one was found only when that name was the heaviest. Parts
 * matched (a card saying C for C#, at SYMBOL_NAME_PART_MATCH) still add to the score of a card naming one, but find
 * no card alone: half of each name through its letter gave "she got a C in maths and an F in French" 0.425 for "C#
 * F#", above the cards naming C#, a common name weighing little against the rare F# (0.174), and a floor on the whole
 * score cannot tell the two apart. Both full-text indexes use this rule.
 */
export function namesFloor(terms: readonly { weight: number; name?: string }[], weightSum: number, phraseWeight: number): number {
  const byName = new Map<string, number>();
  for (const { weight, name } of terms) {
    if (name === undefined) return Infinity;
    byName.set(name, (byName.get(name) ?? 0) + weight);
  }
  if (byName.size < NAMES_QUERY_NAMES || weightSum <= 0) return Infinity;
  return ((1 - phraseWeight) * NAMING_MATCH * Math.min(...byName.values())) / weightSum - 1e-6;
}

/** Least similarity of a match of a named term (QueryTerm.name) that names it (namesFloor): the name, or the name without its version; not a part alone. */
export const NAMING_MATCH = VERSIONLESS_NAME_MATCH;

/** Least number of names written with signs a query of names only holds for namesFloor (one name is the whole query). */
export const NAMES_QUERY_NAMES = 2;

/** Least number of distinct words of a query read as a paste (a paragraph, a card or more), for longQueryFloor. */
export const LONG_QUERY_WORDS = 8;

/**
 * A query of LONG_QUERY_WORDS to MAX_QUERY_TERMS distinct words leaves out its words no card holds (heldQueryWords)
 * when they are at most one in LONG_QUERY_STRAY_PART of its distinct words: strays (a name the library lacks, a typo beyond reach)
 * in a long question, left out as in a short one. More than that, the text is largely none of the library's (prose no
 * card holds: 62-68% of its words against the 24 labelled cards, a card pasted between two such paragraphs 41%), and
 * they are kept, so its common words alone do not match; so are they in a query of more words (a paste: the words
 * looked for are then its known ones first, tellingTerms). A question of nine words with one such word kept it: every
 * score fell by its weight (the source card 0.87 at seven words, 0.71 at eight) and the phrase was lost.
 */
export const LONG_QUERY_STRAY_PART = 4;

/**
 * Whether a query's terms are a paste's: LONG_QUERY_WORDS distinct words or more. Its distinct words, not its terms:
 * names of one word sharing a part are a term each on one word (C++ and C#: "c"; withSymbolNames), and counting those
 * read "C++ C# F# .NET node.js Q# J#" (seven words) as a paste, which keeps the words no card holds (Q#, J#): the
 * cards naming the rest scored under the floor. Both full-text indexes use this rule.
 */
export function isLongQuery(terms: readonly { word: string }[]): boolean {
  if (terms.length < LONG_QUERY_WORDS) return false;
  return new Set(terms.map((term) => term.word)).size >= LONG_QUERY_WORDS;
}
/** Share of the best card's score a card needs to match a long query, when that is under the floor (longQueryFloor). */
export const LONG_QUERY_SHARE = 0.5;
/** Least full-text score a card needs to match a long query, however low the best card's score (longQueryFloor). */
export const LONG_QUERY_MIN_SCORE = 0.2;

/**
 * The least score a card needs to match a query of LONG_QUERY_WORDS distinct words or more (a paste), given `floor`
 * (textScoreFloor) and `best`, the best word score (without the phrase) a card in scope reaches: `floor`, lowered to
 * LONG_QUERY_SHARE of the best, but not under LONG_QUERY_MIN_SCORE. A card that is a third of a paste (two other cards,
 * or text no card holds, around it) holds a third of the query's weight, 0.28 with the phrase's share, under the
 * fixed floor of 0.3; it now matches since it is the best there is, while a card sharing a few of the paste's words
 * with it stays out. A paste some card holds whole keeps the fixed floor (half of its 0.85 or more is over 0.3). Both
 * full-text indexes use this rule; shorter queries keep `floor`.
 */
export function longQueryFloor(floor: number, best: number): number {
  return Math.min(floor, Math.max(LONG_QUERY_MIN_SCORE, best * LONG_QUERY_SHARE) - 1e-6);
}
