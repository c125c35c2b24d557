import type { Router } from 'express';
import { ClientError, Status } from 'nice-grpc';
import { z } from 'zod';
import { toApiTimestamp } from '@cards/platform';
import { notifications } from '@cards/proto';
import type { RouteDeps } from '../app';
import type { GatewayClients } from '../clients';
import { pagesOf, sendJsonArrayInPages } from '../http/json-array-in-pages';
import { requireUser } from '../http/session';
import { parseBody, refuseUnreadableBody, uuidString } from '../http/validation';

export const markReadBody = z.object({ notification_id: uuidString });

/**
 * A notification as the interface names its fields, plus `type` telling the two kinds apart. One object literal (no
 * spread), and the timestamp formatted once when both are the same (unread notifications): a listing presents thousands.
 */
export function presentNotification(n: notifications.Notification) {
  const createdAt = toApiTimestamp(n.createdAt);
  const updatedAt = n.updatedAt !== undefined && n.createdAt !== undefined && n.updatedAt.getTime() === n.createdAt.getTime() ? createdAt : toApiTimestamp(n.updatedAt);
  if (n.type === notifications.NotificationType.NOTIFICATION_TYPE_COLLECTION_CREATED) {
    return { type: 'collection_created' as const, id: n.id, user_uuid: n.userId, collection_uuid: n.collectionId ?? null, user_read: n.userRead, created_at: createdAt, updated_at: updatedAt };
  }
  return {
    type: 'verification' as const,
    id: n.id,
    user_uuid: n.userId,
    card_uuid: n.cardId ?? null,
    verification_uuid: n.verificationId ?? null,
    similarity_score: n.similarityScore ?? 0,
    user_read: n.userRead,
    created_at: createdAt,
    updated_at: updatedAt,
  };
}

/** Well under the gRPC message limit per page (the service caps pages at 1000, ~200 KB). */
const NOTIFICATIONS_PAGE_SIZE = 1000;

/** Every notification of the user, newest first, presented, one gRPC page at a time. */
function presentedNotificationPages(client: GatewayClients['notifications'], userId: string) {
  return pagesOf(async (pageToken) => {
    const page = await client.listNotifications({ callerId: userId, pageSize: NOTIFICATIONS_PAGE_SIZE, pageToken }, { idempotent: true });
    return { items: page.notifications.map(presentNotification), nextPageToken: page.nextPageToken };
  });
}

/** Bumped when the presentation of the list changes, so a tag given before names a different answer after. */
const LIST_PRESENTATION = 'n1';

/**
 * The entity tag of the caller's list: its owner and the notifications service's list version (which changes with
 * every notification added, removed or marked read), or none from a service that has no versions yet (UNIMPLEMENTED).
 */
async function listTag(client: GatewayClients['notifications'], userId: string): Promise<string | undefined> {
  try {
    const { version } = await client.getListVersion({ callerId: userId }, { idempotent: true });
    return version === '' ? undefined : `"${LIST_PRESENTATION}.${userId}.${version}"`;
  } catch (err) {
    if (err instanceof ClientError && err.code === Status.UNIMPLEMENTED) return undefined;
    throw err;
  }
}

/** Whether an If-None-Match header names the tag (weak comparison, as RFC 9110 asks for If-None-Match), or is `*`. */
function noneMatchNames(header: string | undefined, tag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((entry) => {
    const candidate = entry.trim();
    return candidate === '*' || candidate === tag || candidate === `W/${tag}`;
  });
}

/**
 * The caller's notifications: list (newest first), mark one read, mark all read. The list carries an ETag, read
 * before the list itself (so the list is never older than its tag); a poll naming it in If-None-Match while the list
 * is unchanged gets 304 with no body and no listing (docs/decisions.md, "Conditional GET of the notification list").
 */
export function registerNotificationRoutes(router: Router, { clients }: RouteDeps): void {
  router.get('/notifications', async (req, res) => {
    const user = requireUser(req);
    const tag = await listTag(clients.notifications, user.id);
    if (tag !== undefined) {
      res.setHeader('etag', tag);
      if (noneMatchNames(req.get('if-none-match'), tag)) {
        res.status(304).end();
        return;
      }
    }
    await sendJsonArrayInPages(res, presentedNotificationPages(clients.notifications, user.id));
  });

  // Registered before PUT /notifications so "all" is never mistaken for anything else.
  router.put('/notifications/all', async (req, res) => {
    const user = requireUser(req);
    refuseUnreadableBody(req);
    await clients.notifications.markAllRead({ callerId: user.id }, { idempotent: true });
    res.status(204).end();
  });

  router.put('/notifications', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(markReadBody, req);
    await clients.notifications.markRead({ callerId: user.id, notificationId: body.notification_id }, { idempotent: true });
    res.status(204).end();
  });
}
