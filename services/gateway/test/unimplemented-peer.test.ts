import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger, startGrpcServer, type GrpcServerHandle } from '@cards/platform';
import { cards } from '@cards/proto';
import type { Channel } from 'nice-grpc';
import { createGatewayClients } from '../src/clients';
import { appWithoutServices } from './app-without-services';
import { stub } from './fake-peer';

/**
 * A cards service of an older release: its CardService lacks CountCards (as a release lacks a method added after
 * it), so gRPC answers UNIMPLEMENTED for it. Per-team releases meet this when a caller is released before its callee.
 */
const olderCardService = { ...cards.CardServiceDefinition, methods: Object.fromEntries(Object.entries(cards.CardServiceDefinition.methods).filter(([key]) => key !== 'countCards')) };

describe('a peer without the method the gateway calls (UNIMPLEMENTED)', () => {
  let peer: GrpcServerHandle;
  let http: Server;
  let base: string;
  let channels: Channel[];
  const logged: { level: number; msg: string; grpcMethod?: string }[] = [];

  beforeAll(async () => {
    peer = await startGrpcServer({
      name: 'older-cards',
      logger: createLogger('older-cards', 'silent'),
      register(s) {
        s.add(olderCardService as typeof cards.CardServiceDefinition, stub<cards.CardServiceImplementation>(cards.CardServiceDefinition, {}));
      },
    });
    const address = peer.address;
    const made = createGatewayClients({ identity: address, cards: address, search: address, files: address, notifications: address }, 10_000);
    channels = Object.values(made.channels);
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logged.push(JSON.parse(String(chunk)));
        done();
      },
    });
    http = createServer(appWithoutServices({ clients: made.clients, logger: createLogger('gateway-test', 'info', sink), accessLogLevel: 'silent' }));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    http.close();
    channels.forEach((c) => c.close());
    await peer.shutdown();
  });

  it('is 503 with Retry-After and a message saying a service is being upgraded, logged as a warning naming the method', async () => {
    const res = await fetch(`${base}/api/card/count`);
    expect({ status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') }).toEqual({
      status: 503,
      body: { message: 'This operation is not available yet: a service is being upgraded. Try again in a minute' },
      retryAfter: '30',
    });
    expect(logged.filter((line) => line.level >= 40).map(({ level, msg, grpcMethod }) => ({ level, msg, grpcMethod }))).toEqual([
      { level: 40, msg: 'request refused: a peer service does not have this method yet (a caller released before its callee?)', grpcMethod: '/cards.v1.CardService/CountCards' },
    ]);
  });
});
