import { cutHtmlAtWords } from '../src/domain/html-words';

describe('cutHtmlAtWords', () => {
  it('cuts inline HTML at the words of each range, closing what is open at a cut and opening it again after', () => {
    const html = 'one <strong>two <em>three <a href="https://e.com/?a=1&amp;b=2">four five</a></em> six</strong> seven';
    const cut = cutHtmlAtWords(html, [
      [0, 4],
      [4, 7],
    ]);
    expect(cut).toEqual({
      words: 7,
      anchors: 1,
      parts: [
        { html: 'one <strong>two <em>three <a href="https://e.com/?a=1&amp;b=2">four</a></em></strong>', anchors: [0] },
        { html: '<strong><em><a href="https://e.com/?a=1&amp;b=2">five</a></em> six</strong> seven', anchors: [0] },
      ],
    });
  });

  it('names the links with text in each part; an element with no text in a part is left out of it', () => {
    const html = '<a href="https://a.example/">a</a> b <strong>c</strong> <a href="https://d.example/">d e</a> f';
    const cut = cutHtmlAtWords(html, [
      [0, 2],
      [2, 3],
      [3, 6],
    ])!;
    expect(cut.parts).toEqual([
      { html: '<a href="https://a.example/">a</a> b', anchors: [0] },
      { html: '<strong>c</strong>', anchors: [] },
      { html: '<a href="https://d.example/">d e</a> f', anchors: [1] },
    ]);
  });

  it('a tag inside a word does not split it; control characters are no word; entities are one character', () => {
    const html = 'ab<em>cd</em> \u0085 x&lt;y z';
    expect(cutHtmlAtWords(html, [[0, 3]])).toEqual({ words: 3, anchors: 0, parts: [{ html: 'ab<em>cd</em>  x&lt;y z', anchors: [] }] });
    expect(cutHtmlAtWords(html, [[1, 3]])!.parts[0]!.html).toBe('x&lt;y z');
  });

  it("a table cell's line break (<br>) parts two words as a space does, and is left out where the cut falls on it", () => {
    const html = 'one<br>two <strong>three<br>four</strong>';
    expect(cutHtmlAtWords(html, [[0, 4]])).toEqual({ words: 4, anchors: 0, parts: [{ html, anchors: [] }] });
    expect(cutHtmlAtWords(html, [
      [0, 3],
      [3, 4],
    ])!.parts.map((p) => p.html)).toEqual(['one<br>two <strong>three</strong>', '<strong>four</strong>']);
  });

  it('refuses markup the document readers never build', () => {
    expect(cutHtmlAtWords('a <span>b</span>', [[0, 2]])).toBeNull();
    expect(cutHtmlAtWords('a & b', [[0, 3]])).toBeNull();
  });
});
