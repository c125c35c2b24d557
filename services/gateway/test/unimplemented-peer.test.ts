import { cards } from '@cards/proto';
import { gatewayInFrontOf, stub, stubPeersForSuite, type GatewayInFront } from './fake-peer';

/**
 * A cards service of an older release: its CardService lacks CountCards (as a release lacks a method added after
 * it), so gRPC answers UNIMPLEMENTED for it. Per-team releases meet this when a caller is released before its callee.
 */
const olderCardService = { ...cards.CardServiceDefinition, methods: Object.fromEntries(Object.entries(cards.CardServiceDefinition.methods).filter(([key]) => key !== 'countCards')) };

const peers = stubPeersForSuite(
  { register: (s) => s.add(olderCardService as typeof cards.CardServiceDefinition, stub<cards.CardServiceImplementation>(cards.CardServiceDefinition, {})) },
  'older-cards',
);

describe('a peer without the method the gateway calls (UNIMPLEMENTED)', () => {
  let gateway: GatewayInFront;
  beforeAll(async () => (gateway = await gatewayInFrontOf(peers.address)));
  afterAll(() => gateway.close());

  it('is 503 with Retry-After and a message saying a service is being upgraded, logged as a warning naming the method', async () => {
    const res = await fetch(`${gateway.base}/api/card/count`);
    expect({ status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') }).toEqual({
      status: 503,
      body: { message: 'This operation is not available yet: a service is being upgraded. Try again in a minute' },
      retryAfter: '30',
    });
    const logged: { level: number; msg: string; grpcMethod?: string }[] = gateway.logged.map((line) => JSON.parse(line));
    expect(logged.filter((line) => line.level >= 40).map(({ level, msg, grpcMethod }) => ({ level, msg, grpcMethod }))).toEqual([
      { level: 40, msg: 'request refused: a peer service does not have this method yet (a caller released before its callee?)', grpcMethod: '/cards.v1.CardService/CountCards' },
    ]);
  });
});
