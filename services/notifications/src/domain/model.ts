/** What a notification is about. */
export type NotificationKind = 'verification' | 'collection_created';

interface NotificationBase {
  id: string;
  /** The owner: only this user sees or changes it. */
  userId: string;
  read: boolean;
  createdAt: Date;
  updatedAt: Date;
  /** The event that produced it; a replay of the same event adds nothing. */
  sourceEventId: string;
}

/** Content verification of one of the user's cards finished. */
export interface VerificationNotification extends NotificationBase {
  kind: 'verification';
  cardId: string;
  verificationId: string;
  /** token_set_ratio between the card and its linked page, 0-100. */
  similarityScore: number;
}

/** A collection of the user's was created (by hand or from an uploaded file). */
export interface CollectionCreatedNotification extends NotificationBase {
  kind: 'collection_created';
  collectionId: string;
}

export type Notification = VerificationNotification | CollectionCreatedNotification;

/** The natural key of what a notification reports: one notification per verification and per collection. */
export function subjectKeyOf(n: Notification): string {
  return n.kind === 'verification' ? `verification:${n.verificationId}` : `collection:${n.collectionId}`;
}

/** A deleted thing notifications may be about. */
export type DeletedSubject = { kind: 'card'; cardId: string } | { kind: 'collection'; collectionId: string };

/** The key under which a deletion is remembered: the thing a notification is about (its card or collection). */
export function aboutKeyOf(n: Notification | DeletedSubject): string {
  if (n.kind === 'verification' || n.kind === 'card') return `card:${n.cardId}`;
  return `collection:${n.collectionId}`;
}

/** Scores outside 0-100 (a misbehaving producer) are clamped rather than stored as nonsense. */
export function clampScore(score: number): number {
  if (!Number.isFinite(score)) return 0;
  return Math.max(0, Math.min(100, Math.round(score)));
}
