import { notifications } from '@cards/proto';
import type { NotificationService } from '../application/notification-service';
import type { Notification } from '../domain/model';

/** One object literal per notification (no spread): a listing converts thousands. */
function toProto(n: Notification): notifications.Notification {
  if (n.kind === 'verification') {
    return {
      id: n.id,
      userId: n.userId,
      type: notifications.NotificationType.NOTIFICATION_TYPE_VERIFICATION,
      cardId: n.cardId,
      verificationId: n.verificationId,
      similarityScore: n.similarityScore,
      userRead: n.read,
      createdAt: n.createdAt,
      updatedAt: n.updatedAt,
    };
  }
  return {
    id: n.id,
    userId: n.userId,
    type: notifications.NotificationType.NOTIFICATION_TYPE_COLLECTION_CREATED,
    collectionId: n.collectionId,
    userRead: n.read,
    createdAt: n.createdAt,
    updatedAt: n.updatedAt,
  };
}

/** gRPC face of the notification use cases; no rules here. */
export function notificationHandlers(service: NotificationService): notifications.NotificationServiceImplementation {
  return {
    async listNotifications(req) {
      const page = await service.listPage(req.callerId, req.pageSize, req.pageToken);
      return { notifications: page.notifications.map(toProto), nextPageToken: page.next ?? '' };
    },
    async markRead(req) {
      await service.markRead(req.callerId, req.notificationId);
      return {};
    },
    async markAllRead(req) {
      await service.markAllRead(req.callerId);
      return {};
    },
    async getListVersion(req) {
      return { version: await service.listVersion(req.callerId) };
    },
  };
}
