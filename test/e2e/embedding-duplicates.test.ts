import { randomUUID } from 'node:crypto';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import type { TestUser } from '../support/accounts';
import { html, signUpMany, uniqueText } from './cards-support';
import { eventuallyDefined } from '../support/eventually';

// Every service in its own process (unless the run already picks a topology): there the search index learns of a new
// card an event hop later (the embedded log's poll, Kafka, an Elasticsearch refresh), so a card sent right after the
// one it copies reaches the duplicate check before that one is indexed. In one process the index usually wins the race.
let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;
let anonymous: ApiClient;

type Entry = { metadata: { id: string }[] };

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, SYSTEM_TOPOLOGY: process.env.SYSTEM_TOPOLOGY ?? 'distributed' } });
  const users = await signUpMany(system.baseUrl, mailbox, 2, 'embdup');
  alice = users[0]!;
  bob = users[1]!;
  anonymous = new ApiClient(system.baseUrl);
}, 180_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

/**
 * A card's text in sentences of 12 words, and the same sentences in reverse order: the same words, so the bundled
 * (bag-of-words) embedder's cosine is 1 and its shingle confirmation holds (~0.75), while the word-shingle Jaccard of
 * the cards store stays under 0.9. Only the embedding verdict makes the second a duplicate of the first.
 */
function reorderedPair(): [string, string] {
  const words = uniqueText(96).split(' ');
  const sentences: string[] = [];
  for (let i = 0; i < words.length; i += 12) sentences.push(`${words.slice(i, i + 12).join(' ')}.`);
  return [sentences.join(' '), [...sentences].reverse().join(' ')];
}

async function create(user: TestUser, text: string, link: string, isPrivate = false): Promise<{ id: string; duplicate: boolean }> {
  const res = await user.client.post('/api/card', { card_html: html(text), link, private: isPrivate });
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
  return { id: res.json.card_metadata.id, duplicate: res.json.duplicate };
}

describe('a duplicate by the embedding verdict alone, sent right after the card it copies', () => {
  it('is a duplicate of that card although the card is not indexed yet: inside its entry in collections and search', async () => {
    for (let round = 0; round < 3; round++) {
      const [original, reordered] = reorderedPair();
      const link = `https://example.org/embedding-duplicates/${randomUUID()}`;
      const a = await create(alice, original, link);
      const b = await create(bob, reordered, link);
      expect([a.duplicate, b.duplicate]).toEqual([false, true]);

      const collection = await alice.client.post('/api/card_collection', { name: `embedding duplicates ${round}`, is_public: true });
      const collectionId = /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(collection.headers.get('location') ?? '')![1]!;
      expect((await alice.client.post(`/api/card_collection/${collectionId}`, { card_metadata_id: a.id })).status).toBe(204);
      const page = (await anonymous.get(`/api/card_collection/${collectionId}/1`)).json.bookmarks as Entry[];
      expect(page.map((e) => e.metadata.map((c) => c.id))).toEqual([[a.id, b.id]]);

      const entries = await eventuallyDefined(async () => {
        const r = await anonymous.post('/api/card/fulltextsearch/1', { content: original.split(' ').slice(0, 6).join(' '), link: [link] });
        const found = r.json.score_cards as Entry[];
        return found.length > 0 ? found : undefined;
      }, 'the card to be searchable');
      expect(entries.map((e) => e.metadata.map((c) => c.id))).toEqual([[a.id, b.id]]);
    }
  });

  it("another user's private card not indexed yet is never the root of the copy", async () => {
    const [original, reordered] = reorderedPair();
    const link = `https://example.org/embedding-duplicates/${randomUUID()}`;
    const secret = await create(alice, original, link, true);
    const copy = await create(bob, reordered, link);
    expect([secret.duplicate, copy.duplicate]).toEqual([false, false]);
    const own = await create(alice, reordered, link, true);
    expect(own.duplicate).toBe(true);
  });
});
