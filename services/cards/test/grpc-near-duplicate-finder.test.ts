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
        async findNearDuplicates() {
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
});
