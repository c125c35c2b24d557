import type { Request } from 'express';
import { parseBody } from '../src/http/validation';
import { cardSearchBody } from '../src/routes/search-routes';

/** The 400 message a search body gets, or 'ok'. */
function answer(link: unknown, tags?: unknown): string {
  try {
    parseBody(cardSearchBody, { body: { content: 'bread', link, tag_set: tags } } as Request);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  }
}

describe('the link filter of a card search', () => {
  it('says a link is too long however long it is and in whichever form it comes; a wrong type is named as such', () => {
    const tooLong = 'link: each link at most 2048 characters';
    for (const length of [2_049, 20_001]) {
      const link = `https://example.org/${'a'.repeat(length - 20)}`;
      expect([length, answer(link)]).toEqual([length, tooLong]);
      expect([length, answer([link])]).toEqual([length, length > 20_000 ? 'link.0: each link at most 2048 characters' : tooLong]);
    }
    expect(answer(Array.from({ length: 101 }, (_, i) => `https://example.org/${i}`))).toBe('link: at most 100 links');
    for (const wrong of [5, [5], { a: 1 }, ['https://example.org/', null]]) expect([wrong, answer(wrong)]).toEqual([wrong, 'link: must be an array of strings']);
    expect(answer([` https://example.org/${'a'.repeat(2_028)} `])).toBe('ok');
  });
});

describe('the link filter of a card search (a part of a link, matched as a substring of stored links)', () => {
  it('is not held to the card link rule: a host, a path part or a link stored before that rule are all looked for as sent', () => {
    for (const part of ['example.com', 'https:/', '/docs/', ['https://example.com/\u200b', 'EXAMPLE.org']]) expect([part, answer(part)]).toEqual([part, 'ok']);
  });
});

describe('the tag filter of a card search', () => {
  /** 100 distinct tags of exactly 200 code points, `unit` repeated. */
  const longestTags = (unit: string) => Array.from({ length: 100 }, (_, i) => `${String(i).padStart(3, '0')}${unit.repeat(197)}`);

  it('takes the longest valid list in one comma-separated string or item, emoji included', () => {
    for (const unit of ['a', '\u{1F600}']) {
      const joined = longestTags(unit).join(', ');
      expect(answer(undefined, joined)).toBe('ok');
      expect(answer(undefined, [joined])).toBe('ok');
    }
  });

  it('names the tag limits, not an internal bound, for a string too long to hold valid tags', () => {
    const huge = 'a,'.repeat(50_000);
    expect(answer(undefined, huge)).toBe('tag_set: at most 100 tags of at most 200 characters');
    expect(answer(undefined, [huge])).toBe('tag_set.0: at most 100 tags of at most 200 characters');
    expect(answer(undefined, ['a'.repeat(201)])).toBe('tag_set: each tag at most 200 characters');
    expect(answer(undefined, [5])).toBe('tag_set: must be an array of strings or a comma-separated string');
  });
});
