import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { domainToASCII } from 'node:url';
import { BLOCK_TAGS, characterCount, hasVisibleText, collapseTextLines, idnHostProblem, controlCharacterProblem, leadingWords, fitsCharacters, freeTextProblem, linkProblem, emailCharacterProblem, emailKey, linkProblemText, MAX_LINK_CHARS, nameProblem, splitTags, tagsProblem, truncatedToCharacters, USERNAME_PATTERN, usernameCaseFold, usernameProblem, wellFormedProblem, withLoneSurrogatesReplaced, withoutInvisibleInName, wordCount, wordStartsInRun } from '../src';

const PACKAGE = resolve(__dirname, '..');

describe('@cards/card-rules', () => {
  it('counts runs of non-whitespace as words', () => {
    expect(wordCount('')).toBe(0);
    expect(wordCount(' \n\t ')).toBe(0);
    expect(wordCount('one')).toBe(1);
    expect(wordCount('  one\ttwo\nthree  four\u00a0five ')).toBe(5);
  });

  it('counts no word for a run of invisible characters only (zero-width space, joiners, soft hyphen, BOM)', () => {
    expect(wordCount('\u200b \u200c\u200d \u2060 \u00ad \ufeff')).toBe(0);
    expect(wordCount(`seventy ${'\u200b '.repeat(80)}words`)).toBe(2);
    expect(wordCount('zero\u200bwidth joined\u200dword')).toBe(2);
  });

  it('counts no word for a run of punctuation, symbols or emoji only: a word holds a letter or a number', () => {
    expect(wordCount('\u2014 '.repeat(71))).toBe(0);
    expect(wordCount('& '.repeat(71))).toBe(0);
    expect(wordCount('\u{1f600} \u{1f44d}\u{1f3fd} \u2026 | - * # \u00a7 \u20ac 100%')).toBe(1);
    // A table row's separators are no words; the cells' words are.
    expect(wordCount('Year | Rate\n2019 | 4.5%')).toBe(4);
    // Letters and digits of any script, marks with the letter they sit on; a mark alone, or a Hangul filler, is none.
    expect(wordCount('caf\u00e9 cafe\u0301 \u0915\u093f \u0661\u0662 \u00bd \u2167 (a) \u2014word\u2014 \u0301 \u3164')).toBe(8);
  });

  it('counts the words of a script written without spaces as its readers see them, and spaced runs as before', () => {
    expect(wordCount('我们今天去图书馆看书。然后回家。')).toBe(8);
    expect(wordCount('東京都に住んでいます')).toBe(7);
    expect(wordCount('「你好」，世界！')).toBe(2);
    expect(wordCount('Node.js的框架 well-known e-mail 3.5 —')).toBe(6);
    expect(wordCount('中文 one two')).toBe(3);
    // A long Chinese passage (about 270 characters) is far more than 70 words, not one.
    expect(wordCount('我们今天去图书馆看书，然后回家吃饭。'.repeat(15))).toBeGreaterThan(70);
  });

  it("gives a text's first words as readers count them: a few words of a Chinese or Japanese passage, not all of it", () => {
    const passage = '我们今天去图书馆看书，然后回家吃饭。'.repeat(15);
    const opening = leadingWords(passage, 3);
    expect(opening).toBe('我们今天去…');
    expect(leadingWords('東京タワーは高いです。', 2)).toBe('東京タワーは…');
    expect(leadingWords('one two  three\nfour', 3)).toBe('one two three…');
    expect(leadingWords('one two three', 3)).toBe('one two three');
    expect(leadingWords('  ', 3)).toBe('');
    expect(leadingWords('Node.js的框架 is fast', 2)).toBe('Node.js的…');
  });

  it('cuts a run of an unspaced script at word starts, a spaced run not at all', () => {
    expect(wordStartsInRun('「你好」，世界！')).toEqual([0, 5]);
    expect(wordStartsInRun('well-known')).toEqual([0]);
  });

  it('counts code points as characters (an emoji or a CJK extension character is one)', () => {
    expect(characterCount('')).toBe(0);
    expect(characterCount('abc')).toBe(3);
    expect(characterCount('\u{1F600}\u{1F600} \u{20000}')).toBe(4);
  });

  it('fits a text to a limit in characters: 3 emoji fit 3, 4 do not, 4 letters do not', () => {
    expect(fitsCharacters('\u{1F600}'.repeat(3), 3)).toBe(true);
    expect(fitsCharacters('\u{1F600}'.repeat(4), 3)).toBe(false);
    expect(fitsCharacters('abcd', 3)).toBe(false);
    expect(fitsCharacters('', 0)).toBe(true);
  });

  it('cuts a text to a limit in characters only when over it, never between the halves of an emoji', () => {
    expect(truncatedToCharacters('\u{1F600}'.repeat(4), 3)).toBe('\u{1F600}'.repeat(3));
    expect(truncatedToCharacters(`ab${'\u{1F600}'.repeat(3)}`, 4)).toBe('ab\u{1F600}\u{1F600}');
    expect(truncatedToCharacters('\u{1F600}'.repeat(3), 3)).toBe('\u{1F600}'.repeat(3));
    expect(truncatedToCharacters('abcd', 3)).toBe('abc');
    expect(truncatedToCharacters('', 0)).toBe('');
  });

  it('refuses control characters in free text: every one on a single line, all but tab and line breaks in multi-line text', () => {
    for (const shape of ['single-line', 'multi-line'] as const) {
      expect(controlCharacterProblem('a\u0000b', shape)).toBe('must not contain control characters (found U+0000)');
      expect(controlCharacterProblem('a\u001bb', shape)).toMatch(/U\+001B/);
      expect(controlCharacterProblem('a\u007fb', shape)).toMatch(/U\+007F/);
      expect(controlCharacterProblem('a\u0085b', shape)).toMatch(/U\+0085/);
      expect(controlCharacterProblem('a\u009fb', shape)).toMatch(/U\+009F/);
      // Visible and invisible characters that are not controls: no-break space, zero-width space, emoji, U+00A0 past C1.
      expect(controlCharacterProblem('caf\u00e9 \u00a0\u200b\u{1F600}', shape)).toBeNull();
    }
    expect(controlCharacterProblem('one\ttwo\r\nthree', 'multi-line')).toBeNull();
    expect(controlCharacterProblem('one\ttwo', 'single-line')).toMatch(/U\+0009/);
    expect(controlCharacterProblem('one\ntwo', 'single-line')).toMatch(/U\+000A/);
  });

  it('refuses text that is not well-formed Unicode: an unpaired surrogate half, named, while a paired one is an emoji', () => {
    expect(wellFormedProblem('a\ud800b')).toBe('must be well-formed Unicode (found an unpaired surrogate U+D800)');
    expect(wellFormedProblem('trailing \ud83d')).toMatch(/U\+D83D/);
    expect(wellFormedProblem('\udc00 leading')).toMatch(/U\+DC00/);
    // Reversed halves are two unpaired ones.
    expect(wellFormedProblem('\ude00\ud83d')).toMatch(/U\+DE00/);
    expect(wellFormedProblem('caf\u00e9 \u{1F600} \ufffd')).toBeNull();
  });

  it('holds free text to both rules, well-formedness first, in tags too', () => {
    for (const shape of ['single-line', 'multi-line'] as const) {
      expect(freeTextProblem('a\ud800\u0000', shape)).toMatch(/unpaired surrogate U\+D800/);
      expect(freeTextProblem('a\u0000', shape)).toMatch(/control characters \(found U\+0000\)/);
      expect(freeTextProblem('\u{1F600}', shape)).toBeNull();
    }
    expect(freeTextProblem('one\ttwo', 'multi-line')).toBeNull();
    expect(tagsProblem(['fine', 'half \udbff'])).toBe('must be well-formed Unicode (found an unpaired surrogate U+DBFF)');
  });

  it('holds a name shown to others to the free-text rule and refuses the invisible characters that reorder, break or hide it', () => {
    expect(nameProblem('Reading list \u{1F4DA}')).toBeNull();
    expect(nameProblem('\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645 \u{1F469}\u200D\u{1F4BB}')).toBeNull();
    expect(nameProblem('x\u202Efdp.docx')).toBe('must not contain U+202E (right-to-left override)');
    expect(nameProblem('a\u2069b')).toBe('must not contain U+2069 (pop directional isolate)');
    expect(nameProblem('a\u2029b')).toBe('must not contain U+2029 (paragraph separator)');
    expect(nameProblem('a\u061Cb')).toBe('must not contain U+061C (Arabic letter mark)');
    expect(nameProblem('a\ufeffb')).toBe('must not contain U+FEFF (byte order mark, zero-width no-break space)');
    // The free-text rule first: a control character or an unpaired surrogate is named as it is in every other field.
    expect(nameProblem('a\u0007\u202Eb')).toBe(freeTextProblem('a\u0007', 'single-line'));
    expect(nameProblem('a\ud800')).toBe(wellFormedProblem('a\ud800'));
  });

  it('refuses a name or tag of invisible characters alone, and tags with the characters that reorder or hide them', () => {
    expect(nameProblem('\u200B\u200B')).toBe('must contain a visible character (found only spaces and invisible characters)');
    expect(nameProblem('\u200D \u200C')).toMatch(/visible character/);
    expect(nameProblem('')).toBeNull();
    for (const blank of ['\u3164', '\uFFA0', '\u115F\u1160', '\u034F', '\u2800', '\uFE0F ']) expect(nameProblem(blank)).toMatch(/visible character/);
    expect(nameProblem('\u2764\uFE0F')).toBeNull();
    expect(tagsProblem(['fine', 't\u202Eag'])).toBe('must not contain U+202E (right-to-left override)');
    expect(tagsProblem(['\u200B'])).toMatch(/visible character/);
    expect(tagsProblem(['\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645', '\u{1F469}\u200D\u{1F4BB}'])).toBeNull();
    expect(withoutInvisibleInName('Intro\u202E\u200F to \u2066x\u2069')).toBe('Intro to x');
  });

  it('refuses an invisible character between visible ones in a name or tag, naming it (look-alikes: "pay\u3164pal")', () => {
    const refused: Array<[string, string]> = [
      ['Zw\u200Bsp name', 'U+200B (zero width space)'],
      ['a\u200Cb', 'U+200C (zero width non-joiner)'],
      ['a\u200Db', 'U+200D (zero width joiner)'],
      ['a\u2060b', 'U+2060 (word joiner)'],
      ['a\u00ADb', 'U+00AD (soft hyphen)'],
      ['a\u034Fb', 'U+034F (combining grapheme joiner)'],
      ['a\u180Eb', 'U+180E (Mongolian vowel separator)'],
      ['pay\u3164pal', 'U+3164 (Hangul filler)'],
      ['a\u115Fb', 'U+115F (Hangul choseong filler)'],
      ['a\u2800b', 'U+2800 (Braille pattern blank)'],
      ['a\uFE0Fb', 'U+FE0F (variation selector-16)'],
      ['a\u{E0041}b', 'U+E0041 (tag character)'],
      ['report\u3164final\u200B.pdf', 'U+3164 (Hangul filler)'],
      ['1\uFE0Fa', 'U+FE0F'], // a keycap's VS16 only before U+20E3
      ['\u2764\uFE0F\uFE0F', 'U+FE0F'], // one selector, not two
      ['\u{1F469}\u200D', 'U+200D'], // a joiner with no emoji after it
      ['\u0648\u200C\u0628', 'U+200C'], // ZWNJ after waw, which joins nothing on its left: changes nothing shown
      ['\u{1F3F4}\u{E0067}\u{E0062}', 'U+E0067'], // a tag sequence without CANCEL TAG
      ['a\u{E0100}', 'U+E0100'], // an ideographic variation selector after a Latin letter
    ];
    for (const [name, found] of refused) {
      expect([name, nameProblem(name)]).toEqual([name, expect.stringContaining(`must not contain the invisible character ${found}`)]);
      expect([name, tagsProblem(['fine', name])]).toEqual([name, nameProblem(name)]);
    }
    expect(nameProblem('a\u200Db')).toBe('must not contain the invisible character U+200D (zero width joiner) except inside an emoji sequence or beside a virama');
  });

  it('keeps the invisible characters real text needs: emoji sequences, VS16 after an emoji, ZWJ/ZWNJ by IDNA ContextJ', () => {
    const kept = [
      '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}', // 👨‍👩‍👧
      '\u{1F3F3}\uFE0F\u200D\u{1F308}', // 🏳️‍🌈
      '\u{1F469}\u{1F3FD}\u200D\u{1F4BB} Dev', // 👩🏽‍💻, a skin tone before the joiner
      '\u2764\uFE0F books', '1\uFE0F\u20E3 first', // ❤️, keycap 1️⃣
      '\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F} Scotland', // the flag of Scotland (a tag sequence)
      '\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645', // Persian میخواهم: ZWNJ between joining letters
      '\u06A9\u062A\u0627\u0628\u200C\u0647\u0627', // کتاب‌ها
      '\u0915\u094D\u200D\u0937', '\u0915\u094D\u200C\u0937', // Devanagari: ZWJ and ZWNJ after a virama
      '\u0DC1\u0DCA\u200D\u0DBB\u0DD3', // Sinhala ශ්‍රී
      '\u09B0\u200D\u09CD\u09AF', // Bengali র‍্য (ya-phala after ra)
      '\u845B\u{E0100}\u57CE', // 葛󠄀城: an ideographic variation selector after a Han ideograph
      '\u1822\u180B\u1823', // Mongolian with a free variation selector
    ];
    for (const name of kept) {
      expect([name, nameProblem(name)]).toEqual([name, null]);
      expect(withoutInvisibleInName(name)).toBe(name);
    }
    expect(tagsProblem(kept)).toBeNull();
  });

  it('drops from parsed text the invisible characters a name may not hold there, keeping those it needs', () => {
    expect(withoutInvisibleInName('pay\u3164pal \u200Breport\u00AD')).toBe('paypal report');
    expect(withoutInvisibleInName('\u{1F469}\u200D\u{1F4BB}\u200D x\uFE0F \u0915\u094D\u200D\u0937')).toBe('\u{1F469}\u200D\u{1F4BB} x \u0915\u094D\u200D\u0937');
    for (const text of ['a\u200D\u200Db', '\u2764\uFE0F\uFE0F\u200D', '\u{1F3F4}\u{E0067}x', 'x\u202E\u200C\u0628']) expect(nameProblem(withoutInvisibleInName(text))).toBeNull();
  });

  it('names the invisible character hidden in an e-mail address', () => {
    expect(emailCharacterProblem('someone@example.com')).toBeNull();
    expect(emailCharacterProblem('ad\u200Bmin@example.com')).toBe('must not contain invisible characters (found U+200B)');
    expect(emailCharacterProblem('admin@exa\u202Emple.com')).toBe('must not contain invisible characters (found U+202E (right-to-left override))');
    expect(emailCharacterProblem('jos\u00E9@example.com')).toBeNull();
    expect(emailCharacterProblem('\u3164@example.com')).toBe('must not contain invisible characters (found U+3164)');
    expect(emailCharacterProblem('x\u034Fy@example.com')).toBe('must not contain invisible characters (found U+034F)');
    expect(emailCharacterProblem('a\u2800b@example.com')).toBe('must not contain invisible characters (found U+2800)');
  });

  it('sees no text in Hangul fillers, the combining grapheme joiner or the blank Braille pattern, so they count as no word', () => {
    expect(hasVisibleText('\u3164 \u034F \u2800\u200B')).toBe(false);
    expect(wordCount('one \u3164 two \u2800 three')).toBe(3);
    expect(hasVisibleText('\u2764\uFE0F')).toBe(true);
  });

  it('replaces unpaired surrogates with U+FFFD in parsed text and leaves pairs alone', () => {
    expect(withLoneSurrogatesReplaced('a\ud800b \u{1F600} c\udfff')).toBe('a\ufffdb \u{1F600} c\ufffd');
  });

  it('splits tags at commas, trims them and drops empty ones and repeats, keeping first-seen order', () => {
    expect(splitTags(['b, a,,b', ' c ', '', 'a'])).toEqual(['b', 'a', 'c']);
    expect(splitTags([])).toEqual([]);
  });

  it('collapses whitespace within lines and drops empty lines', () => {
    expect(collapseTextLines('\n Title \n\n  a \t b\u00a0 c \n \nlast')).toBe('Title\na b c\nlast');
    expect(collapseTextLines(' \n \n')).toBe('');
  });

  it('breaks lines at paragraphs, list items, headings, quotes and <br> only', () => {
    expect(BLOCK_TAGS).toEqual(expect.arrayContaining(['p', 'br', 'li', 'blockquote', 'h1', 'h6']));
    expect(BLOCK_TAGS).not.toContain('div');
    expect(BLOCK_TAGS.every((tag) => tag === tag.toLowerCase())).toBe(true);
  });

  // The web bundle imports this package too: it must not lean on Node's or the browser's globals.
  it('accepts no link or an http(s) URL, and says what is wrong with any other', () => {
    expect(linkProblem('')).toBeNull();
    expect(linkProblem('  https://example.com/a?b=c  ')).toBeNull();
    expect(linkProblem('http://example.com')).toBeNull();
    expect(linkProblem('javascript:alert(1)')).toBe('not-http');
    expect(linkProblem('ftp://example.com/file')).toBe('not-http');
    expect(linkProblem('example.com')).toBe('not-http');
    expect(linkProblem(`https://example.com/${'a'.repeat(MAX_LINK_CHARS)}`)).toBe('too-long');
  });

  it('refuses a link with a user name or password, or a host that is no DNS name nor IP address; the website takes the same rule', () => {
    const label63 = 'a'.repeat(63);
    const fine = [
      'https://example.com./x',
      `https://${label63}.example/`,
      `https://${Array.from({ length: 4 }, () => 'b'.repeat(61)).join('.')}.ex/`,
      'https://xn--bcher-kva.example/',
      'https://bücher.example/',
      'http://127.0.0.1:8080/',
      'http://[2001:db8::1]/',
      'https://a-b--c.example/',
      'https://localhost/',
      'https://example.com/a@b?c=d@e#f@g',
    ];
    for (const link of fine) expect([link, linkProblem(link)]).toEqual([link, null]);
    const refused: Array<[string, string]> = [
      ['https://u:p@x.com/', 'credentials'],
      ['http://user@host.example/', 'credentials'],
      ['https://:p@x.com/', 'credentials'],
      ['https://@x.com/', 'credentials'],
      ['https://x..com/', 'host'],
      ['https://-x-.com/', 'host'],
      ['https://x-.com/', 'host'],
      ['https://.x.com/', 'host'],
      [`https://${'a'.repeat(64)}.com/`, 'host'],
      [`https://${Array.from({ length: 4 }, () => 'b'.repeat(62)).join('.')}.ex/`, 'host'],
      ['https://a_b.example/', 'host'],
      ['https://a!b.example/', 'host'],
      ['https://x.com../', 'host'],
    ];
    for (const [link, problem] of refused) expect([link, linkProblem(link)]).toEqual([link, problem]);
    expect(linkProblemText('https://u:p@x.com')).toBe('must be an http or https URL without a user name or password ("user:password@" before the host)');
    expect(linkProblemText('https://X..com/')).toMatch(/^must be an http or https URL whose host is a domain name \(labels of 1 to 63 .* or an IP address \(found "x\.\.com"\)$/);
  });

  it('refuses a link whose written host reads as another site (browsers\' IDN display policy, idnHostProblem); the website takes the same rule', () => {
    const fine = ['https://bücher.example/', 'https://färgbolaget.se/', 'https://münchen.de/straße', 'https://例え.jp/', 'https://google日本.jp/', 'https://한국abc.kr/', 'https://россия.рф/', 'https://сор.ru/', 'https://ευρώπη.eu/', 'https://xn--80ak6aa92e.com/', 'https://xn--pypal-4ve.com/', 'https://example。com/'];
    for (const link of fine) expect([link, linkProblem(link)]).toEqual([link, null]);
    const refused = [
      'https://accounts.google.com\u2044signin.evil.example/',
      'https://paypal.com\u2215login',
      'https://аpple.com/',
      'https://pаypal.com/',
      'https://%D0%B0pple.com/',
      'https://аррӏе.com/',
      'https://ΑΟ.com/',
      'https://ｅｘａｍｐｌｅ.com/',
      'https://googleノlogin.example/',
      'https://x1٢.example/',
    ];
    for (const link of refused) expect([link, linkProblem(link)]).toEqual([link, 'look-alike-host']);
    // "․" (U+2024) and "／" (U+FF0F) the URL parser already refuses.
    for (const link of ['https://example.com\u2024evil.example/', 'https://example.com\uff0fx']) expect(linkProblem(link)).not.toBeNull();
    expect(linkProblemText('https://accounts.google.com\u2044signin.evil.example/')).toBe(
      'must be an http or https URL whose host reads as the site it opens: "com⁄signin" holds "⁄" (U+2044), which is no letter, digit or hyphen (a sign that can pass for "/", "." or another one) (a link is shown as written; write the host in ASCII or in punycode, "xn--...", to link to it anyway)',
    );
    expect(linkProblemText('https://аpple.com/')).toMatch(/"аpple" mixes scripts: Cyrillic "а" \(U\+0430\) and Latin "p" \(U\+0070\)/);
    expect(linkProblemText('https://аррӏе.com/')).toMatch(/"аррӏе" is written in Cyrillic letters that all look like Latin ones \(it reads as "apple"\)/);
  });

  it('judges host names by the IDN display policy: letters, digits and hyphens, one script a label (Latin with CJK), no whole-label look-alike of Latin', () => {
    for (const host of ['example.com', 'xn--80ak6aa92e.com', 'bücher.de', 'straße.de', '例え.jp', 'google日本.jp', 'россия.рф', 'сор.ru', 'сор.рф', 'ελλάδα.gr']) expect([host, idnHostProblem(host)]).toEqual([host, null]);
    for (const host of ['аррӏе.com', 'pаypal.com', 'аpple.com', 'ρaypal.com', 'com⁄x.evil', 'a∕b.com', 'a／b.com', 'a․b.com', 'ｅｘａｍｐｌｅ.com', 'googleノlogin.com', '한국日本ひらがな.jp', 'сор.com', 'αο.com']) {
      expect([host, idnHostProblem(host)]).toEqual([host, expect.any(String)]);
    }
  });

  it('accepts only a link written in full: "http(s)://", a host, no space, backslash or invisible character', () => {
    for (const fine of ['HTTPS://Example.com', 'https://example.com:8443/a/b?c=d#e', 'http://[::1]:8080/x', 'https://bücher.example/straße', 'https://example.com/%E2%80%8B', '\thttps://example.com/x\n', '\u00a0https://example.com\u3000']) {
      expect([fine, linkProblem(fine)]).toEqual([fine, null]);
    }
    const refused: Array<[string, string]> = [
      ['https:/example.com', 'not-full-url'],
      ['https:///example.com', 'not-full-url'],
      ['http:example.com', 'not-full-url'],
      ['https://:443/x', 'not-http'],
      ['https:\\\\example.com', 'backslash'],
      ['https://example.com\\path', 'backslash'],
      ['https://exa mple.com', 'space'],
      ['https://example.com/a\u00a0b', 'space'],
      ['//example.com', 'not-http'],
      ['https://example.com/\u200b', 'invisible-character'],
      ['\u200bhttps://example.com/', 'invisible-character'],
      ['https://example.com/\ufeff', 'invisible-character'],
      ['\ufeff', 'invisible-character'],
      ['https://exa\u200emple.com', 'invisible-character'],
      ['https://paypal.com\u3164@evil.example/', 'invisible-character'],
      ['https://pay\u034Fpal.com/', 'invisible-character'],
      ['https://pay\u2800pal.com/', 'invisible-character'],
      ['https://example.com/x\uFE0F', 'invisible-character'],
      ['https://example.com/\u200f', 'invisible-character'],
      ['https://example.com/\u202e/moc.evil', 'invisible-character'],
      ['https://example.com/\u2066x\u2069', 'invisible-character'],
      ['https://exam\u00adple.com', 'invisible-character'],
    ];
    for (const [link, problem] of refused) expect([link, linkProblem(link)]).toEqual([link, problem]);
    expect(linkProblemText('https://example.com/\u200b')).toBe('must be an http or https URL without invisible characters (found U+200B)');
    expect(linkProblemText('https:/example.com')).toBe('must be an http or https URL written in full, "http://" or "https://" then a host, such as https://example.com/page');
    expect(linkProblemText('https://exa mple.com')).toBe('must be an http or https URL without spaces');
    expect(linkProblemText('https://example.com\\x')).toBe('must be an http or https URL without backslashes');
    expect(linkProblemText('ftp://example.com')).toBe('must be an http or https URL');
    expect(linkProblemText(' https://example.com ')).toBeNull();
  });

  it('takes usernames of letters and digits of any one script, "_" and "-", 3 to 32 code points', () => {
    const accepted = [
      'abc', 'A_b-9', 'x'.repeat(32), '\u00e9mile', 'Zo\u00eb', // émile, Zoë
      '\uae40\ucca0\uc218', // 김철수
      '\u5c71\u7530\u592a\u90ce', '\u6771\u4eac\u30bf\u30ef\u30fc', // 山田太郎, 東京タワー (Han with Katakana and its long-vowel mark)
      '\ud64d\uae38\ub3d9\u6f22', '\u3131\u3131\ub9e8', // 홍길동漢 (Hangul with Han), ㄱㄱ맨 (compatibility jamo as Korean keyboards type them)
      '\u0414\u043c\u0438\u0442\u0440\u0438\u0439', '\u03a3\u03c9\u03ba\u03c1\u03ac\u03c4\u03b7\u03c2', // Дмитрий, Σωκράτης
      '\u0939\u093f\u0928\u094d\u0926\u0940', '\u0e44\u0e17\u0e22', // हिन्दी (marks after letters), ไทย
      '\u0645\u0631\u062d\u0628\u0627\u0661\u0662', 'user_42', // مرحبا١٢: Arabic letters and Arabic-Indic digits
      '\u00e9'.repeat(32), // 32 code points in NFC
    ];
    for (const name of accepted) expect([name, usernameProblem(name)]).toEqual([name, null]);
    const pattern = new RegExp(USERNAME_PATTERN, 'u');
    for (const name of accepted) expect([name, pattern.test(name)]).toEqual([name, true]);
    const lengthRule = 'must be 3 to 32 letters or digits of one script (Han may go with Hiragana, Katakana or Hangul), "_" or "-"';
    for (const name of ['ab', '\u00e9\u00e9', 'x'.repeat(33), '\u5c71'.repeat(33), 'x'.repeat(1_000_000)]) expect(usernameProblem(name)).toBe(lengthRule);
    expect(usernameProblem('a b')).toMatch(/; " " \(U\+0020\) is not one of them$/);
    expect(usernameProblem('a.b')).toMatch(/"\." \(U\+002E\) is not one of them$/);
  });

  it('refuses look-alike usernames (UTS #39): mixed scripts, invisible and compatibility characters, stray marks, mixed digits', () => {
    // "pаypal" with a Cyrillic а.
    expect(usernameProblem('p\u0430ypal')).toBe('must be written in one script (Han may go with Hiragana, Katakana or Hangul): found Latin "p" (U+0070) and Cyrillic "\u0430" (U+0430)');
    expect(usernameProblem('\u0441ard')).toMatch(/found Cyrillic "\u0441" \(U\+0441\) and Latin "a"/);
    expect(usernameProblem('abc\u03b1')).toMatch(/Latin .* and Greek/);
    expect(usernameProblem('\u5c71\u3072\ud55c')).toMatch(/found Hiragana "\u3072" \(U\+3072\) and Hangul "\ud55c"/); // Japanese and Korean
    expect(usernameProblem('abc\u5c71')).toMatch(/found Latin "a" .* and Han "\u5c71"/);
    for (const invisible of ['\u200b', '\u200d', '\u00ad', '\u2060', '\ufeff', '\u202e', '\u034f', '\ufe0f', '\u3164', '\u115f']) {
      expect(usernameProblem(`ad${invisible}min`)).toBe(`must not contain invisible characters (found U+${invisible.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`);
    }
    expect(usernameProblem('\uff41\uff44\uff4d\uff49\uff4e')).toBe('must not contain compatibility characters such as fullwidth, styled or circled letters (found "\uff41" (U+FF41), write "a" instead)');
    expect(usernameProblem('\ud835\udc1a\ud835\udc1b\ud835\udc1c')).toMatch(/compatibility characters .*U\+1D41A/); // mathematical bold abc
    expect(usernameProblem('o\ufb00ice')).toMatch(/compatibility/); // the ff ligature
    expect(usernameProblem('\u0301abc')).toBe('a combining mark must follow a letter (found "\u0301" (U+0301))');
    expect(usernameProblem('1\u20e3ab')).toMatch(/combining mark must follow a letter/); // keycap on a digit
    expect(usernameProblem(`a${'\u0301'.repeat(5)}b`)).toBe('must not stack more than 4 combining marks on one letter');
    expect(usernameProblem('12\u0663')).toBe('must not mix digits of different systems (found "1" (U+0031) and "\u0663" (U+0663))');
    expect(usernameProblem('\u0966\u0967\u0662')).toMatch(/mix digits/); // Devanagari and Arabic-Indic
    expect(usernameProblem('a\ud800b')).toMatch(/U\+D800/);
    // The Arabic tatweel only stretches a joining: "مـحمد" and "مـــــحمد" would be look-alikes of "محمد".
    expect(usernameProblem('\u0645\u062d\u0645\u062f')).toBeNull();
    for (const stretched of ['\u0645\u0640\u062d\u0645\u062f', '\u0645\u0640\u0640\u0640\u062d\u0645\u062f', '\u0645\u062d\u0645\u062f\u0640']) {
      expect(usernameProblem(stretched)).toBe('must not contain the Arabic tatweel "\u0640" (U+0640), which only stretches the joining of two letters: write the name without it');
    }
  });

  it('keys a username for uniqueness by Unicode case folding of its NFC form', () => {
    const same = [
      ['Zo\u00eb', 'ZO\u00cb', 'zoe\u0308'],
      ['Stra\u00dfe', 'STRASSE', 'strasse', 'STRA\u1e9eE'],
      ['\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3', '\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2', '\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c3'],
      ['\u0414\u043c\u0438\u0442\u0440\u0438\u0439', '\u0414\u041c\u0418\u0422\u0420\u0418\u0419'],
      ['CardFan', 'cardfan', 'CARDFAN'],
    ];
    for (const names of same) expect(new Set(names.map(usernameCaseFold)).size).toBe(1);
    expect(usernameCaseFold('CardFan')).toBe('cardfan');
    expect(usernameCaseFold('\uae40\ucca0\uc218')).toBe('\uae40\ucca0\uc218');
    expect(usernameCaseFold('Zoe')).not.toBe(usernameCaseFold('Zo\u00eb'));
  });

  it('keys every spelling of an e-mail address as one: trimmed, lower case, NFC, the domain in IDNA ASCII, one final dot dropped', () => {
    const key = (raw: string) => emailKey(raw, domainToASCII);
    expect(key('  Ann.Lee+x@Example.ORG ')).toBe('ann.lee+x@example.org');
    // One composed form, whether typed composed, decomposed, in capitals or in punycode.
    for (const typed of ['J\u00d6RG@EX\u00c4MPLE.COM', 'Jo\u0308rg@Exa\u0308mple.com', 'JO\u0308RG@EXA\u0308MPLE.COM', 'j\u00f6rg@XN--EXMPLE-CUA.COM']) {
      expect(key(typed)).toBe('j\u00f6rg@xn--exmple-cua.com');
    }
    // Lower-casing first, then NFC: the capital dotted I leaves an i and a combining dot, which stay two.
    expect(key('\u0130stanbul@example.com')).toBe('i\u0307stanbul@example.com');
    // UTS #46 maps fullwidth letters and the ideographic full stop; "ß" stays (nontransitional).
    expect(key('x@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45\u3002com')).toBe('x@example.com');
    expect(key('x@stra\u00dfe.de')).toBe('x@xn--strae-oqa.de');
    // One final dot is the fully qualified spelling of the same domain; only one is dropped.
    expect(key('Bob@Example.com.')).toBe('bob@example.com');
    expect(key('bob@example.com\u3002')).toBe('bob@example.com');
    expect(key('bob@example.com..')).toBe('bob@example.com.');
    // A domain IDNA refuses is kept as written (lower case, NFC); text without "@" is only trimmed, lower-cased, NFC.
    expect(key('x@XN--A.com')).toBe('x@xn--a.com');
    expect(key('x@a\u0000b.com')).toBe('x@a\u0000b.com');
    expect(key(' Not-An-Address. ')).toBe('not-an-address.');
    // The IDNA function is the caller's (none of Node's here): what it answers is the domain; "" is a refusal.
    expect(emailKey('x@Example.com', (domain) => `[${domain}]`)).toBe('x@[example.com]');
    expect(emailKey('x@Example.com.', () => '')).toBe('x@example.com');
  });

  it('type-checks without the Node and DOM libraries', () => {
    const result = spawnSync(process.execPath, [join(PACKAGE, '../../node_modules/typescript/bin/tsc'), '-p', join(PACKAGE, 'tsconfig.json')], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
