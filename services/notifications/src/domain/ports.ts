import type { Notification } from './model';

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
   * A marker of the user's list: how many notifications they have and how many of those are read. Notifications
   * are never removed and only go from unread to read, so every change of the list (one added, one or all marked
   * read) changes it, and an unchanged marker means an unchanged list.
   */
  listVersionForUser(userId: string): Promise<string>;
  close(): Promise<void>;
}
