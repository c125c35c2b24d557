import { randomUUID } from 'node:crypto';

const WORDS = (
  'river mountain library archive signal harbor lantern meadow orbit canvas ' +
  'granite velvet compass thunder willow crystal ember falcon glacier horizon ' +
  'island jasmine kernel lattice marble nectar oasis pepper quartz rhythm ' +
  'saddle timber umbrella vessel whistle yarrow zephyr anchor beacon cobalt ' +
  'dune echo fjord grove hollow ivory jungle kettle lagoon mosaic'
).split(' ');

/** A paragraph of `words` words that no other call produces (random words, seeded by a fresh UUID). */
export function uniqueText(words = 80): string {
  const seed = randomUUID().replace(/-/g, '');
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    const n = parseInt(seed.slice((i * 2) % 30, ((i * 2) % 30) + 2), 16) + i * 7 + Math.floor(Math.random() * 1000);
    out.push(WORDS[n % WORDS.length]!);
  }
  out[0] = `card-${seed.slice(0, 12)}`;
  return out.join(' ');
}

export const html = (text: string) => `<p>${text}</p>`;

import type { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import { eventuallyDefined } from '../support/eventually';

/** Waits until the search service has indexed a card (cards then shows its vector_point_id to `user`, who may read it). */
export async function indexed(user: TestUser, cardId: string): Promise<void> {
  await eventuallyDefined(async () => ((await user.client.get(`/api/card/${cardId}`)).json?.vector_point_id ? true : undefined), `card ${cardId} to be indexed`);
}

/** Signs up many users through the gateway, a few at a time. */
export async function signUpMany(baseUrl: string, mailbox: Mailbox, count: number, prefix: string, parallel = 10): Promise<TestUser[]> {
  const users: TestUser[] = [];
  for (let i = 0; i < count; i += parallel) {
    users.push(...(await Promise.all(Array.from({ length: Math.min(parallel, count - i) }, () => signUp(baseUrl, mailbox, prefix)))));
  }
  return users;
}

/** Creates a card through the gateway and answers its id. */
export async function postCard(user: TestUser, body: Record<string, unknown> = {}): Promise<string> {
  const res = await user.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false, ...body });
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json.card_metadata.id as string;
}
