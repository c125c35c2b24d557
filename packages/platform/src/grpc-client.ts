import { createChannel, createClientFactory, Metadata, ClientError, Status, type Channel, type CompatServiceDefinition, type Client, type ClientMiddlewareCall, type CallOptions } from 'nice-grpc';
import { deadlineMiddleware, type DeadlineOptions } from 'nice-grpc-client-middleware-deadline';
import { currentRequestContext, REQUEST_ID_METADATA_KEY } from './request-context';

async function* requestIdClientMiddleware<Request, Response>(call: ClientMiddlewareCall<Request, Response>, options: CallOptions) {
  const requestId = currentRequestContext()?.requestId;
  if (requestId) {
    const metadata = Metadata(options.metadata);
    metadata.set(REQUEST_ID_METADATA_KEY, requestId);
    return yield* call.next(call.request, { ...options, metadata });
  }
  return yield* call.next(call.request, options);
}

export interface RetryOptions {
  /** Retry unary calls on UNAVAILABLE; only for idempotent methods. */
  idempotent?: boolean;
}

async function* retryUnavailableMiddleware<Request, Response>(call: ClientMiddlewareCall<Request, Response, RetryOptions>, options: CallOptions & RetryOptions) {
  const { idempotent, ...rest } = options;
  if (!idempotent || call.requestStream || call.responseStream) return yield* call.next(call.request, rest);
  for (let attempt = 0; ; attempt++) {
    try {
      return yield* call.next(call.request, rest);
    } catch (error) {
      if (!(error instanceof ClientError) || error.code !== Status.UNAVAILABLE || attempt >= 2) throw error;
      await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
    }
  }
}

export type GrpcClient<D extends CompatServiceDefinition> = Client<D, DeadlineOptions & RetryOptions>;

export interface GrpcClientOptions {
  /** Default deadline per call; every call gets one. */
  deadlineMs?: number;
}

/** One channel per peer, built at start-up; every call carries the request id and a deadline. */
export function createGrpcClient<D extends CompatServiceDefinition>(definition: D, address: string, options: GrpcClientOptions = {}): { client: GrpcClient<D>; channel: Channel } {
  const channel = createChannel(address, undefined, {
    'grpc.max_receive_message_length': 8 * 1024 * 1024,
    'grpc.max_send_message_length': 8 * 1024 * 1024,
  });
  const client = createClientFactory()
    .use(requestIdClientMiddleware)
    .use(retryUnavailableMiddleware)
    .use(deadlineMiddleware)
    .create(definition, channel, { '*': { deadline: options.deadlineMs ?? 10_000 } }) as GrpcClient<D>;
  return { client, channel };
}
