import fc from 'fast-check';
import { countWords, MAX_CARD_WORDS, MIN_CARD_WORDS, splitIntoCards } from '../src/domain/card-splitter';
import type { DocumentBlock } from '../src/domain/model';

const words = (n: number, word = 'word') => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ');
const h = (text: string, level = 2): DocumentBlock => ({ kind: 'heading', level, text, links: [] });
const p = (text: string, links: string[] = []): DocumentBlock => ({ kind: 'paragraph', text, links });

describe('splitIntoCards', () => {
  it('each heading starts a card titled by the heading, with the heading in the HTML', () => {
    const cards = splitIntoCards({ blocks: [h('First Topic'), p(words(80, 'a')), h('Second Topic', 3), p(words(90, 'b'))] });
    expect(cards.map((c) => c.title)).toEqual(['First Topic', 'Second Topic']);
    expect(cards[0]!.html.startsWith('<h2>First Topic</h2>\n<p>a0 a1')).toBe(true);
    expect(cards[1]!.html.startsWith('<h3>Second Topic</h3>')).toBe(true);
    expect(cards.map((c) => c.index)).toEqual([0, 1]);
  });

  it('a right-to-left block (DocumentBlock.dir) is written dir="rtl" on its heading, p or li, on each piece of a cut paragraph and on a further paragraph of an item; other blocks get no dir', () => {
    const rtl = (block: DocumentBlock): DocumentBlock => ({ ...block, dir: 'rtl' });
    const item = (text: string, continues?: true): DocumentBlock => rtl({ ...p(text), list: { ordered: true, level: 1, number: 1, ...(continues ? { continues } : {}) } });
    const cards = splitIntoCards({ blocks: [rtl(h('2026 تقرير')), rtl(p(`${words(500, 'r')}.`)), p(words(20, 'e')), item('1 بند'), item('ثانية', true)] });
    const tags = cards.map((card) => card.html.match(/<[a-z][a-z0-9]*[^>]*>/g));
    expect(tags).toEqual([
      ['<h2 dir="rtl">', '<p dir="rtl">'],
      ['<h2 dir="rtl">', '<p dir="rtl">', '<p>', '<ol>', '<li dir="rtl">', '<p dir="rtl">'],
    ]);
    expect(cards[1]!.html).toContain('<p>e0 ');
    expect(cards[1]!.html).toContain('<li dir="rtl">1 بند<p dir="rtl">ثانية</p></li>');
  });

  describe('list items', () => {
    const li = (text: string, ordered: boolean, number: number, level = 1): DocumentBlock => ({ ...p(text), list: { ordered, level, number } });

    it('are set in one ul or ol per list, a deeper level inside its item, the text one line per item as the card HTML reads', () => {
      const blocks = [h('Steps'), p(words(62)), li('Grind', true, 1), li('Brew', true, 2), li('hot', false, 1, 2), li('cool', false, 2, 2), li('Pour', true, 3), li('Enjoy', false, 1), li('Again', false, 1), p('After')];
      const [card] = splitIntoCards({ blocks });
      expect(card!.html).toBe(
        `<h2>Steps</h2>\n<p>${words(62)}</p>\n<ol><li>Grind</li><li>Brew<ul><li>hot</li><li>cool</li></ul></li><li>Pour</li></ol>` +
          '<ul><li>Enjoy</li></ul><ul><li>Again</li></ul>\n<p>After</p>',
      );
      // No markers: the words of the items, as the cards service derives a card's text from its li elements.
      expect(card!.text).toBe(`Steps\n${words(62)}\nGrind\nBrew\nhot\ncool\nPour\nEnjoy\nAgain\nAfter`);
      expect(card!.wordCount).toBe(71);
    });

    it('a numbered list cut between two cards continues its numbering in the next (ol start)', () => {
      const items = Array.from({ length: 20 }, (_, i) => li(words(30, `i${i}w`), true, i + 1));
      const cards = splitIntoCards({ blocks: [h('List'), ...items] });
      expect(cards.length).toBeGreaterThan(1);
      expect(cards[0]!.html).toMatch(/^<h2>List<\/h2>\n<ol><li>i0w0 /);
      const first = Number(/^<h2>List<\/h2>\n<ol start="(\d+)"><li>i(\d+)w0 /.exec(cards[1]!.html)?.[1]);
      expect(cards[1]!.html).toMatch(new RegExp(`<ol start="${first}"><li>i${first - 1}w0 `));
      expect(cards[1]!.html.match(/<ol/g)).toHaveLength(1);
    });

    it("a further paragraph of an item is a p in the item's li, and the list goes on; one whose item the card before holds is a paragraph", () => {
      const more = (text: string, ordered: boolean, number: number, level = 1): DocumentBlock => ({ ...p(text), list: { ordered, level, number, continues: true } });
      const shape = (html: string) => html.replace(/(\w)\d+(?: \w\d+)+/g, '$1…');
      const [card] = splitIntoCards({ blocks: [h('Steps'), li(words(10, 'a'), true, 1), more(words(50, 'b'), true, 1), li(words(5, 'c'), false, 1, 2), more(words(5, 'd'), true, 1), li(words(5, 'e'), true, 2)] });
      expect(shape(card!.html)).toBe('<h2>Steps</h2>\n<ol><li>a…<p>b…</p><ul><li>c…</li></ul><p>d…</p></li><li>e…</li></ol>');
      expect(shape(card!.text)).toBe('Steps\na…\nb…\nc…\nd…\ne…');
      const cards = splitIntoCards({ blocks: [h('Long'), li(words(380, 'x'), true, 1), more(words(80, 'y'), true, 1), li(words(10, 'z'), true, 2)] });
      expect(cards.map((c) => shape(c.html))).toEqual(['<h2>Long</h2>\n<ol><li>x…</li></ol>', '<h2>Long</h2>\n<p>y…</p>\n<ol start="2"><li>z…</li></ol>']);
    });

    it('an item cut into pieces is an item where it starts; its rest starts the next card as a paragraph', () => {
      const cards = splitIntoCards({ blocks: [h('Long'), li(words(150, 'x'), true, 4), li(words(500, 'y'), true, 5), li(words(100, 'z'), true, 6)] });
      const html = cards.map((c) => c.html.replace(/(<li>|<p>)(\w)\d+[^<]*/g, '$1$2…'));
      expect(html).toEqual(['<h2>Long</h2>\n<ol start="4"><li>x…</li></ol>', '<h2>Long</h2>\n<ol start="5"><li>y…</li></ol>', '<h2>Long</h2>\n<p>y…</p>\n<ol start="6"><li>z…</li></ol>']);
      expect(cards.every((c) => c.wordCount >= MIN_CARD_WORDS && c.wordCount <= MAX_CARD_WORDS)).toBe(true);
    });
  });

  it('counts no word for a run of punctuation or symbols, as the cards service does: each card still holds more than 70 words', () => {
    // 66 words and 40 dashes: 106 runs, 66 words; with 10 more words, one card of 76 (with its heading).
    const dashed = Array.from({ length: 66 }, (_, i) => (i < 40 ? `w${i} \u2014` : `w${i}`)).join(' ');
    expect(countWords(dashed)).toBe(66);
    expect(splitIntoCards({ blocks: [h('Dashes'), p(dashed)] })).toEqual([]);
    const cards = splitIntoCards({ blocks: [h('Dashes'), p(dashed), p(words(10, 'x')), p(words(300, 'y')), p(`${'& '.repeat(60)}${words(80, 'z')}`)] });
    expect(cards.length).toBeGreaterThan(1);
    for (const card of cards) {
      expect(card.wordCount).toBe(countWords(card.text));
      expect(card.wordCount).toBeGreaterThanOrEqual(MIN_CARD_WORDS);
      expect(card.wordCount).toBeLessThanOrEqual(MAX_CARD_WORDS);
    }
  });

  it('emits the last block too', () => {
    const cards = splitIntoCards({ blocks: [h('Only'), p(words(75))] });
    expect(cards).toHaveLength(1);
    expect(cards[0]!.wordCount).toBe(76);
  });

  it('the first http(s) link of the block is the link: hyperlink targets, then URLs in the text', () => {
    const cards = splitIntoCards({
      blocks: [
        h('A'),
        p(`${words(40)} see ftp://nope.example and mailto:x`, ['mailto:someone@example.com']),
        p(`${words(40)} at https://text.example/page.`, ['https://first.example/a', 'https://second.example/b']),
        h('B'),
        p(`${words(60)} visit https://plain.example/x?y=1, then more`),
        p(words(20)),
        h('C'),
        p(words(80)),
      ],
    });
    expect(cards.map((c) => c.link)).toEqual(['https://first.example/a', 'https://plain.example/x?y=1', '']);
  });

  it('drops control characters from titles, text and links, and passes over a hyperlink target holding one', () => {
    const cards = splitIntoCards({
      blocks: [h('Coral\u0085 Reef'), p(`${words(80)} see https://text.example/a\u007f then`, ['https://target.example/\u0001x']), h('Kelp\u0000'), p(words(80), ['https://target.example/ok'])],
    });
    expect(cards.map((c) => ({ title: c.title, link: c.link }))).toEqual([
      { title: 'Coral Reef', link: 'https://text.example/a' },
      { title: 'Kelp', link: 'https://target.example/ok' },
    ]);
    expect(cards.map((c) => c.text).join('')).not.toMatch(/\p{Cc}(?<![\n])/u);
  });

  it('passes over a hyperlink target the cards service would refuse as a link, and ends a URL in the text at an invisible character', () => {
    const cards = splitIntoCards({
      blocks: [
        h('Coral'),
        p(words(80), ['https:/one-slash.example', 'https://zero.example/\u200b', 'https://exa mple.com', 'https:\\\\back.example', `https://long.example/${'a'.repeat(2100)}`, 'https://target.example/ok']),
        h('Kelp'),
        p(`${words(80)} see https://text.example/a\u200b\u200bthen`),
      ],
    });
    expect(cards.map((c) => c.link)).toEqual(['https://target.example/ok', 'https://text.example/a']);
  });

  it('replaces an unpaired surrogate a parser left in titles and text with U+FFFD, and passes over a hyperlink target holding one', () => {
    const cards = splitIntoCards({
      blocks: [h('Coral\ud800 Reef'), p(`${words(80)} half\udc00 \u{1F600}`, ['https://target.example/\ud83dx', 'https://target.example/ok'])],
    });
    expect(cards.map((c) => ({ title: c.title, link: c.link }))).toEqual([{ title: 'Coral\ufffd Reef', link: 'https://target.example/ok' }]);
    expect(cards[0]!.text).toContain('half\ufffd \u{1F600}');
  });

  it('a section under 71 words is skipped; short paragraphs are merged into the next block of the same heading', () => {
    const cards = splitIntoCards({ blocks: [h('Short'), p(words(30)), h('Merged'), p(words(30, 'x')), p(words(30, 'y')), p(words(30, 'z'))] });
    expect(cards).toHaveLength(1);
    expect(cards[0]!.title).toBe('Merged');
    expect(cards[0]!.text).toContain('x0');
    expect(cards[0]!.text).toContain('z29');
  });

  it('a document without headings is split at paragraph boundaries into 71-400-word cards', () => {
    const blocks = Array.from({ length: 12 }, (_, i) => p(words(90, `p${i}w`)));
    const cards = splitIntoCards({ blocks });
    expect(cards.length).toBe(3);
    for (const c of cards) {
      expect(c.title).toBeNull();
      expect(c.wordCount).toBeGreaterThanOrEqual(MIN_CARD_WORDS);
      expect(c.wordCount).toBeLessThanOrEqual(MAX_CARD_WORDS);
    }
    // Paragraphs are never cut: each card ends where a paragraph ends.
    expect(cards[0]!.text.endsWith('p3w89')).toBe(true);
  });

  it('a paragraph longer than a card is cut at sentence ends', () => {
    const sentence = (i: number) => `${words(49, `s${i}w`)} end${i}.`;
    const long = Array.from({ length: 20 }, (_, i) => sentence(i)).join(' ');
    const cards = splitIntoCards({ blocks: [p(long, ['https://example.com/long'])] });
    expect(cards.length).toBe(3);
    expect(cards.every((c) => c.wordCount <= MAX_CARD_WORDS)).toBe(true);
    expect(cards.every((c) => /end\d+\.$/.test(c.text))).toBe(true);
    expect(cards[0]!.link).toBe('https://example.com/long');
  });

  describe('a paragraph cut into pieces gives each piece the links anchored in it', () => {
    const late = 'https://late.example.com/ref';
    const sentences = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${words(9, `${word}${i}w`)} end.`).join(' ');
    const body = sentences(56, 's');

    it('with inline HTML: the <a> and the link go with the piece holding the anchor text, not the first piece', () => {
      const block: DocumentBlock = {
        kind: 'paragraph',
        text: `${body} See the late reference for details.`,
        html: `${body} See the <a href="${late}">late reference</a> for details.`,
        links: [late],
      };
      const cards = splitIntoCards({ blocks: [h('Long'), block] });
      expect(cards).toHaveLength(2);
      expect(cards.map((c) => c.link)).toEqual(['', late]);
      expect(cards[0]!.html).not.toContain('<a ');
      expect(cards[1]!.html).toContain(`See the <a href="${late}">late reference</a> for details.`);
    });

    it('with inline HTML: a link and emphasis open across the cut are closed in one piece and opened again in the next', () => {
      const sentence = words(500, 'w').split(' ');
      const html = [...sentence.slice(0, 240), `<strong>${sentence.slice(240, 245).join(' ')}`, `<a href="${late}">${sentence.slice(245, 255).join(' ')}</a>`, `${sentence.slice(255, 260).join(' ')}</strong>`, ...sentence.slice(260)].join(' ');
      const cards = splitIntoCards({ blocks: [{ kind: 'paragraph', text: sentence.join(' '), html, links: [late] }] });
      expect(cards.map((c) => c.wordCount)).toEqual([250, 250]);
      expect(cards.map((c) => c.link)).toEqual([late, late]);
      expect(cards[0]!.html.endsWith(`<strong>w240 w241 w242 w243 w244 <a href="${late}">w245 w246 w247 w248 w249</a></strong></p>`)).toBe(true);
      expect(cards[1]!.html.startsWith(`<p><strong><a href="${late}">w250 w251 w252 w253 w254</a> w255 w256 w257 w258 w259</strong> w260`)).toBe(true);
    });

    it('without inline HTML (.doc, .pdf): by the word the reader anchored each link at', () => {
      const text = `${body} See the late reference for details.`;
      const cards = splitIntoCards({ blocks: [{ kind: 'paragraph', text, links: ['https://early.example.com/', late], linkWords: [3, 562] }] });
      expect(cards.map((c) => c.link)).toEqual(['https://early.example.com/', late]);
    });

    it('also where a card ends at a sentence end inside a paragraph that is not over 400 words', () => {
      const b = `${sentences(38, 'b')} See the late reference now.`;
      const blocks: DocumentBlock[] = [
        p(sentences(39, 'a')),
        p(words(20, 'short')),
        { kind: 'paragraph', text: b, html: b.replace('late reference', `<a href="${late}">late reference</a>`), links: [late] },
      ];
      const cards = splitIntoCards({ blocks });
      expect(cards.length).toBe(3);
      const holding = cards.findIndex((c) => c.text.includes('late reference'));
      expect(cards.map((c) => c.link)).toEqual(cards.map((_, i) => (i === holding ? late : '')));
      expect(cards[holding]!.html).toContain(`<a href="${late}">late reference</a>`);
      expect(cards[1]!.text.includes('b0w0')).toBe(true);
      expect(holding).toBe(2);
    });
  });

  it('escapes markup in the text', () => {
    const cards = splitIntoCards({ blocks: [h('<script>alert(1)</script>'), p(`${words(80)} <b>bold</b> & "quoted"`)] });
    expect(cards[0]!.html).not.toContain('<script>');
    expect(cards[0]!.html).toContain('&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;');
  });

  it('empty and whitespace-only documents make no cards', () => {
    expect(splitIntoCards({ blocks: [] })).toEqual([]);
    expect(splitIntoCards({ blocks: [h('   '), p(' \n ')] })).toEqual([]);
  });

  it('a short tail never pushes a card past 400 words: it takes paragraphs from the card before', () => {
    const blocks = [...Array.from({ length: 8 }, (_, i) => p(words(50, `p${i}w`))), p(words(20, 'tail'))];
    const cards = splitIntoCards({ blocks });
    expect(cards.map((c) => c.wordCount)).toEqual([300, 120]);
    expect(cards[1]!.text.startsWith('p6w0')).toBe(true);
    expect(cards[1]!.text.endsWith('tail19')).toBe(true);
  });

  it('a short paragraph between two long ones is cut off at a sentence end rather than making a card over 400 words', () => {
    const sentences = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${words(9, `${word}${i}w`)} end.`).join(' ');
    const blocks = [p(sentences(39, 'a'), ['https://example.com/a']), p(words(20, 'short')), p(sentences(39, 'b'))];
    const cards = splitIntoCards({ blocks });
    expect(cards.map((c) => c.wordCount).reduce((a, b) => a + b)).toBe(800);
    for (const c of cards) {
      expect(c.wordCount).toBeGreaterThanOrEqual(MIN_CARD_WORDS);
      expect(c.wordCount).toBeLessThanOrEqual(MAX_CARD_WORDS);
      expect(c.text).toMatch(/(end\.|short19)$/);
    }
    expect(cards[0]!.link).toBe('https://example.com/a');
  });

  it('the heading repeated on each card counts toward its 400 words', () => {
    const cards = splitIntoCards({ blocks: [h('Four Words Long Heading'), p(words(399))] });
    expect(cards.length).toBe(2);
    expect(cards.every((c) => c.wordCount <= MAX_CARD_WORDS && c.wordCount >= MIN_CARD_WORDS)).toBe(true);
  });

  it('keeps decimal numbers whole when it cuts a long paragraph at sentence ends', () => {
    const text = Array.from({ length: 60 }, (_, i) => `The value ${i}.5 rose by 3.25 percent today.`).join(' ');
    const cards = splitIntoCards({ blocks: [p(text)] });
    expect(cards.length).toBeGreaterThan(1);
    expect(cards.map((c) => c.text).join(' ')).toBe(text);
  });

  describe('text of a script written without spaces (Chinese, Japanese) counts the words its readers see', () => {
    const zh = ['我们今天去图书馆看书。', '然后在公园里散步，天气非常好。', '老师说学习语言需要每天练习。', '这个城市的历史很长，有很多古老的建筑。', '他喜欢喝茶，也喜欢和朋友聊天。'];
    const chinese = (sentences: number) => Array.from({ length: sentences }, (_, i) => zh[i % zh.length]!).join('');
    const segmenter = new Intl.Segmenter('zh', { granularity: 'word' });
    const boundaries = (text: string) => new Set([...segmenter.segment(text)].map((s) => s.index).concat(text.length));

    it('a Chinese section of about 270 characters makes a card, as an English one of as many words does', () => {
      const text = chinese(18);
      expect(countWords(text)).toBeGreaterThan(MIN_CARD_WORDS);
      const cards = splitIntoCards({ blocks: [h('English'), p(words(80)), h('中文部分'), p(text)] });
      expect(cards.map((c) => c.title)).toEqual(['English', '中文部分']);
      expect(cards[1]!.text).toBe(`中文部分\n${text}`);
    });

    it('an all-Chinese document is cut into 71-400-word cards at sentence ends, with nothing lost or added', () => {
      const text = chinese(120);
      const cards = splitIntoCards({ blocks: [p(text)] });
      expect(cards.length).toBeGreaterThan(1);
      for (const c of cards) {
        expect(c.wordCount).toBeGreaterThanOrEqual(MIN_CARD_WORDS);
        expect(c.wordCount).toBeLessThanOrEqual(MAX_CARD_WORDS);
        expect(c.text.endsWith('。')).toBe(true);
      }
      expect(cards.map((c) => c.text).join('')).toBe(text);
      expect(cards.reduce((n, c) => n + c.wordCount, 0)).toBe(countWords(text));
    });

    it('a Chinese "sentence" longer than a card is cut between words, never inside one, in its text and its HTML', () => {
      const text = chinese(60).replace(/[。，]/g, '');
      const html = `<strong>${text.slice(0, 30)}</strong>${text.slice(30)}`;
      const cards = splitIntoCards({ blocks: [{ kind: 'paragraph', text, html, links: [] }] });
      expect(cards.length).toBeGreaterThan(1);
      const at = boundaries(text);
      let offset = 0;
      for (const c of cards) {
        expect(c.wordCount).toBeLessThanOrEqual(MAX_CARD_WORDS);
        expect(at.has(offset)).toBe(true);
        expect(c.html.replace(/<[^>]+>/g, '').replace(/\n/g, '')).toBe(c.text);
        offset += c.text.length;
      }
      expect(cards.map((c) => c.text).join('')).toBe(text);
      expect(cards[0]!.html.startsWith(`<p><strong>${text.slice(0, 30)}</strong>`)).toBe(true);
    });

    it('without inline HTML: a link anchored at a word after a Chinese run goes with the piece holding it', () => {
      const late = 'https://late.example.com/zh';
      const text = `${chinese(60)} see the reference`;
      const runs = text.split(' ');
      const cards = splitIntoCards({ blocks: [{ kind: 'paragraph', text, links: ['https://early.example.com/', late], linkWords: [0, runs.length - 1] }] });
      expect(cards.length).toBeGreaterThan(1);
      expect(cards.map((c) => c.link)).toEqual(['https://early.example.com/', ...cards.slice(2).map(() => ''), late]);
    });
  });

  it('drops soft hyphens (U+00AD) from titles, text and HTML, so the word is the one shown', () => {
    const text = `A soft\u00adhyphen\u00adated word and \u00ad alone ${words(75)}`;
    const cards = splitIntoCards({ blocks: [h('Hyphen\u00adation'), { kind: 'paragraph', text, html: text.replace('word', '<em>word</em>'), links: [] }] });
    expect(cards).toHaveLength(1);
    expect(cards[0]!.title).toBe('Hyphenation');
    expect(cards[0]!.text).toBe(`Hyphenation\nA softhyphenated word and alone ${words(75)}`);
    expect(cards[0]!.html).not.toContain('\u00ad');
    expect(cards[0]!.html).toContain('<p>A softhyphenated <em>word</em> and');
  });

  it('property: every card holds 71-400 words, and no text is invented or lost from sections long enough for a card', () => {
    const paragraph = fc.integer({ min: 1, max: 500 }).map((n) => p(words(n)));
    const heading = fc.string({ minLength: 1, maxLength: 30 }).filter((s) => s.trim().length > 0).map((s) => h(s));
    fc.assert(
      fc.property(fc.array(fc.oneof({ weight: 1, arbitrary: heading }, { weight: 4, arbitrary: paragraph }), { maxLength: 40 }), (blocks) => {
        const cards = splitIntoCards({ blocks });
        const sections: { title: number; body: number }[] = [{ title: 0, body: 0 }];
        for (const b of blocks) {
          if (b.kind === 'heading') sections.push({ title: countWords(b.text), body: 0 });
          else sections[sections.length - 1]!.body += countWords(b.text);
        }
        const keptWords = sections.filter((s) => s.title + s.body >= MIN_CARD_WORDS && s.body > 0).reduce((n, s) => n + s.body, 0);
        const outputBodyWords = cards.reduce((n, c) => n + c.wordCount - (c.title ? countWords(c.title) : 0), 0);
        expect(outputBodyWords).toBe(keptWords);
        for (const c of cards) {
          expect(c.wordCount).toBeGreaterThanOrEqual(MIN_CARD_WORDS);
          expect(c.wordCount).toBeLessThanOrEqual(MAX_CARD_WORDS);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("a PDF's heading-like paragraphs (keepWithNext)", () => {
  const hd = (text: string): DocumentBlock => ({ ...p(text), keepWithNext: true });
  const sentences = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${words(9, `${word}${i}w`)} end.`).join(' ');

  it('no card ends with one while its text starts the next card', () => {
    // Both groupings fit 71-400 words; each card taking as much as it can ended the first card with the heading.
    const cards = splitIntoCards({ blocks: [p(words(300, 'a')), hd('Field measurements'), p(words(300, 'b'))] });
    expect(cards.map((c) => c.html.split('\n')[0]!.slice(0, 26))).toEqual(['<p>a0 a1 a2 a3 a4 a5 a6 a7', '<p>Field measurements</p>']);
  });

  it('a card is cut inside a paragraph rather than after one, where cuts at paragraph ends alone cannot avoid it', () => {
    // The heading and the 399 words under it are more than a card; at paragraph ends only the first card can end with it.
    const cards = splitIntoCards({ blocks: [p(words(100, 'a')), hd('Field measurements'), p(sentences(40, 'b'))] });
    expect(cards.some((c) => c.html.endsWith('<p>Field measurements</p>'))).toBe(false);
    expect(cards[0]!.html).toContain('<p>Field measurements</p>\n<p>b0w0 ');
    expect(cards.every((c) => c.wordCount > MIN_CARD_WORDS - 1 && c.wordCount <= MAX_CARD_WORDS)).toBe(true);
  });
});
