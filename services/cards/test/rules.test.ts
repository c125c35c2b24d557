import sanitizeHtml from 'sanitize-html';
import { CARD_SANITIZE_OPTIONS, CARD_WELL_FORMED_OPTIONS, cardTextFromHtml, fingerprintOf, isNearCopy, jaccard, MAX_NESTING_DEPTH, normalizeContent, sanitizeCardHtml, shinglesOf, textOfHtml, validCollectionDescription, validCollectionName, validLink, validOcFilePath, validTags } from '../src/domain/rules';
import { wellFormedHtml } from '../src/domain/well-formed-html';
import { someContent } from './builders';

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

describe('card rules', () => {
  it('keeps only the allow-list: no scripts, styles, event handlers or non-http links', () => {
    const clean = sanitizeCardHtml(
      '<div><p class="x" onclick="a()">Hi <b>bold</b> <mark>m</mark> <a href="javascript:x()" onclick="y">j</a> <a href="https://ok/">ok</a> <a href="//evil/">pr</a></p><script>bad()</script><style>p{}</style><img src=x onerror=alert(1)><table><tr><td>cell</td></tr></table></div>',
    );
    expect(clean).toBe('<p>Hi <b>bold</b> <mark>m</mark> <a>j</a> <a href="https://ok/">ok</a> <a>pr</a></p><p>cell</p>');
  });

  it('makes a table text rows, as the web editor does: a paragraph per row, cells separated by " | " (the cells were glued: "YearRate20194.5%")', () => {
    expect(sanitizeCardHtml('<table><tr><td>Year</td><td>Rate</td></tr><tr><td>2019</td><td>4.5%</td></tr></table>')).toBe('<p>Year | Rate</p><p>2019 | 4.5%</p>');
    // Word: a cell's paragraphs are lines of the row, its formatting kept; a row without text is left out.
    expect(
      sanitizeCardHtml(
        "<html><body><table class=MsoTableGrid border=1><tr><td width=100><p class=MsoNormal>Name<o:p></o:p></p></td><td><p class=MsoNormal><b>Value</b><o:p></o:p></p><p class=MsoNormal>second line</p></td></tr><tr><td><p class=MsoNormal><o:p>&nbsp;</o:p></p></td><td> </td></tr></table></body></html>",
      ),
    ).toBe('<p>Name | <b>Value</b><br />second line</p>');
    // The caption first, head rows before the body's and foot rows after, as a browser's table.rows; text outside the cells before the table.
    expect(sanitizeCardHtml('<table>stray<tfoot><tr><td>sum</td><td>3</td></tr></tfoot><caption>Rates</caption><tr><th>A</th><th>B</th></tr><thead><tr><th>h</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>')).toBe(
      'stray<p>Rates</p><p>h</p><p>A | B</p><p>1 | 2</p><p>sum | 3</p>',
    );
    // A table in a cell becomes lines of that cell; a cell's lists, line breaks and other blocks are lines too (none at its end).
    expect(sanitizeCardHtml('<table><tr><td>a<table><tr><td>x</td><td>y</td></tr><tr><td>z</td></tr></table>b</td><td><ul><li>one</li><li>two<br></li></ul></td><td><div>c</div>d<hr>e</td></tr></table>')).toBe(
      '<p>a<br />x | y<br />z<br />b | one<br />two | c<br />d<br />e</p>',
    );
    // Rows are paragraphs where a paragraph can stand (a list item), lines inside text (bold, a paragraph).
    expect(sanitizeCardHtml('<ul><li><table><tr><td>in</td><td>item</td></tr></table></li></ul><b>bold<table><tr><td>r1</td></tr><tr><td>r2</td></tr></table>after</b>')).toBe(
      '<ul><li><p>in | item</p></li></ul><b>bold<br />r1<br />r2<br />after</b>',
    );
    const table = `<table><tr><td>${words(40)}</td><td>2019</td></tr><tr><td>${words(40)}</td><td>4.5%</td></tr></table>`;
    const { content } = cardTextFromHtml(table);
    expect(content).toBe(`${words(40)} | 2019\n${words(40)} | 4.5%`);
  });

  it('keeps the text of every other block the allow-list drops apart from the text around it (a line break where they met)', () => {
    const cases: Array<[string, string, string]> = [
      ['<div>a</div><div>b</div>', 'a<br />b', 'a\nb'],
      ['<dl><dt>Term</dt><dd>Definition</dd><dt>T2<dd>D2</dl>', 'Term<br />Definition<br />T2<br />D2', 'Term\nDefinition\nT2\nD2'],
      ['<figure>Image<figcaption>Caption</figcaption></figure>after', 'Image<br />Caption<br />after', 'Image\nCaption\nafter'],
      ['<section>s</section><article>t</article><aside>u</aside><header>h</header><footer>f</footer><nav>v</nav><main>w</main>', 's<br />t<br />u<br />h<br />f<br />v<br />w', 's\nt\nu\nh\nf\nv\nw'],
      ['<details><summary>Summary</summary>Body</details>', 'Summary<br />Body', 'Summary\nBody'],
      ['<address>Street 1</address>City', 'Street 1<br />City', 'Street 1\nCity'],
      ['<pre>\nline one\nline two\n</pre>after', '\nline one\n<br />line two\n<br />after', 'line one\nline two\nafter'],
      ['x<hr>y', 'x<br />y', 'x\ny'],
      ['<td>cell</td><td>without table</td><tr><th>row</th></tr>', 'cell<br />without table<br />row', 'cell\nwithout table\nrow'],
      ['<li>item</li>without list', '<li>item</li>without list', 'item\nwithout list'],
      ['<ruby>漢<rp>(</rp><rt>kan</rt><rp>)</rp>字<rt>ji</rt></ruby>', '漢(kan)字(ji)', '漢(kan)字(ji)'],
      // No second break where one is (a line break, a kept block); whitespace between them is none (it shows as a space).
      ['<div>a<br></div><div><p>b</p></div><div>c</div>\n<span>d</span>', 'a<br /><p>b</p>c\n<span><br />d</span>', 'a\nb\nc\nd'],
      ['<div>a &amp;</div><div>&nbsp;</div><div>b</div>', 'a &amp;\u00a0<br />b', 'a &\nb'],
    ];
    for (const [input, cardHtml, text] of cases) {
      expect({ input, cardHtml: sanitizeCardHtml(input), text: textOfHtml(sanitizeCardHtml(input)) }).toEqual({ input, cardHtml, text });
    }
  });

  it("keeps a pre's empty lines as empty lines (two line breaks), not merged with the lines around them", () => {
    // Before, '<pre>l1\nl2\n\nl3</pre>' was stored 'l1\n<br />l2\n\n<br />l3': the empty line was gone.
    const cases: Array<[string, string, string]> = [
      // The card's text has no empty lines (collapseTextLines), as before; its HTML shows them.
      ['<pre>l1\nl2\n\nl3</pre>', 'l1\n<br />l2\n\n<br /><br />l3', 'l1\nl2\nl3'],
      ['<pre>a\n\n\nb</pre>', 'a\n\n\n<br /><br /><br />b', 'a\nb'],
      // Over elements in the pre; a line of spaces is an empty line.
      ['<pre>a\n<b>\n</b>  \nb</pre>', 'a\n<b>\n</b>  \n<br /><br /><br />b', 'a\nb'],
      // Empty lines at the pre's start or end are none (as before), as in the web editor's lines of a pre.
      ['x<pre>\n\n\nl1\n\n\n</pre>y', 'x\n\n\n<br />l1\n\n\n<br />y', 'x\nl1\ny'],
      ['<p>p</p><pre>\n\nl1\n\nl2\n\n</pre>', '<p>p</p>\n\nl1\n\n<br /><br />l2\n\n', 'p\nl1\nl2'],
    ];
    for (const [input, cardHtml, text] of cases) {
      expect({ input, cardHtml: sanitizeCardHtml(input), text: textOfHtml(sanitizeCardHtml(input)) }).toEqual({ input, cardHtml, text });
    }
  });

  it('cleans HTML without tables or other dropped blocks as before', () => {
    const before = (html: string) => sanitizeHtml(wellFormedHtml(html, CARD_WELL_FORMED_OPTIONS), CARD_SANITIZE_OPTIONS);
    for (const html of [
      '<p>a</p>b<b>c<i>d</i></b><ul><li>x<li>y</ul>',
      '<p class="x">a &amp; b &lt;c&gt; "q" &#1;</p><span title="t>">s</span><a href="https://x/?a=1&amp;b=2">l</a>',
      '<h2>t<p>u</h2><blockquote>q<br>r</blockquote><ol start="3"><li>n</ol><font>f<br>g</font><rb>base</rb>',
      `<p>${words(80)}</p><script>x</script><style>p{}</style><textarea>t<br></textarea>&#x`,
      '<b>'.repeat(600) + 'deep',
    ]) expect(sanitizeCardHtml(html)).toBe(before(html));
  });

  it('keeps where a numbered list starts (ol start, a number only), no other list attribute', () => {
    expect(sanitizeCardHtml('<ol start="3" type="a"><li>c</li></ol><ol start="x"><li>a</li></ol><ul start="2"><li>b</li></ul>')).toBe(
      '<ol start="3"><li>c</li></ol><ol><li>a</li></ol><ul><li>b</li></ul>',
    );
  });

  it('keeps a writing direction on blocks (dir rtl, ltr or auto, as Word and Google Docs paste it), nothing else in dir', () => {
    expect(
      sanitizeCardHtml(
        '<p dir="rtl">هذا نص <b dir="rtl">عربي</b></p><h2 DIR=" RTL ">כותרת</h2><ol dir="auto" start="2" type="a"><li dir="ltr">x</li></ol>' +
          '<ul dir="rtl onclick"><li dir="">y</li></ul><blockquote dir="rtl">ق</blockquote><p dir="up">z</p><span dir="rtl">s</span><a href="https://e.org/" dir="rtl">l</a>',
      ),
    ).toBe(
      '<p dir="rtl">هذا نص <b>عربي</b></p><h2 dir="rtl">כותרת</h2><ol start="2" dir="auto"><li dir="ltr">x</li></ol>' +
        '<ul><li>y</li></ul><blockquote dir="rtl">ق</blockquote><p>z</p><span>s</span><a href="https://e.org/">l</a>',
    );
  });

  it('unwraps elements nested deeper than MAX_NESTING_DEPTH, keeping their text', () => {
    const text = words(80);
    const { cardHtml, content } = cardTextFromHtml(`${'<b>'.repeat(20_000)}${text}`);
    expect(content).toBe(text);
    expect(cardHtml.match(/<b>/g)).toHaveLength(MAX_NESTING_DEPTH);
    expect(cardHtml.endsWith(`${text}${'</b>'.repeat(MAX_NESTING_DEPTH)}`)).toBe(true);
  });

  it('derives text with entities decoded and one line per block', () => {
    expect(textOfHtml('<h1>Title</h1><p>a &amp; b&nbsp;c</p><ul><li>one</li><li>two</li></ul>x<br>y')).toBe('Title\na & b c\none\ntwo\nx\ny');
  });

  it('needs more than 70 and at most 5000 words, at most 29000 characters', () => {
    expect(() => cardTextFromHtml(`<p>${words(70)}</p>`)).toThrow(/more than 70 words/);
    // Stray control characters of pasted or extracted text are dropped from the HTML and the text; HTML whitespace stays.
    const noisy = cardTextFromHtml(`<p>${words(71)} ab\u0000c\u001bd\u0085e\u009f &#1;f\tg\fh</p>`);
    expect(noisy.cardHtml).not.toMatch(/[\u0000-\u0008\u000b\u000e-\u001f\u007f-\u009f]/);
    expect(noisy.content).not.toMatch(/\p{Cc}/u);
    expect(noisy.content.endsWith('abcde f g h')).toBe(true);
    expect(cardTextFromHtml(`<p>${words(71)}</p>`).content).toBe(words(71));
    // Soft hyphens (a hint where a line may break) stay in the HTML and leave the text, so the word is the one found.
    const hyphenated = cardTextFromHtml(`<p>${words(71)} soft\u00adhyphen&shy;ated \u00ad</p>`);
    expect(hyphenated.cardHtml).toContain('soft\u00adhyphen\u00adated');
    expect(hyphenated.content).toBe(`${words(71)} softhyphenated`);
    expect(() => cardTextFromHtml(`<p>${words(5001)}</p>`)).toThrow(/at most 5000 words/);
    expect(() => cardTextFromHtml(`<p>${Array.from({ length: 80 }, () => 'y'.repeat(400)).join(' ')}</p>`)).toThrow(/29000 characters/);
    expect(() => cardTextFromHtml(`<script>${words(100)}</script>`)).toThrow(/found 0/);
    // Characters are code points: 80 words of a letter and 189 emoji are 15,279 characters (30,399 UTF-16 units).
    const emoji = Array.from({ length: 80 }, () => `x${'\u{1F600}'.repeat(189)}`).join(' ');
    expect(cardTextFromHtml(`<p>${emoji}</p>`).content).toBe(emoji);
    expect(() => cardTextFromHtml(`<p>${emoji} ${'\u{1F600}'.repeat(14_000)}</p>`)).toThrow(/found 29280/);
  });

  it('accepts empty or http(s) links and cleans tags', () => {
    expect(validLink(' https://a.example/x ')).toBe('https://a.example/x');
    expect(validLink('')).toBe('');
    expect(() => validLink('javascript:alert(1)')).toThrow(/link/);
    expect(() => validLink('nope')).toThrow(/link/);
    // As written: a URL parser would open https://example.com/ for the first two and encode the invisible characters.
    expect(() => validLink('https:/example.com')).toThrow(/^link: must be an http or https URL written in full, "http:\/\/" or "https:\/\/" then a host/);
    expect(() => validLink('https:///example.com')).toThrow(/^link: must be an http or https URL written in full/);
    expect(() => validLink('https://example.com/\u200b')).toThrow(/^link: must be an http or https URL without invisible characters \(found U\+200B\)$/);
    expect(() => validLink('https://example.com/\ufeff')).toThrow(/found U\+FEFF/);
    expect(() => validLink('https://example.com/\u202e')).toThrow(/found U\+202E/);
    expect(() => validLink('https://exa mple.com')).toThrow(/^link: must be an http or https URL without spaces$/);
    expect(validTags([' a ', 'b,c', '', 'a'])).toEqual(['a', 'b', 'c']);
    expect(() => validTags(['x'.repeat(201)])).toThrow(/tag_set/);
    // Tag characters are code points: 200 emoji are one tag of 200 characters.
    expect(validTags([` ${'\u{1F600}'.repeat(200)} `])).toEqual(['\u{1F600}'.repeat(200)]);
    expect(() => validTags(['\u{1F600}'.repeat(201)])).toThrow(/each tag at most 200 characters/);
  });

  it('refuses an unpaired surrogate in card HTML, a link, tags and a collection, naming the field', () => {
    const illFormed = /must be well-formed Unicode \(found an unpaired surrogate U\+D800\)/;
    expect(() => cardTextFromHtml(`<p>${words(71)} half\ud800</p>`)).toThrow(new RegExp(`^card_html: ${illFormed.source}`));
    expect(() => validLink('https://a.example/\ud800')).toThrow(new RegExp(`^link: ${illFormed.source}`));
    expect(() => validTags(['ok', 'b\ud800'])).toThrow(new RegExp(`^tag_set: ${illFormed.source}`));
    expect(() => validCollectionName('x\ud800')).toThrow(new RegExp(`^name: ${illFormed.source}`));
    expect(() => validCollectionDescription('x\ud800')).toThrow(new RegExp(`^description: ${illFormed.source}`));
  });

  it('counts collection names (trimmed) and descriptions in characters as code points', () => {
    const emoji = '\u{1F600}';
    expect(validCollectionName(emoji.repeat(255))).toBe(emoji.repeat(255));
    expect(() => validCollectionName(emoji.repeat(256))).toThrow(/name: must be at most 255 characters/);
    expect(validCollectionName(`  ${'x'.repeat(255)}\n `)).toBe('x'.repeat(255));
    expect(() => validCollectionName(` ${'x'.repeat(256)} `)).toThrow(/at most 255/);
    expect(() => validCollectionName(' \t ')).toThrow(/must not be empty/);
    expect(validCollectionDescription(emoji.repeat(2000))).toBe(emoji.repeat(2000));
    expect(() => validCollectionDescription(emoji.repeat(2001))).toThrow(/description: must be at most 2000 characters/);
  });

  it('refuses a collection name a reader cannot see (only zero-width, format or control characters) as empty', () => {
    for (const invisible of ['\u200b\u200b', '\u00ad', '\u202e', '\u2060 \u200d', '\u0000\u0007']) {
      expect(() => validCollectionName(invisible)).toThrow(/name: must not be empty/);
    }
  });

  it('holds collection names to the rule of every name shown to others, as file names: no bidi override, isolate, direction mark, separator or BOM', () => {
    expect(() => validCollectionName('\u202eabc')).toThrow('name: must not contain U+202E (right-to-left override)');
    expect(() => validCollectionName('Notes\u202Efdp.exe')).toThrow('name: must not contain U+202E (right-to-left override)');
    expect(() => validCollectionName('a\u2066b')).toThrow('name: must not contain U+2066 (left-to-right isolate)');
    expect(() => validCollectionName('2024\u200Freport')).toThrow('name: must not contain U+200F (right-to-left mark)');
    expect(() => validCollectionName('line\u2028break')).toThrow('name: must not contain U+2028 (line separator)');
    expect(() => validCollectionName('in\ufeffside')).toThrow(/name: must not contain U\+FEFF/);
    // Joiners stay allowed: emoji sequences and Persian words need them.
    expect(validCollectionName('\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645 \u{1F469}\u200D\u{1F4BB}')).toBe('\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645 \u{1F469}\u200D\u{1F4BB}');
  });

  it('refuses an invisible character between visible ones in a collection name, a tag or an oc_file_path, naming it; keeps what real text needs', () => {
    expect(() => validCollectionName('Zw\u200Bsp name')).toThrow('name: must not contain the invisible character U+200B (zero width space)');
    expect(() => validTags(['pay\u3164pal'])).toThrow('tag_set: must not contain the invisible character U+3164 (Hangul filler)');
    expect(() => validCollectionName('a\u2060b')).toThrow(/^name: must not contain the invisible character U\+2060 \(word joiner\)$/);
    expect(() => validTags(['a\u200Db'])).toThrow(/^tag_set: must not contain the invisible character U\+200D \(zero width joiner\) except/);
    for (const kept of ['Family \u{1F468}\u200D\u{1F469}\u200D\u{1F467}', '\u2764\uFE0F', '\u0915\u094D\u200D\u0937']) {
      expect(validCollectionName(kept)).toBe(kept);
      expect(validTags([kept])).toEqual([kept]);
      expect(validOcFilePath(`/docs/${kept}.docx`)).toBe(`/docs/${kept}.docx`);
    }
  });

  it('holds oc_file_path to the rule of names: no bidi control reversing what others see, no invisible character', () => {
    expect(() => validOcFilePath('/docs/\u202Egnp.exe')).toThrow('oc_file_path: must not contain U+202E (right-to-left override)');
    expect(() => validOcFilePath('/docs/a\u2067b')).toThrow('oc_file_path: must not contain U+2067 (right-to-left isolate)');
    expect(() => validOcFilePath('/docs/re\u200Bport.pdf')).toThrow('oc_file_path: must not contain the invisible character U+200B (zero width space)');
    expect(() => validOcFilePath('/a\u0000b')).toThrow('oc_file_path: must not contain control characters (found U+0000)');
    expect(validOcFilePath('/docs/\u05D3\u05D5\u05D7.pdf')).toBe('/docs/\u05D3\u05D5\u05D7.pdf');
    expect(validOcFilePath('')).toBeNull();
    expect(validOcFilePath(undefined)).toBeNull();
  });

  it('normalizes case, punctuation and spacing; near copies share most of their sketch', () => {
    expect(normalizeContent('Hello,   WORLD!\nAgain')).toBe('hello world again');
    const text = someContent(300);
    const tokens = text.split(' ');
    tokens[100] = 'different';
    const near = tokens.join(' ');
    expect(jaccard(shinglesOf(text), shinglesOf(near))).toBeGreaterThanOrEqual(0.9);
    const shared = fingerprintOf(text).sketch.filter((h) => fingerprintOf(near).sketch.includes(h)).length;
    expect(shared).toBeGreaterThanOrEqual(4);
    const unrelated = fingerprintOf(someContent(300)).sketch.filter((h) => fingerprintOf(text).sketch.includes(h)).length;
    expect(unrelated).toBeLessThan(4);
    expect(fingerprintOf('A b, C!').contentHash).toBe(fingerprintOf('a B c').contentHash);
    expect(isNearCopy(text, near)).toBe(true);
    expect(isNearCopy('A b, C!', 'a B c')).toBe(true);
    expect(isNearCopy(text, someContent(300))).toBe(false);
  });

  it('finds near copies in scripts written without spaces, character by character', () => {
    // Six sentences of Chinese: split at spaces and punctuation they were 19 clause-long "words", so one changed
    // character changed three of their 17 shingles (Jaccard 0.70, no near copy).
    const text =
      '我们今天去公园散步，天气很好，孩子们在草地上玩耍，老人们坐在长椅上聊天。湖边的柳树随风摇摆，几只白鹅在水里游来游去，远处传来悠扬的笛声。' +
      '中午我们在附近的小餐馆吃了午饭，菜的味道很地道，价格也不贵。下午我们去了博物馆，看到了很多古代的瓷器和书画，讲解员的介绍非常生动。' +
      '傍晚时分，夕阳把整个城市染成了金色，街上的行人渐渐多了起来。回家的路上，我们买了一些新鲜的水果，准备明天带给朋友们。';
    const near = text.replace('草地', '草坪');
    expect(jaccard(shinglesOf(text), shinglesOf(near))).toBeGreaterThanOrEqual(0.9);
    expect(isNearCopy(text, near)).toBe(true);
    const shared = fingerprintOf(text).sketch.filter((h) => fingerprintOf(near).sketch.includes(h)).length;
    expect(shared).toBeGreaterThanOrEqual(4);
    // Different text in the same script stays different.
    const other = '图书馆里的学生正在安静地读书，窗外下着小雨，管理员在整理新到的杂志。走廊尽头的咖啡机发出轻轻的声音，几个研究生在讨论论文的结构。';
    expect(isNearCopy(text, other)).toBe(false);
    // Spaced scripts keep their word shingles.
    expect(shinglesOf('alpha beta gamma delta')).toEqual(new Set(['alpha beta gamma', 'beta gamma delta']));
  });
});
