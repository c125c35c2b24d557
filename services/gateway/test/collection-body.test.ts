import type { Request } from 'express';
import { parseBody } from '../src/http/validation';
import { findBookmarksBody } from '../src/routes/collection-routes';

/** The 400 message a bookmark lookup body gets. */
function answer(collectionIds: unknown): string {
  try {
    parseBody(findBookmarksBody, { body: { collection_ids: collectionIds } } as Request);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  }
}

describe('the card ids of a bookmark lookup', () => {
  it('quote a bad id cut to 64 characters counted as code points, never inside an emoji', () => {
    const emoji = '\u{1F600}';
    expect(answer(emoji.repeat(70))).toBe(`collection_ids: "${emoji.repeat(64)}" is not a UUID`);
    expect(answer(`${'x'.repeat(63)}${emoji}${emoji}`)).toBe(`collection_ids: "${'x'.repeat(63)}${emoji}" is not a UUID`);
  });
});
