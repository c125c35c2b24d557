import { newId, Topics, type EventBus, type DeliveredEvent, type Logger } from '@cards/platform';
import { events } from '@cards/proto';
import type { CardIndex, Embedder } from '../domain/ports';

/** Cards of one batch applied at the same time (each card's events stay in order). */
const CONCURRENT_CARDS = 16;

type IncomingEvent = Pick<DeliveredEvent, 'topic' | 'payload'>;

/** One decoded event: the cards it touches (its events must stay in order with theirs) and how to apply it. */
interface Change {
  cards: string[];
  apply(): Promise<void>;
}

/**
 * Keeps the index in step with the cards service: consumes card and bookmark events (at-least-once, so every
 * change is idempotent) and announces each indexed root card on search.index.v1 with its vector point id. A card's
 * collections come from bookmark events alone; the list a card event may still carry (deprecated) is not read.
 * Events come one at a time (handle) or in runs (handleBatch): a run is applied inside one CardIndex.batch, the
 * events of different cards concurrently, one card's events in order, its snapshots embedded in one call, and its
 * cards announced once the whole run is searchable; the bus commits the run only after that.
 */
export class IndexProjector {
  constructor(
    private readonly index: CardIndex,
    private readonly embedder: Embedder,
    private readonly bus: Pick<EventBus, 'publish'>,
    private readonly logger: Logger,
  ) {}

  async handle(event: IncomingEvent): Promise<void> {
    await this.handleBatch([event]);
  }

  async handleBatch(incoming: readonly IncomingEvent[]): Promise<void> {
    const decoded = incoming.map((event) =>
      event.topic === Topics.card
        ? { card: events.CardEvent.decode(event.payload) }
        : event.topic === Topics.bookmark
          ? { bookmark: events.BookmarkEvent.decode(event.payload) }
          : {},
    );
    // Every snapshot of the run embedded in one call.
    const snapshots = decoded.flatMap(({ card }) => {
      const kind = card?.kind;
      return (kind?.$case === 'created' || kind?.$case === 'updated') && kind.value.card?.id ? [kind.value.card] : [];
    });
    const vectors = new Map<events.CardSnapshot, Float32Array>();
    if (snapshots.length > 0) {
      const embedded = await this.embedder.embed(snapshots.map((s) => s.content));
      snapshots.forEach((s, i) => vectors.set(s, embedded[i]!));
    }
    /** Cards to announce once the run is searchable, with the vector point id written (undefined: read it back). */
    const announce = new Map<string, string | undefined>();
    const changes: Change[] = [];
    for (const { card, bookmark } of decoded) {
      const change = card ? this.cardChange(card, vectors, announce) : bookmark ? this.bookmarkChange(bookmark) : undefined;
      if (change) changes.push(change);
    }
    await this.index.batch(() => applyInCardOrder(changes, CONCURRENT_CARDS));
    await this.announce(announce);
  }

  private cardChange(event: events.CardEvent, vectors: Map<events.CardSnapshot, Float32Array>, announce: Map<string, string | undefined>): Change | undefined {
    const occurredAt = event.occurredAt ?? new Date();
    const kind = event.kind;
    if (!kind) return undefined;
    if (kind.$case === 'created' || kind.$case === 'updated') {
      const card = kind.value.card;
      if (!card) return undefined;
      if (!card.id) {
        this.logger.warn('card event without a card id; skipped');
        return undefined;
      }
      return { cards: [card.id], apply: () => this.indexSnapshot(card, vectors.get(card)!, occurredAt, announce) };
    }
    const { cardId, promotedCardId } = kind.value;
    return {
      cards: promotedCardId ? [cardId, promotedCardId] : [cardId],
      apply: async () => {
        await this.index.remove(cardId, occurredAt);
        announce.delete(cardId);
        if (promotedCardId && (await this.index.promote(promotedCardId))) announce.set(promotedCardId, undefined);
      },
    };
  }

  private bookmarkChange(event: events.BookmarkEvent): Change | undefined {
    if (!event.collectionId || !event.cardId) return undefined;
    return { cards: [event.cardId], apply: () => this.index.setBookmark(event.collectionId, event.cardId, event.added, event.occurredAt ?? new Date()) };
  }

  private async indexSnapshot(card: events.CardSnapshot, vector: Float32Array, occurredAt: Date, announce: Map<string, string | undefined>): Promise<void> {
    const vectorPointId = (await this.index.vectorPointOf(card.id))?.vectorPointId ?? newId();
    const applied = await this.index.upsert({
      cardId: card.id,
      authorId: card.authorId,
      content: card.content,
      tags: card.tags,
      link: card.link,
      private: card.private,
      vector,
      vectorPointId,
      ...(card.collisionOf ? { collisionOf: card.collisionOf } : {}),
      updatedAt: card.updatedAt ?? occurredAt,
      ...(card.createdAt ? { createdAt: card.createdAt } : {}),
    });
    if (applied && !card.collisionOf) announce.set(card.id, vectorPointId);
    // A later event of the run made it a collision again: nothing to announce.
    else if (applied) announce.delete(card.id);
  }

  private async announce(cards: Map<string, string | undefined>): Promise<void> {
    const outgoing = [];
    for (const [cardId, written] of cards) {
      let vectorPointId = written;
      if (vectorPointId === undefined) {
        const point = await this.index.vectorPointOf(cardId);
        if (!point || point.collisionOf) continue;
        vectorPointId = point.vectorPointId;
      }
      const payload = events.CardIndexed.encode({ eventId: newId(), occurredAt: new Date(), cardId, vectorPointId }).finish();
      outgoing.push({ topic: Topics.index, key: cardId, payload });
    }
    if (outgoing.length > 0) await this.bus.publish(outgoing);
  }
}

/**
 * Applies the changes, those touching a common card in their original order, the others concurrently (at most
 * `limit` chains at a time). Resolves when all are applied; rejects with the first failure after the others settle.
 */
async function applyInCardOrder(changes: readonly Change[], limit: number): Promise<void> {
  // Chains: changes linked by a shared card, in run order (union of chains when a change touches two cards).
  const chainOf = new Map<string, Change[]>();
  const chains = new Set<Change[]>();
  for (const change of changes) {
    let chain: Change[] | undefined;
    for (const card of change.cards) {
      const other = chainOf.get(card);
      if (!other || other === chain) continue;
      if (!chain) {
        chain = other;
        continue;
      }
      // Two chains meet: merge them, keeping run order.
      const merged = [...chain, ...other].sort((a, b) => changes.indexOf(a) - changes.indexOf(b));
      chains.delete(chain);
      chains.delete(other);
      for (const c of merged) for (const id of c.cards) chainOf.set(id, merged);
      chain = merged;
      chains.add(merged);
    }
    if (!chain) {
      chain = [];
      chains.add(chain);
    }
    chain.push(change);
    for (const card of change.cards) chainOf.set(card, chain);
  }
  const queue = [...chains];
  let failure: unknown;
  const worker = async () => {
    for (let chain = queue.shift(); chain; chain = queue.shift()) {
      try {
        for (const change of chain) await change.apply();
      } catch (err) {
        failure ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, queue.length) }, worker));
  if (failure !== undefined) throw failure;
}
