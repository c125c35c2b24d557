import type { DeletedSubject, Notification } from './model';

/** One page of a user's notifications, newest first. */
export interface NotificationPage {
  notifications: Notification[];
  /** Where the next page starts; absent when nothing is after this one. Only the repository that gave it can read it. */
  next?: string;
}

/**
 * Storage of notifications, each owned by one user.
 * The store itself guarantees at most one notification per source event and per subject
 * (verification id / collection id), so consumers may deliver the same event any number of times.
 */
export interface NotificationRepository {
  /** Stores the notification; returns false (and changes nothing) when its source event or subject is already stored. */
  add(notification: Notification): Promise<boolean>;
  /** The user's notifications, newest first (creation time, then insertion order). */
  listForUser(userId: string): Promise<Notification[]>;
  /**
   * At most `limit` of the user's notifications in the same order, starting after `after` (a `next` this
   * repository gave; omitted: the newest). A position is a notification's creation time and insertion
   * order, neither of which ever changes, so paging on while notifications are added or marked read
   * lists each one that existed at the start exactly once. Throws InvalidArgumentError for a cursor it
   * did not give.
   */
  listPageForUser(userId: string, limit: number, after?: string): Promise<NotificationPage>;
  /**
   * Marks one of the user's notifications read. Returns false when no notification with that id
   * belongs to the user (unknown, or someone else's): the caller cannot tell the two apart.
   */
  markRead(userId: string, notificationId: string, at: Date): Promise<boolean>;
  /** Marks every unread notification of the user read; returns how many changed. */
  markAllRead(userId: string, at: Date): Promise<number>;
  /**
   * A marker of the user's list: how many notifications they have, how many of those are read, and how many of theirs
   * were ever removed. Notifications only go from unread to read and removals only add up, so every change of the list
   * (one added, removed, one or all marked read) changes it, and an unchanged marker means an unchanged list.
   */
  listVersionForUser(userId: string): Promise<string>;
  /**
   * The card or collection was deleted: removes the notifications about it, and from then on add() refuses one about
   * it (an event announcing it may arrive after the deletion's, on another topic). Returns how many were removed.
   */
  removeAbout(subject: DeletedSubject, at: Date): Promise<number>;
  /**
   * Removes at most `limit` notifications created before `cutoff` (the retention), oldest first. Returns how many
   * notifications were removed.
   */
  removeOlderThan(cutoff: Date, limit: number): Promise<number>;
  /**
   * Forgets at most `limit` deletions recorded before `cutoff` (the retention: nothing about them can still be on its
   * way), so add() takes a notification about them again. Returns how many were forgotten.
   */
  forgetDeletionsBefore(cutoff: Date, limit: number): Promise<number>;
  close(): Promise<void>;
}
