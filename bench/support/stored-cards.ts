import { join } from 'node:path';
import { cardTextFromHtml, fingerprintOf, openCardsDatabase, SqliteCardRepository, type Card } from '@cards/cards';

/**
 * The search benchmark's cards written straight into the cards service's store of a data directory, so the gateway
 * presents every hit it gets (getCardGroups drops ids the cards service does not know): responses carry 25 full cards
 * like real ones. Each is stored as a finished create leaves it: the insert marks a card as owing its look-again and a
 * real create clears the mark at its end, so cards left marked would all be resumed as cut-off creates when the system
 * next starts, and every search would wait behind them (~100,000 look-agains after a build).
 */
export async function storeFinishedCards(dataDir: string, cards: readonly { id: string; text: string }[], authorId: string): Promise<void> {
  const db = openCardsDatabase(join(dataDir, 'cards', 'cards.db'));
  const repository = new SqliteCardRepository(db);
  try {
    for (const { id, text } of cards) {
      const { cardHtml, content } = cardTextFromHtml(`<p>${text}</p>`);
      const at = new Date();
      const card: Card = {
        id, authorId, content, cardHtml, link: '', private: false, tags: [], fileId: null, fileName: null, ocFilePath: null,
        vectorPointId: null, verificationScore: null, verifiedAt: null, collisionOf: null, totalUpvotes: 0, totalDownvotes: 0, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at,
      };
      await repository.insert(card, fingerprintOf(content), []);
      await repository.clearLookAgainOwed(id);
    }
  } finally {
    db.close();
  }
}
