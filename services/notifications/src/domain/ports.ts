import type { Notification } from './model';

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
   * Marks one of the user's notifications read. Returns false when no notification with that id
   * belongs to the user (unknown, or someone else's): the caller cannot tell the two apart.
   */
  markRead(userId: string, notificationId: string, at: Date): Promise<boolean>;
  /** Marks every unread notification of the user read; returns how many changed. */
  markAllRead(userId: string, at: Date): Promise<number>;
  close(): Promise<void>;
}
