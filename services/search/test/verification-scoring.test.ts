import { MAX_PARSER_DEPTH, visibleText } from '@cards/html-parsing';
import { InlineFuzzballScorer, ScoringTimeoutError, WorkerFuzzballScorer, tokenSetRatio } from '../src/verification/adapters/fuzzball/fuzzball-scorer';
import { deepestParserStack } from '../../../packages/html-parsing/test/parser-depth';

describe('visible text of a page (visibleText)', () => {
  it('keeps visible text, drops scripts, styles and markup, decodes entities and separates words at tags', () => {
    const html = `<!doctype html><html><head><title>Tides</title><style>p { color: red }</style>
      <script>var secret = "do not count me";</script></head>
      <body><h1>Ocean&nbsp;tides</h1><p>The moon<br>pulls&amp;pushes</p><noscript>enable js</noscript>
      <template><p>hidden template</p></template><div>water</div><svg><text>vector</text></svg></body></html>`;
    const visible = visibleText(html);
    expect(visible).toBe('Tides Ocean tides The moon pulls&pushes water');
    expect(visible).not.toMatch(/secret|color|enable js|template|vector/);
  });

  it('reads words split by inline tags, soft hyphens, <wbr> and zero-width spaces as one word, as a browser shows them', () => {
    const html = `<p><span class="dropcap">T</span>he coun&shy;cil voted on Tues<span class="hl">day</span> to ex<em>pand</em> the finan<wbr>cial dis\u200btrict&#8217;s <a href="/x">bike</a> lanes.</p>`;
    expect(visibleText(html)).toBe('The council voted on Tuesday to expand the financial district\u2019s bike lanes.');
  });

  it('still separates words at blocks, line breaks, images and form controls', () => {
    expect(visibleText('<ul><li>one</li><li>two</li></ul><p>three<br>four<img src="x">five</p><div>six</div><td>seven</td><button>eight</button>')).toBe('one two three four five six seven eight');
  });

  it('copes with broken markup', () => {
    expect(visibleText('<p>unclosed <b>bold <i>text')).toBe('unclosed bold text');
    expect(visibleText('')).toBe('');
  });

  it('a page nested 100,000 deep: every visible word kept, scripts inside still dropped, the parser stack bounded', () => {
    const depth = 100_000;
    const html = `<body>${'<div><span>'.repeat(depth / 2)}deep <b>words</b><script>var hidden = 1;</script><svg><text>vector</text></svg>${'</span></div>'.repeat(depth / 2)}after</body>`;
    let visible = '';
    expect(deepestParserStack(() => (visible = visibleText(html)))).toBeLessThanOrEqual(MAX_PARSER_DEPTH);
    expect(visible).toBe('deep words after');
  });
});

describe('token_set_ratio scoring (fuzzball)', () => {
  it('matches thefuzz reference values', () => {
    // Values from thefuzz's documentation and test suite.
    expect(tokenSetRatio('fuzzy was a bear', 'fuzzy fuzzy was a bear')).toBe(100);
    expect(tokenSetRatio('new york mets vs atlanta braves', 'atlanta braves vs new york mets')).toBe(100);
    expect(tokenSetRatio('', 'anything')).toBe(0);
  });

  it('scores a quoted excerpt high and unrelated text low', () => {
    const page = 'Tides are caused by the gravitational pull of the moon and the sun on the oceans of the earth. ' + 'Many other unrelated words about harbours, ships and sailors appear on the same page. '.repeat(3);
    expect(tokenSetRatio('Tides are caused by the gravitational pull of the moon and the sun.', page)).toBeGreaterThanOrEqual(90);
    expect(tokenSetRatio('Quarterly revenue of the software company rose with cloud subscriptions.', page)).toBeLessThan(50);
  });

  describe('an author quoting a news article word for word', () => {
    const quote =
      'The city council voted on Tuesday to expand the financial district\u2019s bike lanes \u2014 a decision that critics say \u201cignores the shops\u201d on Main Street. ' +
      'Supporters argued that the new lanes would cut traffic, reduce pollution and make the streets safer for children walking to school, while opponents warned ' +
      'that deliveries would become slower and that the loss of parking spaces would drive customers to the out-of-town shopping centres.';
    const article = (body: string) =>
      `<html><head><title>City News</title></head><body><nav><a href="/">Home</a> <a href="/p">Politics</a></nav><div class="cookies">We use cookies. Accept all</div>` +
      `<article><h1>Council backs bike lanes</h1><p>${body}</p><p>The vote was seven to two.</p></article><section><p>Great news for cyclists!</p></section><footer>&copy; 2026 City News</footer></body></html>`;
    // Typesetting the page may add: hyphenation points on every long word, a drop cap, a highlighted word, a ligature.
    const hyphenated = quote.replace(/\b(coun|Tues|fi|dis|sup|traf|re|pol|chil|op|de|park|cus)(?=[a-z]{3})/g, '$1&shy;');
    const typeset = quote.replace(/^The/, '<span class="dropcap">T</span>he').replace('pollution', 'pol<span class="hl">lu</span>tion').replace('traffic', 'tra\ufb03c');
    const pool = new WorkerFuzzballScorer(1, 10_000);
    const inline = new InlineFuzzballScorer();
    afterAll(() => pool.close());

    it.each([
      ['hyphenated with soft hyphens', hyphenated],
      ['with a drop cap, a highlighted part of a word and a ligature', typeset],
    ])('the page %s scores as high as the plain page (100)', async (_, body) => {
      expect(await inline.score(quote, article(quote))).toBe(100);
      expect(await inline.score(quote, article(body))).toBe(100);
      expect(await pool.score(quote, article(body))).toBe(100);
    });

    it('a card pasted from the PDF version, with ligatures, scores 100 against the web page', async () => {
      const fromPdf = quote.replace('financial', '\ufb01nancial').replace('traffic', 'tra\ufb03c');
      expect(await inline.score(fromPdf, article(quote))).toBe(100);
      expect(await pool.score(fromPdf, article(quote))).toBe(100);
    });
  });

  it('the worker-thread scorer gives the same integers as the inline one', async () => {
    const pool = new WorkerFuzzballScorer(2, 10_000);
    const inline = new InlineFuzzballScorer();
    const pairs: [string, string][] = [
      ['fuzzy was a bear', 'fuzzy fuzzy was a bear'],
      ['the quick brown fox', '<p>a slow green turtle</p>'],
      ['card about tides and the moon', '<h1>page</h1><p>about the moon, <b>tides</b> &amp; oceans</p><script>card card card</script>'],
    ];
    const pooled = await Promise.all(pairs.map(([a, b]) => pool.score(a, b)));
    expect(pooled).toEqual(await Promise.all(pairs.map(([a, b]) => inline.score(a, b))));
    await pool.close();
  });

  it("scores a page's visible text, which the worker thread reads out of the HTML (not the service's event loop)", async () => {
    const pool = new WorkerFuzzballScorer(1, 10_000);
    const card = 'Tides are caused by the gravitational pull of the moon and the sun.';
    const page = `<html><head><style>p { color: red }</style></head><body><div>${'<span>'.repeat(2_000)}<p>Tides are caused by the <b>gravitational</b> pull of the moon &amp; the sun.</p><script>var unrelated = "quarterly revenue";</script></body></html>`;
    const readHere = jest.spyOn(require('@cards/html-parsing') as { visibleText: typeof visibleText }, 'visibleText');
    try {
      expect(await pool.score(card, page)).toBe(tokenSetRatio(card, 'Tides are caused by the gravitational pull of the moon & the sun.'));
      expect(readHere).not.toHaveBeenCalled();
    } finally {
      readHere.mockRestore();
      await pool.close();
    }
  });

  it('counts a task\'s time from when its worker is ready, and takes an answer sent in time while this thread was busy', async () => {
    // This thread busy past the limit (as a loaded machine is): the fresh worker loads its modules and answers meanwhile,
    // and the limit's timer would run first once this thread is free. Before, that failed ScoringTimeoutError.
    const pool = new WorkerFuzzballScorer(1, 300);
    try {
      const fresh = pool.score('fuzzy was a bear', 'fuzzy fuzzy was a bear');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3_000);
      await expect(fresh).resolves.toBe(100);
      const ready = pool.score('tides of the sea', 'the tides of the sea');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_500);
      await expect(ready).resolves.toBe(100);
    } finally {
      await pool.close();
    }
  });

  it('stops a scoring task that runs past its time limit and keeps working afterwards', async () => {
    const pool = new WorkerFuzzballScorer(1, 1000);
    const words = Array.from({ length: 20_000 }, (_, i) => `w${i.toString(36)}x${(i * 7919).toString(36)}`);
    await expect(pool.score(words.slice(0, 3000).join(' '), words.join(' '))).rejects.toBeInstanceOf(ScoringTimeoutError);
    await expect(pool.score('fuzzy was a bear', 'fuzzy fuzzy was a bear')).resolves.toBe(100);
    await pool.close();
  });
});
