import { z } from 'zod';
import { envInt } from '@cards/platform';

export const identityConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  IDENTITY_GRPC_HOST: z.string().default('127.0.0.1'),
  IDENTITY_GRPC_PORT: envInt(50051),
  /** HS256 secret of the session cookie; generated and kept in DATA_DIR when absent. */
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  PUBLIC_URL: z.string().url().default('http://localhost:8090').transform((u) => u.replace(/\/+$/, '')),
  SMTP_URL: z.string().url().optional().or(z.literal('').transform(() => undefined)),
  MAIL_FROM: z.string().default('Card Library <no-reply@card-library.local>'),
  /** scrypt N; lower it only in tests. */
  PASSWORD_HASH_COST: envInt(16384),
  MONGO_URL: z.string().optional(),
});

export type IdentityConfig = z.infer<typeof identityConfigSchema>;
