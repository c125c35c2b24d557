import { Status, type CallContext, type ServerMiddlewareCall } from 'nice-grpc';
import { createLogger, errorMiddleware } from '../src';

/** One call through the error middleware whose handler fails as a store does when its engine does not answer. */
async function callFailing(middleware: ReturnType<typeof errorMiddleware>): Promise<unknown> {
  const call = {
    method: { path: '/cards.v1.CardService/GetCard' },
    request: {},
    next: async function* () {
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:27017'), { name: 'MongoServerSelectionError' });
    },
  } as unknown as ServerMiddlewareCall<unknown, unknown>;
  const run = middleware(call, {} as CallContext);
  return run.next().catch((err: unknown) => err);
}

describe('the gRPC error middleware during an engine outage', () => {
  it('answers every call UNAVAILABLE, logging one warning without a stack rather than one per call', async () => {
    const lines: Array<{ level: number; msg: string; err?: unknown; sinceLastWarning?: number; method?: string }> = [];
    const middleware = errorMiddleware(createLogger('cards', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) }));
    for (let i = 0; i < 5; i++) expect(await callFailing(middleware)).toMatchObject({ code: Status.UNAVAILABLE });
    expect(lines).toEqual([expect.objectContaining({ level: 40, msg: 'an engine is unreachable: answering UNAVAILABLE', method: '/cards.v1.CardService/GetCard', sinceLastWarning: 0 })]);
    expect(lines[0]!.err).toBeUndefined();
  });
});
