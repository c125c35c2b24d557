import { isDuplicateKeyError } from '@cards/platform';
import type { ClientSession } from 'mongodb';
import type { AuthorScore, ReceivedVotes, Vote } from '../../domain/model';
import type { VoteRepository } from '../../domain/ports';
import { adjustVoteCounters, type MongoCardsDatabase, type VoteDocument } from './mongo-cards-database';

const fromVoteDocument = (d: VoteDocument): Vote => ({ id: d._id, userId: d.userId, cardId: d.cardId, value: d.value, createdAt: d.createdAt, updatedAt: d.updatedAt });

/** The vote changed between reading and writing it (concurrent flip or removal): the step is run again. */
class VoteRaced extends Error {}

/** A vote on a card that is public only, whose $inc found the card private: the transaction is aborted. */
class CardMadePrivate extends Error {}

const MAX_ATTEMPTS = 20;

/**
 * Votes in the cards service's MongoDB database (collection `votes`, unique on (userId, cardId)) and the received
 * counters of authors (`author_scores`). Every change to a vote document is conditional and atomic (insert, flip only
 * from the value read, findOneAndDelete), and the party that made it applies its delta with `$inc` to the card and the
 * author, so totals stay exact under concurrency with or without transactions. On a replica set the vote and the
 * counters also commit together.
 */
export class MongoVoteRepository implements VoteRepository {
  constructor(private readonly store: MongoCardsDatabase) {}

  async upsert(userId: string, cardId: string, value: boolean, at: Date, newId: string, options: { publicOnly?: boolean } = {}): Promise<Vote | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.change((session) => this.upsertOnce(userId, cardId, value, at, newId, options.publicOnly === true, session));
      } catch (err) {
        // The card's $inc found it private (made private after the vote's first read): the transaction is taken back.
        if (err instanceof CardMadePrivate) return null;
        // Two first votes of the same user on the same card at once, or a vote that changed under us: read again.
        const raced = err instanceof VoteRaced || isDuplicateKeyError(err);
        if (!raced || attempt >= MAX_ATTEMPTS) throw err;
      }
    }
  }

  private async upsertOnce(userId: string, cardId: string, value: boolean, at: Date, newId: string, publicOnly: boolean, session: ClientSession | undefined): Promise<Vote | null> {
    const card = await this.store.cards.findOne({ _id: cardId }, { session, projection: { authorId: 1, private: 1 } });
    if (!card || (publicOnly && card.private)) return null;
    const existing = await this.store.votes.findOne({ userId, cardId }, { session });
    let up = 0;
    let down = 0;
    let stored: VoteDocument;
    if (!existing) {
      stored = { _id: newId, userId, cardId, cardAuthorId: card.authorId, value, createdAt: at, updatedAt: at };
      await this.store.votes.insertOne(stored, { session });
      if (value) up = 1;
      else down = 1;
    } else if (existing.value === value) {
      // A repeat changes nothing, its date included: the vote as read is the answer.
      stored = existing;
    } else {
      const changed = await this.store.votes.findOneAndUpdate(
        { _id: existing._id, value: existing.value },
        { $set: { value, updatedAt: at } },
        { session, returnDocument: 'after' },
      );
      if (!changed) throw new VoteRaced();
      stored = changed;
      up = value ? 1 : -1;
      down = -up;
    }
    const counted = await adjustVoteCounters(this.store, cardId, card.authorId, up, down, session);
    if (publicOnly && counted?.private) {
      // The card was made private between the read above and its $inc, which is where a privacy change and a vote meet
      // (the change moves the totals the card holds when it is written). In a transaction, that change's write conflicts
      // with ours or comes first, and the whole step is taken back; without one, the vote is taken back here, its
      // counters with it, as if it came after the change (the answer: the card is not there to vote on).
      if (session) throw new CardMadePrivate();
      await this.undo(stored, existing, up, down);
      return null;
    }
    if (!session && (up !== 0 || down !== 0) && !(await this.store.cards.findOne({ _id: cardId }, { projection: { _id: 1 } }))) {
      // The card was removed meanwhile and its removal may have missed this vote: take it out ourselves.
      await this.takeOut(stored._id, undefined);
      return null;
    }
    return fromVoteDocument(stored);
  }

  /**
   * Takes back a vote change whose card turned out private (no transaction): a new vote is taken out as its voter's
   * removal would (takeOut), a flip is flipped back if it is still as written, with its delta reversed.
   */
  private async undo(stored: VoteDocument, existing: VoteDocument | null, up: number, down: number): Promise<void> {
    if (!existing) {
      await this.takeOut(stored._id, undefined);
      return;
    }
    const back = await this.store.votes.findOneAndUpdate({ _id: stored._id, value: stored.value }, { $set: { value: existing.value, updatedAt: existing.updatedAt } });
    if (back) await adjustVoteCounters(this.store, stored.cardId, stored.cardAuthorId, -up, -down, undefined);
  }

  async remove(userId: string, cardId: string): Promise<boolean> {
    return this.store.change(async (session) => {
      const existing = await this.store.votes.findOne({ userId, cardId }, { session, projection: { _id: 1 } });
      if (!existing) return false;
      return this.takeOut(existing._id, session);
    });
  }

  /** Deletes the vote if it is still there and takes its value off the card and the author; false when someone else did. */
  private async takeOut(voteId: string, session: ClientSession | undefined): Promise<boolean> {
    const removed = await this.store.votes.findOneAndDelete({ _id: voteId }, { session });
    if (!removed) return false;
    await adjustVoteCounters(this.store, removed.cardId, removed.cardAuthorId, removed.value ? -1 : 0, removed.value ? 0 : -1, session);
    return true;
  }

  async votesOf(userId: string, cardIds: readonly string[]): Promise<Map<string, boolean>> {
    const unique = [...new Set(cardIds)];
    const out = new Map<string, boolean>();
    if (unique.length === 0) return out;
    const docs = await this.store.votes.find({ userId, cardId: { $in: unique } }, { projection: { cardId: 1, value: 1 } }).toArray();
    for (const d of docs) out.set(d.cardId, d.value);
    return out;
  }

  async received(authorId: string, includePrivate = false): Promise<ReceivedVotes> {
    const doc = await this.store.authorScores.findOne({ _id: authorId });
    if (includePrivate) return { upvotes: doc?.upvotes ?? 0, downvotes: doc?.downvotes ?? 0 };
    return { upvotes: doc?.publicUpvotes ?? 0, downvotes: doc?.publicDownvotes ?? 0 };
  }

  async countCastBy(userId: string): Promise<number> {
    return this.store.votes.countDocuments({ userId });
  }

  async countCastOnVisible(userId: string, viewerId: string | null): Promise<number> {
    const cardIds = (await this.store.votes.find({ userId }, { projection: { cardId: 1 } }).toArray()).map((v) => v.cardId);
    let n = 0;
    for (let i = 0; i < cardIds.length; i += 1000) {
      // Fetched by _id and filtered here: an _id lookup uses the primary index on every server.
      const cards = await this.store.cards.find({ _id: { $in: cardIds.slice(i, i + 1000) } }, { projection: { _id: 0, private: 1, authorId: 1 } }).toArray();
      n += cards.filter((c) => !c.private || c.authorId === viewerId).length;
    }
    return n;
  }

  async topAuthors(offset: number, limit: number): Promise<AuthorScore[]> {
    const docs = await this.store.authorScores
      .find({ publicVotes: { $gt: 0 } }, { projection: { publicScore: 1 } })
      .sort({ publicScore: -1, joinUnknown: 1, joinedAt: 1, _id: 1 })
      .skip(offset)
      .limit(limit)
      .toArray();
    return docs.map((d) => ({ userId: d._id, score: d.publicScore }));
  }

  async countRankedAuthors(): Promise<number> {
    return this.store.authorScores.countDocuments({ publicVotes: { $gt: 0 } });
  }

  async authorsWithoutJoinDate(limit: number): Promise<string[]> {
    const docs = await this.store.authorScores.find({ joinUnknown: true, publicVotes: { $gt: 0 } }, { projection: { _id: 1 } }).limit(limit).toArray();
    return docs.map((d) => d._id);
  }

  async recordJoinDates(dates: ReadonlyMap<string, Date>): Promise<void> {
    if (dates.size === 0) return;
    await this.store.authorScores.bulkWrite(
      [...dates].map(([userId, at]) => ({ updateOne: { filter: { _id: userId }, update: { $set: { joinedAt: at, joinUnknown: false } } } })),
      { ordered: false },
    );
  }
}
