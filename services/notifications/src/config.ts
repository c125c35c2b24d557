import { z } from 'zod';
import { envInt } from '@cards/platform';

export const notificationsConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  NOTIFICATIONS_GRPC_HOST: z.string().default('127.0.0.1'),
  NOTIFICATIONS_GRPC_PORT: envInt(50055),
});

export type NotificationsConfig = z.infer<typeof notificationsConfigSchema>;
