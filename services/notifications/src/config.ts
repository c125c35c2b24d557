import { z } from 'zod';
import { envInt, envPort } from '@cards/platform';

export const notificationsConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  NOTIFICATIONS_GRPC_HOST: z.string().default('127.0.0.1'),
  NOTIFICATIONS_GRPC_PORT: envPort(50055),
  /** Notifications created longer ago than this many days are removed (hourly, and at start); 0 keeps all. */
  NOTIFICATIONS_RETENTION_DAYS: envInt(180),
  /** Kafka brokers; absent selects the embedded event log under DATA_DIR. */
  KAFKA_BROKERS: z.string().optional().transform((v) => (v === '' ? undefined : v)),
  /** MongoDB; absent selects the embedded SQLite store. */
  MONGO_URL: z.string().optional().transform((v) => (v === '' ? undefined : v)),
});

export type NotificationsConfig = z.infer<typeof notificationsConfigSchema>;
