import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '@cards/platform';
import { storeFinishedCards } from '../../bench/support/stored-cards';
import { testTempDir } from '../support/cleanup';

// The search benchmark writes its injected cards straight into the cards store. Left owing their look-again (the mark
// an insert sets and a finished create clears), all of them were resumed as cut-off creates on the system's next start,
// ~100,000 look-agains that every search waited behind.
describe('the search benchmark stores its injected cards', () => {
  it('as finished creates: readable, none owing its look-again', async () => {
    const dataDir = testTempDir('bench-stored-cards-');
    try {
      const authorId = randomUUID();
      const cards = Array.from({ length: 5 }, (_, i) => ({ id: randomUUID(), text: `benchmark card ${i} ${'about rivers and mountains '.repeat(20)}` }));
      await storeFinishedCards(dataDir, cards, authorId);
      const db = openSqlite(join(dataDir, 'cards', 'cards.db'));
      const rows = db.prepare('SELECT id, author_id, collision_of, look_again_owed FROM cards ORDER BY id').all();
      db.close();
      expect(rows).toEqual(cards.map((c) => ({ id: c.id, author_id: authorId, collision_of: null, look_again_owed: 0 })).sort((a, b) => (a.id < b.id ? -1 : 1)));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
