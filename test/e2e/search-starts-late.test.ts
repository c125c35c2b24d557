import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createGrpcClient, loopbackTopologyEnv, type RunningService } from '@cards/platform';
import { cards as cardsProto } from '@cards/proto';
import { startCards } from '../../services/cards/src/main';
import { startSearch } from '../../services/search/src/main';
import { TEST_ENV } from '../support/service';
import { eventuallyDefined } from '../support/eventually';
import { uniqueText } from './cards-support';
import { testTempDir } from '../support/cleanup';

// The cards and search services as they run in production (each its own composition root, gRPC between them, events
// on the embedded log), with search started after cards has made cards: as a restarted all-in-one resuming file
// ingestion before search answers, or a search pod down while cards are made. A card made then that copies an earlier
// one by the embedding verdict alone used to stay a root for good (only exact and shingle rules ran).
let dataDir: string;
let env: Record<string, string | undefined>;
const running: RunningService[] = [];
const logLevel = process.env.LOG_LEVEL;

beforeAll(async () => {
  // The services log into this process's output: errors only (an announcement handled before search listens is retried, at warn).
  process.env.LOG_LEVEL = 'error';
  dataDir = testTempDir('cards-search-late-');
  env = { ...process.env, ...TEST_ENV, DATA_DIR: dataDir, ...(await loopbackTopologyEnv()), METRICS_PORT: undefined };
  running.push(await startCards(env));
}, 60_000);

afterAll(async () => {
  for (const service of running.reverse()) await service.stop();
  rmSync(dataDir, { recursive: true, force: true });
  if (logLevel === undefined) delete process.env.LOG_LEVEL;
  else process.env.LOG_LEVEL = logLevel;
});

/** The same sentences in reverse order: one bag of words (the bundled embedder calls it a copy), shingles under the bar. */
function reorderedPair(): [string, string] {
  const words = uniqueText(96).split(' ');
  const sentences: string[] = [];
  for (let i = 0; i < words.length; i += 12) sentences.push(`${words.slice(i, i + 12).join(' ')}.`);
  return [sentences.join(' '), [...sentences].reverse().join(' ')];
}

describe('cards made before the search service answers', () => {
  it('a copy by the embedding verdict alone becomes the collision of the card it copies once search is up', async () => {
    const { client, channel } = createGrpcClient(cardsProto.CardServiceDefinition, env.CARDS_SERVICE_ADDR!);
    try {
      const [original, reordered] = reorderedPair();
      const create = (callerId: string, text: string, key: string) =>
        client.createCard({ callerId, cardHtml: `<p>${text}</p>`, link: '', private: false, tags: [], idempotencyKey: key, hiddenByFile: false, privacyFromFile: false });
      const first = await create(randomUUID(), original, `${randomUUID()}:0`);
      const copy = await create(randomUUID(), reordered, `${randomUUID()}:0`);
      // Search does not answer: both are roots for now.
      expect([first.duplicate, copy.duplicate]).toEqual([false, false]);

      running.push(await startSearch(env));
      const collisionOf = await eventuallyDefined(async () => (await client.getCard({ cardId: copy.card!.id, callerId: '' })).collisionOf || undefined, 'the copy to join the card it copies', 60_000);
      expect(collisionOf).toBe(first.card!.id);
      expect((await client.getCard({ cardId: first.card!.id, callerId: '' })).collisionOf || null).toBeNull();
    } finally {
      channel.close();
    }
  });
});
