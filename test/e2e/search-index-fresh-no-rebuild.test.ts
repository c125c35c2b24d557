import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createGrpcClient, loopbackTopologyEnv, serviceMetrics, type RunningService } from '@cards/platform';
import { cards as cardsProto } from '@cards/proto';
import { startCards } from '../../services/cards/src/main';
import { startSearch } from '../../services/search/src/main';
import { TEST_ENV } from '../support/service';
import { eventuallyDefined } from '../support/eventually';
import { uniqueText } from './cards-support';
import { testTempDir } from '../support/cleanup';

// A new system whose first cards are made before the search service answers (search-starts-late.test.ts): search then
// creates its index at its first start while the cards it has not indexed wait in the log. That is not a lost index
// (its consumer group has handled nothing yet): search must not ask cards to rebuild it, at that start or at a restart
// (commit 146ea26 took back a trigger that could not tell these apart). The services as they run in production, each
// its own composition root, in this process, so their metrics are read here.
let dataDir: string;
let env: Record<string, string | undefined>;
let cards: RunningService | undefined;
let search: RunningService | undefined;
const logLevel = process.env.LOG_LEVEL;

const rebuildRequests = async () => (await serviceMetrics.getSingleMetric('card_library_search_index_rebuild_requests_total')!.get()).values[0]!.value;

beforeAll(async () => {
  process.env.LOG_LEVEL = 'error';
  dataDir = testTempDir('cards-fresh-index-');
  env = { ...process.env, ...TEST_ENV, DATA_DIR: dataDir, ...(await loopbackTopologyEnv()), METRICS_PORT: undefined };
  cards = await startCards(env);
}, 60_000);

afterAll(async () => {
  await search?.stop();
  await cards?.stop();
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

it('a new system with cards made before search starts: search indexes them from the log and asks for no rebuild, nor at a restart', async () => {
  const { client, channel } = createGrpcClient(cardsProto.CardServiceDefinition, env.CARDS_SERVICE_ADDR!);
  try {
    const before = await rebuildRequests();
    const [original, reordered] = reorderedPair();
    const create = (text: string) =>
      client.createCard({ callerId: randomUUID(), cardHtml: `<p>${text}</p>`, link: '', private: false, tags: [], idempotencyKey: `${randomUUID()}:0`, hiddenByFile: false, privacyFromFile: false });
    const first = await create(original);
    const copy = await create(reordered);

    search = await startSearch(env);
    // Search indexed both (the copy joined the card it copies on search's announcement).
    const collisionOf = await eventuallyDefined(async () => (await client.getCard({ cardId: copy.card!.id, callerId: '' })).collisionOf || undefined, 'the copy to join the card it copies', 60_000);
    expect(collisionOf).toBe(first.card!.id);
    expect(await rebuildRequests()).toBe(before);

    // A restart on the index it made: its group has handled events now, but the index exists.
    await search.stop();
    search = undefined;
    search = await startSearch(env);
    const third = await create(uniqueText(96));
    await eventuallyDefined(async () => ((await client.getCard({ cardId: third.card!.id, callerId: '' })).vectorPointId ? true : undefined), 'a card made after the restart to be indexed', 60_000);
    expect(await rebuildRequests()).toBe(before);
  } finally {
    channel.close();
  }
}, 180_000);
