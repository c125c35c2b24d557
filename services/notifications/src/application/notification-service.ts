import { InvalidArgumentError, NotFoundError, isUuid, newId, pageLimit, type Logger } from '@cards/platform';
import { clampScore, type DeletedSubject, type Notification } from '../domain/model';
import type { NotificationPage, NotificationRepository } from '../domain/ports';

/** Notifications removed per batch of the retention sweep, each batch its own short write. */
export const RETENTION_BATCH = 1000;

/** The most one page holds: ~200 KB as gRPC, far below its 8 MiB message limit. */
export const MAX_NOTIFICATION_PAGE_SIZE = 1000;

export interface CardVerifiedFacts {
  eventId: string;
  verificationId: string;
  cardId: string;
  authorId: string;
  score: number;
}

export interface CollectionCreatedFacts {
  eventId: string;
  collectionId: string;
  authorId: string;
}

function requireUuid(value: string, field: string): string {
  if (!isUuid(value)) throw new InvalidArgumentError(`${field}: must be a UUID`);
  return value.toLowerCase();
}

/** Notification use cases: reading and marking by the owner, and building notifications from completion events. */
export class NotificationService {
  constructor(
    private readonly repository: NotificationRepository,
    private readonly logger: Logger,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * One page, newest first: `pageSize` at most (capped at MAX_NOTIFICATION_PAGE_SIZE), after the
   * `pageToken` a previous page gave. A page size of 0 with no token lists everything in one page.
   */
  async listPage(callerId: string, pageSize: number, pageToken: string): Promise<NotificationPage> {
    const userId = requireUuid(callerId, 'caller_id');
    const limit = pageLimit(pageSize, pageToken, MAX_NOTIFICATION_PAGE_SIZE);
    if (limit === undefined) return { notifications: await this.repository.listForUser(userId) };
    return this.repository.listPageForUser(userId, limit, pageToken === '' ? undefined : pageToken);
  }

  /** Someone else's notification reads as missing (NotFoundError), so its existence is not revealed. */
  async markRead(callerId: string, notificationId: string): Promise<void> {
    const changed = await this.repository.markRead(requireUuid(callerId, 'caller_id'), requireUuid(notificationId, 'notification_id'), this.clock());
    if (!changed) throw new NotFoundError('Notification not found');
  }

  async markAllRead(callerId: string): Promise<void> {
    await this.repository.markAllRead(requireUuid(callerId, 'caller_id'), this.clock());
  }

  /** Changes whenever the caller's list does (see NotificationRepository.listVersionForUser); opaque to callers. */
  async listVersion(callerId: string): Promise<string> {
    return this.repository.listVersionForUser(requireUuid(callerId, 'caller_id'));
  }

  /** Idempotent: a replayed event (same event id or same verification id) adds nothing. Returns whether one was added. */
  async recordVerification(facts: CardVerifiedFacts): Promise<boolean> {
    if (!isUuid(facts.authorId) || !isUuid(facts.cardId) || !facts.verificationId || !facts.eventId) {
      this.logger.warn({ facts }, 'card-verified event without author, card, verification or event id: ignored');
      return false;
    }
    const now = this.clock();
    return this.repository.add({
      kind: 'verification',
      id: newId(),
      userId: facts.authorId.toLowerCase(),
      cardId: facts.cardId.toLowerCase(),
      verificationId: facts.verificationId,
      similarityScore: clampScore(facts.score),
      read: false,
      createdAt: now,
      updatedAt: now,
      sourceEventId: facts.eventId,
    });
  }

  /**
   * A card or collection was deleted: its notifications go (they would only lead to a missing page), and one about it
   * arriving later (its event on another topic, behind the deletion's) is not kept. Idempotent.
   */
  async recordDeleted(subject: DeletedSubject): Promise<number> {
    const removed = await this.repository.removeAbout(subject, this.clock());
    if (removed > 0) this.logger.debug({ subject, removed }, 'notifications about a deleted item removed');
    return removed;
  }

  /**
   * The retention (NOTIFICATIONS_RETENTION_DAYS; 0 keeps all): removes the notifications created more than `days` days
   * ago and forgets the deletions recorded before then, in batches of RETENTION_BATCH, yielding between them. Returns
   * how many notifications were removed.
   */
  async removeExpired(days: number): Promise<number> {
    if (days <= 0) return 0;
    const cutoff = new Date(this.clock().getTime() - days * 24 * 60 * 60 * 1000);
    // Further back than a Date reaches (999999999 days, written for "keep all"): nothing is that old, as with 0. The
    // invalid Date would otherwise fail every hourly pass in the store (RangeError), each logged as a warning.
    if (Number.isNaN(cutoff.getTime())) return 0;
    const total = await inBatches(() => this.repository.removeOlderThan(cutoff, RETENTION_BATCH));
    // Apart from the notifications: more deletions than notifications can be past the retention (each deleted card
    // is remembered whether or not anyone had a notification about it), and a pass stopping with the notifications
    // forgot at most one batch of them an hour while more were recorded.
    const forgotten = await inBatches(() => this.repository.forgetDeletionsBefore(cutoff, RETENTION_BATCH));
    if (total > 0 || forgotten > 0) this.logger.info({ removed: total, forgottenDeletions: forgotten, days }, 'notifications past their retention removed');
    return total;
  }

  /** Idempotent: one notification per collection however often its event is delivered. */
  async recordCollectionCreated(facts: CollectionCreatedFacts): Promise<boolean> {
    if (!isUuid(facts.authorId) || !isUuid(facts.collectionId) || !facts.eventId) {
      this.logger.warn({ facts }, 'collection-created event without author, collection or event id: ignored');
      return false;
    }
    const now = this.clock();
    return this.repository.add({
      kind: 'collection_created',
      id: newId(),
      userId: facts.authorId.toLowerCase(),
      collectionId: facts.collectionId.toLowerCase(),
      read: false,
      createdAt: now,
      updatedAt: now,
      sourceEventId: facts.eventId,
    });
  }
}

/** Runs `batch` until it does less than RETENTION_BATCH, yielding the event loop between batches; the sum of its counts. */
async function inBatches(batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const done = await batch();
    total += done;
    if (done < RETENTION_BATCH) return total;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
