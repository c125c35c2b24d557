import { ServerError, Status } from 'nice-grpc';
import { createGrpcClient, createLogger, startGrpcServer, type GrpcServerHandle } from '@cards/platform';
import { search } from '@cards/proto';
import { GrpcNearDuplicateFinder } from '../src/adapters/grpc/grpc-near-duplicate-finder';

let server: GrpcServerHandle;

beforeAll(async () => {
  const unimplemented = async () => {
    throw new Error('not used');
  };
  const methods = Object.fromEntries(Object.keys(search.SearchServiceDefinition.methods).map((name) => [name, unimplemented]));
  server = await startGrpcServer({
    name: 'search-stub',
    logger: createLogger('test', 'silent'),
    register: (s) =>
      s.add(search.SearchServiceDefinition, {
        ...methods,
        async findNearDuplicates(req: search.FindNearDuplicatesRequest) {
          // What a search service that cannot answer now (down, not ready), one without the lookup, or a failing one answers.
          const refusal = ({ unavailable: Status.UNAVAILABLE, unimplemented: Status.UNIMPLEMENTED, internal: Status.INTERNAL } as Record<string, Status>)[req.content];
          if (refusal !== undefined) throw new ServerError(refusal, req.content);
          // An answer that takes a little while, well within the finder's deadline.
          await new Promise((r) => setTimeout(r, 50));
          return { candidates: [{ cardId: 'c1', cosine: 0.97, duplicate: true }] };
        },
      } as unknown as search.SearchServiceImplementation),
  });
});

afterAll(async () => {
  await server.shutdown();
});

describe('GrpcNearDuplicateFinder', () => {
  it('waits for the search service up to its deadline and returns its candidates', async () => {
    const { client, channel } = createGrpcClient(search.SearchServiceDefinition, server.address);
    try {
      const finder = new GrpcNearDuplicateFinder(client, createLogger('test', 'silent'), 3000);
      await expect(finder.find('some content', 'user-1', 5)).resolves.toEqual([{ cardId: 'c1', cosine: expect.closeTo(0.97, 5), duplicate: true }]);
    } finally {
      channel.close();
    }
  });

  it('answers null (the lookup is owed) when search cannot answer now, [] when it has no lookup or fails it', async () => {
    const { client, channel } = createGrpcClient(search.SearchServiceDefinition, server.address);
    try {
      const finder = new GrpcNearDuplicateFinder(client, createLogger('test', 'silent'), 3000);
      await expect(finder.find('unavailable', 'user-1', 5)).resolves.toBeNull();
      await expect(finder.find('unimplemented', 'user-1', 5)).resolves.toEqual([]);
      await expect(finder.find('internal', 'user-1', 5)).resolves.toEqual([]);
    } finally {
      channel.close();
    }
  });

  it('answers null when search does not answer within the deadline', async () => {
    const { client, channel } = createGrpcClient(search.SearchServiceDefinition, server.address);
    try {
      // The stub answers after 50 ms.
      const finder = new GrpcNearDuplicateFinder(client, createLogger('test', 'silent'), 1);
      await expect(finder.find('some content', 'user-1', 5)).resolves.toBeNull();
    } finally {
      channel.close();
    }
  });
});
