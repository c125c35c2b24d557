// A call the server refused before any handler saw it (HTTP/2 REFUSED_STREAM, as on a connection closing at its maximum
// age) is sent again whatever the method, more than once: grpc-js's own transparent retry sends it once only, and a
// second refusal failed the call UNAVAILABLE (CI under load: 10 of 2,000 calls to a server with 100 ms connection ages).
import { constants, createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { identity } from '@cards/proto';
import { createGrpcClient } from '../src/grpc-client';

/** A bare HTTP/2 server that refuses its first `refusals` streams unprocessed and answers the others as a gRPC server. */
async function refusingServer(refusals: number): Promise<{ server: Http2Server; address: string; streams: () => number }> {
  let seen = 0;
  const server = createServer();
  server.on('stream', (stream: ServerHttp2Stream) => {
    seen++;
    if (seen <= refusals) {
      // Node reports the stream's own close with an error code as an error of the stream.
      stream.on('error', () => {});
      stream.close(constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    stream.on('data', () => {});
    stream.on('end', () => {
      const message = identity.User.encode({ id: 'answered', email: 'a@example.com', visibleEmail: true }).finish();
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      Buffer.from(message).copy(frame, 5);
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(frame);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, address: `127.0.0.1:${(server.address() as AddressInfo).port}`, streams: () => seen };
}

describe('a gRPC call refused unprocessed', () => {
  const closing: (() => void)[] = [];
  afterEach(() => closing.splice(0).forEach((close) => close()));

  it('is answered when the server refuses it twice, though the method is not marked idempotent', async () => {
    const { server, address, streams } = await refusingServer(2);
    const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, address);
    closing.push(() => channel.close(), () => server.close());
    expect(await client.resolveSession({ token: 'x' })).toMatchObject({ id: 'answered' });
    expect(streams()).toBe(3);
  });

  it('fails UNAVAILABLE when the server never takes it, after a bounded number of attempts', async () => {
    const { server, address, streams } = await refusingServer(Number.MAX_SAFE_INTEGER);
    const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, address);
    closing.push(() => channel.close(), () => server.close());
    await expect(client.resolveSession({ token: 'x' })).rejects.toMatchObject({ details: 'Stream refused by server' });
    // grpc-js's one transparent retry per attempt, and three attempts.
    expect(streams()).toBe(6);
  });
});
