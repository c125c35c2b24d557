import { notifications } from '@cards/proto';
import type { NotificationService } from '../application/notification-service';
import type { Notification } from '../domain/model';

function toProto(n: Notification): notifications.Notification {
  const common = { id: n.id, userId: n.userId, userRead: n.read, createdAt: n.createdAt, updatedAt: n.updatedAt };
  if (n.kind === 'verification') {
    return { ...common, type: notifications.NotificationType.NOTIFICATION_TYPE_VERIFICATION, cardId: n.cardId, verificationId: n.verificationId, similarityScore: n.similarityScore };
  }
  return { ...common, type: notifications.NotificationType.NOTIFICATION_TYPE_COLLECTION_CREATED, collectionId: n.collectionId };
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
  };
}
