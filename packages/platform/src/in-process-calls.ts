import { execute, isAbortError } from 'abort-controller-x';
import { ClientError, Metadata, ServerError, Status, type CallContext, type CallOptions, type ServerMiddleware } from 'nice-grpc';

/** A ts-proto message type as the generated service definitions carry it. */
interface MessageType {
  encode(message: unknown): { finish(): Uint8Array };
  decode(bytes: Uint8Array): unknown;
  fromPartial?(object: unknown): unknown;
}

/** A ts-proto (nice-grpc `outputServices=nice-grpc`) service definition. */
export interface TsProtoDefinition {
  fullName: string;
  methods: Record<string, { name: string; requestType: MessageType; responseType: MessageType; requestStream: boolean; responseStream: boolean; options: object }>;
}

type UnaryImplementation = (request: unknown, context: CallContext) => Promise<unknown>;

/** A unary method served in this process: the same middleware chain and implementation its gRPC server runs. */
export interface InProcessMethod {
  path: string;
  /** The message as the server would decode it from the wire: serialize, then deserialize (defaults filled, no shared objects). */
  requestOverWire(request: unknown): unknown;
  responseOverWire(response: unknown): unknown;
  invoke(request: unknown, context: CallContext): AsyncGenerator<unknown, unknown, undefined>;
}

const servedByAddress = new Map<string, Map<string, InProcessMethod>>();
let enabled = false;

/**
 * Lets clients in this process call services served in this process without a network hop (the all-in-one turns
 * it on). Messages still go through their protobuf encoding and the server's middleware, so a call behaves as it
 * does over the wire: same defaults, errors, deadlines, request id and readiness gate.
 */
export function enableInProcessCalls(on = true): void {
  enabled = on;
}

function wire(type: MessageType): (value: unknown) => unknown {
  const fromPartial = type.fromPartial?.bind(type);
  return (value) => type.decode(type.encode(fromPartial ? fromPartial(value) : value).finish());
}

/** The unary methods of a definition (streaming ones always go over gRPC): key, message types, gRPC path and descriptor. */
export function unaryMethodsOf(definition: TsProtoDefinition) {
  return Object.entries(definition.methods)
    .filter(([, method]) => !method.requestStream && !method.responseStream)
    .map(([key, method]) => {
      const path = `/${definition.fullName}/${method.name}`;
      return { key, method, path, descriptor: { path, requestStream: false as const, responseStream: false as const, options: method.options } };
    });
}

/** The return value of a unary call's middleware chain, refusing what nice-grpc refuses (a yielded message, no message). */
export async function resultOfUnary(iterator: AsyncGenerator<unknown, unknown, undefined>): Promise<unknown> {
  let result = await iterator.next();
  while (!result.done) result = await iterator.throw(new Error('A middleware yielded a message, but expected to only return a message for unary method'));
  if (result.value == null) throw new Error('A middleware returned void, but expected to return a message for unary method');
  return result.value;
}

/** Records a service's unary methods as served at these addresses; returns the function that withdraws them. */
export function serveInProcess(addresses: readonly string[], definition: TsProtoDefinition, implementation: object, middleware: ServerMiddleware): () => void {
  const methods = new Map<string, InProcessMethod>();
  for (const { key, method, path, descriptor } of unaryMethodsOf(definition)) {
    const handler = (implementation as Record<string, UnaryImplementation>)[key]!.bind(implementation);
    async function* unary(request: unknown, context: CallContext) {
      return await handler(request, context);
    }
    methods.set(path, {
      path,
      requestOverWire: wire(method.requestType),
      responseOverWire: wire(method.responseType),
      invoke: (request, context) => middleware({ method: descriptor, requestStream: false, request, responseStream: false, next: unary } as never, context) as AsyncGenerator<unknown, unknown, undefined>,
    });
  }
  for (const address of addresses) {
    const known = servedByAddress.get(address) ?? new Map<string, InProcessMethod>();
    for (const [path, method] of methods) known.set(path, method);
    servedByAddress.set(address, known);
  }
  return () => {
    for (const address of addresses) {
      const known = servedByAddress.get(address);
      for (const path of methods.keys()) if (known?.get(path) === methods.get(path)) known!.delete(path);
    }
  };
}

/** The addresses a client may use for a server listening on host:port in this process. */
export function localAddresses(host: string, port: number): string[] {
  const wildcard = host === '0.0.0.0' || host === '::' || host === '[::]';
  return wildcard ? [`127.0.0.1:${port}`, `localhost:${port}`, `${host}:${port}`] : [`${host}:${port}`];
}

/** The in-process method behind address + path, when in-process calls are on and this process serves it. */
export function inProcessMethod(address: string, path: string): InProcessMethod | undefined {
  return enabled ? servedByAddress.get(address)?.get(path) : undefined;
}

/** How a gRPC client sees what the server threw (nice-grpc's server status mapping, then its client error). */
function asClientError(path: string, error: unknown): unknown {
  if (error instanceof ServerError) return new ClientError(path, error.code, error.details);
  if (isAbortError(error)) return new ClientError(path, Status.CANCELLED, 'The operation was cancelled');
  process.emitWarning(`${path}: Uncaught error in server implementation method. ${error instanceof Error ? error.stack : String(error)}`);
  return new ClientError(path, Status.UNKNOWN, 'Unknown server error occurred');
}

/**
 * The transport step of a unary client call made in process: what grpc-js would do on the wire, minus the wire.
 * The caller's abort signal (deadline, cancellation) aborts the server's context as a cancelled call would.
 */
export async function* callInProcess(method: InProcessMethod, request: unknown, options: CallOptions): AsyncGenerator<never, unknown, undefined> {
  let decoded: unknown;
  try {
    decoded = method.requestOverWire(request);
  } catch (error) {
    throw new ClientError(method.path, Status.INTERNAL, `Request message serialization failure: ${error instanceof Error ? error.message : String(error)}`);
  }
  const cancel = new AbortController();
  const context: CallContext = {
    metadata: Metadata(options.metadata),
    peer: 'in-process',
    header: Metadata(),
    sendHeader() {},
    trailer: Metadata(),
    signal: cancel.signal,
  };
  return await execute(options.signal ?? new AbortController().signal, (resolve, reject) => {
    // Started from the event loop's check phase, as a call arriving over the wire starts from its poll phase: a
    // chain of in-process calls must not run as one long run of microtasks that keeps HTTP requests waiting.
    new Promise<void>((started) => setImmediate(started))
      .then(() => resultOfUnary(method.invoke(decoded, context)))
      // As grpc-js hands the trailer over with the status, whatever the outcome.
      .finally(() => options.onTrailer?.(context.trailer))
      .then(
        (response) => {
          try {
            resolve(method.responseOverWire(response));
          } catch (error) {
            reject(new ClientError(method.path, Status.INTERNAL, `Response message serialization failure: ${error instanceof Error ? error.message : String(error)}`));
          }
        },
        (error: unknown) => reject(asClientError(method.path, error)),
      );
    return () => cancel.abort();
  });
}
