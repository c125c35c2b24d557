import { randomUUID } from 'node:crypto';
import { UnavailableError } from '@cards/platform';
import type { identity } from '@cards/proto';
import { gatewayInFrontOf, stubPeersForSuite, type GatewayInFront } from './fake-peer';

/** The caller, as identity answers both ResolveSession (the session check) and GetUsers. */
const caller: identity.User = {
  id: randomUUID(),
  email: 'ann@example.com',
  username: 'ann',
  website: 'https://ann.example',
  visibleEmail: false,
  createdAt: new Date('2026-01-02T03:04:05.678Z'),
};
const cardId = randomUUID();
const storedAt = new Date('2026-02-03T04:05:06.789Z');

/** Identity gone after the session check: GetUsers answers UNAVAILABLE. */
let identityGone = false;
let getUsersCalls = 0;
let stored = 0;

const peers = stubPeersForSuite({
  identity: {
    async resolveSession() {
      return caller;
    },
    async getUsers() {
      getUsersCalls++;
      if (identityGone) throw new UnavailableError('identity is restarting');
      return { users: [caller] };
    },
  },
  cards: {
    async createCard(req) {
      stored++;
      return {
        card: { id: cardId, authorId: req.callerId, content: 'text', cardHtml: req.cardHtml, link: req.link, totalUpvotes: 0, totalDownvotes: 0, createdAt: storedAt, updatedAt: storedAt, tags: req.tags, private: req.private },
        duplicate: false,
      };
    },
  },
});

describe('POST /api/card presents the stored card with its author from the session', () => {
  let gateway: GatewayInFront;
  beforeAll(async () => (gateway = await gatewayInFrontOf(peers.address)));
  afterAll(() => gateway.close());

  const create = () =>
    fetch(`${gateway.base}/api/card`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `ai-editor=${randomUUID()}` },
      body: JSON.stringify({ card_html: `<p>${'word '.repeat(80)}</p>`, link: 'https://example.com/a', private: false, tag_set: ['t'] }),
    });

  it('answers 200 with the card, not 503, when identity went away after the session check (a retry would store it twice)', async () => {
    identityGone = true;
    getUsersCalls = 0;
    stored = 0;
    const res = await create();
    expect({ status: res.status, stored, getUsersCalls }).toEqual({ status: 200, stored: 1, getUsersCalls: 0 });
    const body = (await res.json()) as { card_metadata: Record<string, unknown>; duplicate: boolean };
    expect(body).toEqual({
      card_metadata: expect.objectContaining({
        id: cardId,
        author_id: caller.id,
        // The caller sees their own e-mail, as GetUsers presented it to them.
        author: { id: caller.id, email: 'ann@example.com', username: 'ann', website: 'https://ann.example', visible_email: false, created_at: '2026-01-02T03:04:05.678' },
        vector_point_id: null,
      }),
      duplicate: false,
    });
  });

  it('answers what the identity lookup gave: same shape and values', async () => {
    identityGone = true;
    const fromSession = (await (await create()).json()) as unknown;
    // The former presentation, with the author from GetUsers (presentCards), for the same stored card.
    identityGone = false;
    const { presentCards } = await import('../src/presenters/card-presenter');
    const { card } = await gateway.clients.cards.createCard({ callerId: caller.id, cardHtml: `<p>${'word '.repeat(80)}</p>`, link: 'https://example.com/a', private: false, tags: ['t'] });
    const [presented] = await presentCards(gateway.clients, [card!], caller.id);
    expect(fromSession).toEqual({ card_metadata: { ...presented!, vector_point_id: null, author_id: caller.id }, duplicate: false });
  });
});
