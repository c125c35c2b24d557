import type { CardRepository, CollectionRepository, EventOutbox, SearchIndexRebuildCursor } from '../domain/ports';
import { bookmarkRepublished, cardRepublished } from './events';

/** Cards (then bookmarks) read and appended at a time, unless told otherwise (the CLI's --batch-size). */
export const DEFAULT_REBUILD_BATCH_SIZE = 500;
/** Unpublished outbox entries a rebuild waits below, unless told otherwise (the CLI's --max-pending). */
export const DEFAULT_REBUILD_MAX_PENDING = 5000;

export interface RepublishProgress {
  cards: number;
  bookmarks: number;
  /** Cards in the store when the run began (cards created meanwhile make `cards` end above it). */
  cardsAtStart: number;
}

export interface SearchIndexRepublisherDeps {
  cards: Pick<CardRepository, 'pageAll' | 'count'>;
  collections: Pick<CollectionRepository, 'pageBookmarks'>;
  outbox: EventOutbox;
  /** Cards (or bookmarks) read and appended to the outbox at a time. */
  batchSize: number;
  /**
   * Entries the outbox may hold before the next batch waits for the relay, so a large store never piles up in it
   * (each card event may be up to ~200 KB).
   */
  maxPending: number;
  /** Called after every batch appended. */
  progress(done: RepublishProgress): void;
  /** Where to start: a rebuild cut short resumes after the last batch it recorded. Default: the very start. */
  from?: SearchIndexRebuildCursor;
  /**
   * Awaited after every batch appended, with where the run now is (the next batch starts after it): the caller records
   * it, so a run cut short after it is resumed from there. A batch appended and not yet recorded is told again on resume
   * (search's projection is idempotent). Throwing ends the run.
   */
  checkpoint?(at: SearchIndexRebuildCursor): Promise<void>;
  /** Called while a batch waits for the relay, about every `waitNoticeMs`. */
  waiting(pending: number): void;
  waitNoticeMs?: number;
  pollMs?: number;
  /** Ends the run before its next batch (it throws); what was appended stays appended. */
  signal?: AbortSignal;
}

/**
 * Tells search every stored card and bookmark again through the service's own outbox, so an index that was lost or
 * damaged is built again by search's usual projection: a snapshot of every card (collisions included) as an update
 * that changed nothing, then every bookmark as added. Reads the store by keyset in batches, never all of it at once.
 */
export class SearchIndexRepublisher {
  constructor(private readonly deps: SearchIndexRepublisherDeps) {}

  async run(): Promise<RepublishProgress> {
    const done: RepublishProgress = { cards: 0, bookmarks: 0, cardsAtStart: await this.deps.cards.count() };
    const from = this.deps.from ?? { phase: 'cards' };
    // Cards first: a bookmark of a card search does not hold yet is kept until the card comes anyway, but an older search
    // service reads a snapshot's (empty) collection list as the card's whole membership.
    if (from.phase === 'cards') {
      let after = from.after;
      do {
        const page = await this.deps.cards.pageAll(this.deps.batchSize, after);
        await this.append(page.items.map(cardRepublished));
        done.cards += page.items.length;
        if (page.items.length > 0) this.deps.progress({ ...done });
        after = page.next;
        await this.deps.checkpoint?.(after === undefined ? { phase: 'bookmarks' } : { phase: 'cards', after });
      } while (after !== undefined);
    }
    let after = from.phase === 'bookmarks' ? from.after : undefined;
    do {
      const page = await this.deps.collections.pageBookmarks(this.deps.batchSize, after);
      await this.append(page.items.map((b) => bookmarkRepublished(b.collectionId, b.cardId, b.createdAt)));
      done.bookmarks += page.items.length;
      if (page.items.length > 0) this.deps.progress({ ...done });
      after = page.next;
      if (after !== undefined) await this.deps.checkpoint?.({ phase: 'bookmarks', after });
    } while (after !== undefined);
    return done;
  }

  private async append(events: Parameters<EventOutbox['append']>[0]): Promise<void> {
    if (events.length === 0) return;
    await this.untilOutboxHasRoom();
    this.deps.signal?.throwIfAborted();
    await this.deps.outbox.append(events);
  }

  private async untilOutboxHasRoom(): Promise<void> {
    const noticeEvery = this.deps.waitNoticeMs ?? 10_000;
    let lastNotice = Date.now();
    for (let pending = await this.deps.outbox.pending(); pending >= this.deps.maxPending; pending = await this.deps.outbox.pending()) {
      this.deps.signal?.throwIfAborted();
      if (Date.now() - lastNotice >= noticeEvery) {
        this.deps.waiting(pending);
        lastNotice = Date.now();
      }
      await new Promise((resolve) => setTimeout(resolve, this.deps.pollMs ?? 200));
    }
  }
}

/**
 * Rebuilds the search index: every stored card and bookmark told to search again (SearchIndexRepublisher), in batches
 * that wait while the outbox holds maxPending unpublished events, from the start or from where a run cut short
 * recorded it was (`from`). The operator's rebuild-search-index command and the
 * cards service's answer to search's request (search-index-rebuild-requests.ts) both run it.
 */
export function rebuildSearchIndex(deps: SearchIndexRepublisherDeps): Promise<RepublishProgress> {
  return new SearchIndexRepublisher(deps).run();
}
