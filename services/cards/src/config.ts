import { z } from 'zod';
import { envInt } from '@cards/platform';

export const cardsConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  CARDS_GRPC_HOST: z.string().default('127.0.0.1'),
  CARDS_GRPC_PORT: envInt(50052),
});

export type CardsConfig = z.infer<typeof cardsConfigSchema>;
