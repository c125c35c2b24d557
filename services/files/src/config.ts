import { z } from 'zod';
import { envInt } from '@cards/platform';

export const filesConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  FILES_GRPC_HOST: z.string().default('127.0.0.1'),
  FILES_GRPC_PORT: envInt(50054),
});

export type FilesConfig = z.infer<typeof filesConfigSchema>;
