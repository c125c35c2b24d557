import { randomUUID } from 'node:crypto';
import { ResourceExhaustedError, ServiceBusyError, UnavailableError } from '@cards/platform';
import { describeBehindGateway, stubPeersForSuite } from './fake-peer';

/** The cards service's refusal when its large-HTML cleaners and their line are full (WorkerCardHtmlCleaner). */
const CLEANERS_BUSY = 'The service is busy cleaning other large cards; send the card again in a few seconds';

/** The cards service's refusal when the user already has their share of the large-HTML cleaners (CARD_HTML_PER_USER). */
const OWN_CLEANS_BUSY = 'You have too many large cards being cleaned at once; send the card again when one of them has finished';

/** A link, and a card id, whose large card the stub cards service finds beyond its author's share of the cleaners. */
const ownShareLink = 'https://example.com/own-share';
const ownShareCard = randomUUID();

/** A link whose card the stub cards service cannot store: its store is unreachable (no bound of its own is full). */
const storeDownLink = 'https://example.com/store-down';

const peers = stubPeersForSuite({
  identity: {
    async resolveSession(req) {
      return { id: req.token, email: `${req.token}@example.com`, visibleEmail: false };
    },
  },
  cards: {
    async createCard(req) {
      if (req.link === storeDownLink) throw new UnavailableError('the card store cannot be reached');
      if (req.link === ownShareLink) throw new ResourceExhaustedError(OWN_CLEANS_BUSY);
      throw new ServiceBusyError(CLEANERS_BUSY);
    },
    async updateCardVersioned(req) {
      if (req.cardId === ownShareCard) throw new ResourceExhaustedError(OWN_CLEANS_BUSY);
      throw new ServiceBusyError(CLEANERS_BUSY);
    },
  },
});

describeBehindGateway("the cards service's busy refusal behind the gateway", () => peers.address, (gateway) => {
  const cookie = `ai-editor=${randomUUID()}`;
  const largeCard = `<p>${'word '.repeat(80)}</p>`.padEnd(20_000, ' ');

  beforeEach(() => (gateway.logged.length = 0));

  const send = (method: string, path: string, body: object) =>
    fetch(`${gateway.base}/api${path}`, { method, headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify(body) });
  const logLines = () => (gateway.logged.map((line) => JSON.parse(line)) as { level: number; msg: string; err?: unknown; status?: number }[]).filter((line) => line.level >= 40).map((line) => ({ level: line.level, msg: line.msg, hasErr: line.err !== undefined, status: line.status }));

  it.each([
    ['POST /api/card', () => send('POST', '/card', { card_html: largeCard, link: 'https://example.com/a', private: false })],
    ['PUT /api/card/update', () => send('PUT', '/card/update', { card_uuid: randomUUID(), card_html: largeCard })],
  ])("%s is 503 with the service's message and Retry-After, logged as one warn line without a stack", async (_route, request) => {
    const res = await request();
    expect({ status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') }).toEqual({ status: 503, body: { message: CLEANERS_BUSY }, retryAfter: '5' });
    expect(logLines()).toEqual([{ level: 40, msg: 'request refused: server busy', hasErr: false, status: 503 }]);
  });

  it.each([
    ['POST /api/card', () => send('POST', '/card', { card_html: largeCard, link: ownShareLink, private: false })],
    ['PUT /api/card/update', () => send('PUT', '/card/update', { card_uuid: ownShareCard, card_html: largeCard })],
  ])("%s is 429 with the service's message and Retry-After when the user's own share of the cleaners is taken, nothing logged", async (_route, request) => {
    const res = await request();
    expect({ status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') }).toEqual({ status: 429, body: { message: OWN_CLEANS_BUSY }, retryAfter: '5' });
    expect(logLines()).toEqual([]);
  });

  it('keeps the generic 503, without Retry-After, for a cards service that cannot answer (no bound of its own full)', async () => {
    const res = await send('POST', '/card', { card_html: largeCard, link: storeDownLink, private: false });
    expect({ status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') }).toEqual({ status: 503, body: { message: 'A backing service is unavailable, try again' }, retryAfter: null });
    // An outage is expected, not a bug: a warning without a stack (one a minute at most while it lasts).
    expect(logLines()).toEqual([{ level: 40, msg: 'request refused: a service behind the gateway is unavailable', hasErr: false, status: 503 }]);
  });
});
