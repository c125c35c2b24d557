import { createChannel, createClientFactory, Metadata, ClientError, Status, type Channel, type CompatServiceDefinition, type Client, type ClientMiddlewareCall, type CallOptions } from 'nice-grpc';
import { GRPC_MAX_MESSAGE_BYTES } from './grpc-limits';
import { SERVICE_BUSY } from './errors';
import { callInProcess, inProcessMethod, resultOfUnary, unaryMethodsOf, type TsProtoDefinition } from './in-process-calls';
import { CALL_BUDGET_METADATA_KEY, currentRequestContext, REQUEST_ID_METADATA_KEY } from './request-context';
import { recordStatusOfService, recordStatusReason, trailerSaysStatusOfService, trailerStatusReason } from './status-origin';
import { withInternalCallToken } from './internal-call-token';

export interface RetryOptions {
  /** Retry unary calls on UNAVAILABLE; only for idempotent methods. */
  idempotent?: boolean;
}

export interface DeadlineOptions {
  /** When the whole call (retries included) gives up: a Date, or milliseconds from now. */
  deadline?: Date | number;
}

/**
 * Request id, deadline, retry and the origin of a failed call's status (isStatusOfService) in one middleware: every
 * gateway request makes at least one call, and each middleware layer is another async generator and promise chain per call.
 */
async function* callPolicyMiddleware<Request, Response>(
  call: ClientMiddlewareCall<Request, Response, RetryOptions & DeadlineOptions>,
  options: CallOptions & RetryOptions & DeadlineOptions,
) {
  const { idempotent, deadline, signal: callerSignal, onTrailer, ...rest } = options;
  const context = currentRequestContext();
  const requestId = context?.requestId;
  // The request's own signal (the gateway aborts it when the client went away before its answer): the call ends
  // CANCELLED on the server's side too, so the work done for nobody stops where the handler looks at its signal.
  const requestSignal = context?.signal;
  const metadata = withInternalCallToken(Metadata(rest.metadata));
  if (requestId) metadata.set(REQUEST_ID_METADATA_KEY, requestId);
  // The time the callee has: its waits for a locked store end before it (storeWaitUntilFor), so it answers 503, not 504.
  // Set again for each attempt: a retry has only what the attempts before it left.
  const deadlineAt = deadline == null ? undefined : deadline instanceof Date ? deadline.getTime() : Date.now() + deadline;
  const setBudget = () => {
    if (deadlineAt !== undefined) metadata.set(CALL_BUDGET_METADATA_KEY, String(Math.max(1, Math.floor(deadlineAt - Date.now()))));
  };
  setBudget();
  rest.metadata = metadata;
  // Reset per attempt: a retry's status must not pass for the service's because an earlier attempt's was.
  let statusOfService = false;
  let reason: string | undefined;
  const passed = {
    ...rest,
    onTrailer(trailer: Metadata) {
      statusOfService = trailerSaysStatusOfService(trailer);
      reason = statusOfService ? trailerStatusReason(trailer) : undefined;
      onTrailer?.(trailer);
    },
  };
  const noteOrigin = (error: unknown) => {
    if (statusOfService && error instanceof ClientError) recordStatusOfService(error);
    if (reason !== undefined && error instanceof ClientError) recordStatusReason(error, reason);
    return error;
  };
  const alreadyAborted = callerSignal?.aborted ? callerSignal : requestSignal?.aborted ? requestSignal : undefined;
  if ((deadline == null && !requestSignal) || alreadyAborted) {
    try {
      return yield* call.next(call.request, { ...passed, signal: alreadyAborted ?? callerSignal });
    } catch (error) {
      throw noteOrigin(error);
    }
  }
  const abort = new AbortController();
  const onCallerAbort = () => abort.abort();
  callerSignal?.addEventListener('abort', onCallerAbort);
  requestSignal?.addEventListener('abort', onCallerAbort);
  let timedOut = false;
  const timer =
    deadline == null
      ? undefined
      : setTimeout(
          () => {
            timedOut = true;
            abort.abort();
          },
          deadline instanceof Date ? deadline.getTime() - Date.now() : deadline,
        );
  const attemptOptions = { ...passed, signal: abort.signal };
  const unary = !call.requestStream && !call.responseStream;
  const retries = unary ? 2 : 0;
  try {
    for (let attempt = 0; ; attempt++) {
      statusOfService = false;
      reason = undefined;
      if (attempt > 0) setBudget();
      try {
        return yield* call.next(call.request, attemptOptions);
      } catch (error) {
        // A store kept locked (SERVICE_BUSY) is not tried again: the callee already waited for it as long as the call's
        // budget let it, so another attempt could only outlast the deadline (a 504 instead of 503 with Retry-After).
        const again =
          error instanceof ClientError && error.code === Status.UNAVAILABLE && reason !== SERVICE_BUSY && (idempotent || refusedUnprocessed(error));
        if (!again || attempt >= retries || timedOut || abort.signal.aborted) throw noteOrigin(error);
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      }
    }
  } finally {
    callerSignal?.removeEventListener('abort', onCallerAbort);
    requestSignal?.removeEventListener('abort', onCallerAbort);
    clearTimeout(timer);
    // A finally that throws replaces the abort error the call ended with: the caller sees the real cause.
    // eslint-disable-next-line no-unsafe-finally
    if (timedOut) throw new ClientError(call.method.path, Status.DEADLINE_EXCEEDED, 'Deadline exceeded');
  }
}

/**
 * A call the server refused before any handler saw it (HTTP/2 REFUSED_STREAM, as on a connection closing at its maximum
 * age): safe to send again whatever the method does. grpc-js sends such a call again itself, but once only, and under
 * load a second connection could reach its age as the call crossed it too (a test with 100 ms ages on a busy CI
 * machine: 10 of 2,000 calls failed). The status carries no other mark than grpc-js's wording.
 */
function refusedUnprocessed(error: ClientError): boolean {
  return error.details === 'Stream refused by server';
}

export type GrpcClient<D extends CompatServiceDefinition> = Client<D, DeadlineOptions & RetryOptions>;

export interface GrpcClientOptions {
  /** Default deadline per call; every call gets one. */
  deadlineMs?: number;
}

/**
 * round_robin over every address the target resolves to: a headless Service's DNS name gives one per pod, and grpc-js's
 * default (pick_first) would send every call over one connection to one of them. One address: the same as before.
 */
const ROUND_ROBIN_SERVICE_CONFIG = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

/**
 * One channel per peer, built at start-up; every call carries the request id and a deadline. A unary call to a
 * service this process serves (the all-in-one, see in-process-calls.ts) skips the network but not the call policy.
 */
export function createGrpcClient<D extends CompatServiceDefinition>(definition: D, address: string, options: GrpcClientOptions = {}): { client: GrpcClient<D>; channel: Channel } {
  const channel = createChannel(address, undefined, {
    'grpc.max_receive_message_length': GRPC_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': GRPC_MAX_MESSAGE_BYTES,
    'grpc.service_config': ROUND_ROBIN_SERVICE_CONFIG,
    // DNS TXT records must not replace the policy above.
    'grpc.service_config_disable_resolution': 1,
    // Retries stay on for grpc-js's transparent ones only (the service config has no retry policy): a call refused
    // before any handler saw it, as on a connection the server is closing at its max age, is sent again (once; a second
    // refusal is callPolicyMiddleware's to retry). Retries of calls a server answered are callPolicyMiddleware's (only
    // idempotent calls). Channelz bookkeeping is never read.
    'grpc.enable_channelz': 0,
    // grpc-js waits 1 s, then 1.6 times longer after each failed connect, up to 120 s, and fails calls meanwhile: a peer
    // back from a 6 s outage was refused for 5.5 s more (measured). At most 1 s between attempts bounds that to ~1 s.
    'grpc.initial_reconnect_backoff_ms': 250,
    'grpc.max_reconnect_backoff_ms': 1000,
  });
  const deadline = options.deadlineMs ?? 10_000;
  const remote = createClientFactory()
    .use(callPolicyMiddleware)
    .create(definition, channel, { '*': { deadline } }) as GrpcClient<D>;
  return { client: withInProcessPath(definition as unknown as TsProtoDefinition, address, remote, deadline), channel };
}

type UnaryCall = (request: unknown, options?: CallOptions & RetryOptions & DeadlineOptions) => Promise<unknown>;

/** The client with each unary method routed in process while the address is served in this process. */
function withInProcessPath<C>(definition: TsProtoDefinition, address: string, remote: C, deadline: number): C {
  if (!('methods' in definition)) return remote;
  const client = { ...remote } as Record<string, UnaryCall>;
  for (const { key, path, descriptor } of unaryMethodsOf(definition)) {
    const overNetwork = (remote as Record<string, UnaryCall>)[key]!;
    client[key] = async (request, callOptions = {}) => {
      const local = inProcessMethod(address, path);
      if (!local) return overNetwork(request, callOptions);
      const call = { method: descriptor, requestStream: false, request, responseStream: false, next: (req: unknown, opts: CallOptions) => callInProcess(local, req, opts) };
      return resultOfUnary(callPolicyMiddleware(call as never, { deadline, ...callOptions }));
    };
  }
  return client as C;
}
