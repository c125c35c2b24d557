import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Ports handed out by this process a moment ago, not handed out again while their services start. */
const handedOut = new Map<number, number>();
/** How long a port handed out is not handed out again (also by freePorts' callers for the ports they name to avoid). */
export const FREE_PORT_HANDED_OUT_MS = 120_000;
/** The lowest port freePort picks from when the ephemeral range lies above it. */
const LOWEST_PICKED = 10_000;

/**
 * The first port of the kernel's ephemeral range (Linux: ip_local_port_range), from which every outgoing connection takes
 * its local port; undefined when it cannot be read (another system: the kernel's own choice is used then).
 */
function ephemeralRangeStart(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST_PICKED + 1_000 ? low : undefined;
  } catch {
    return undefined;
  }
}

const EPHEMERAL_START = ephemeralRangeStart();

function listenOnce(port: number): Promise<number | undefined> {
  return new Promise((resolvePort) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolvePort(undefined));
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolvePort(bound));
    });
  });
}

/** Ports handed out by this process lately or named to avoid (another process's), not to be handed out now. */
function pickable(port: number, avoid: ReadonlySet<number>): boolean {
  return !handedOut.has(port) && !avoid.has(port);
}

async function pickPort(avoid: ReadonlySet<number>): Promise<number> {
  const now = Date.now();
  for (const [port, at] of handedOut) if (now - at > FREE_PORT_HANDED_OUT_MS) handedOut.delete(port);
  if (EPHEMERAL_START !== undefined) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const candidate = LOWEST_PICKED + Math.floor(Math.random() * (EPHEMERAL_START - LOWEST_PICKED));
      if (!pickable(candidate, avoid)) continue;
      const port = await listenOnce(candidate);
      if (port !== undefined && pickable(port, avoid)) {
        handedOut.set(port, now);
        return port;
      }
    }
  }
  for (;;) {
    const port = await listenOnce(0);
    if (port === undefined) throw new Error('no free port on 127.0.0.1');
    if (pickable(port, avoid)) {
      handedOut.set(port, now);
      return port;
    }
  }
}

/**
 * A port that was free a moment ago on loopback (another process may still take it before it is bound). Picked below
 * the kernel's ephemeral range where there is room: a port the kernel hands out (listen on 0) is one that any outgoing
 * connection on the machine may take as its local port before the service binds it (EADDRINUSE at start; seen in CI
 * while other tests held many connections), which a port outside the range never is.
 */
export function freePort(): Promise<number> {
  return pickPort(new Set());
}

/**
 * `count` distinct ports as freePort picks them, none of them in `avoid`: for a caller that picks its ports in a
 * short-lived process of its own (the engines harness's freePortsSync) and so must name the ones it handed out lately.
 */
export async function freePorts(count: number, avoid: Iterable<number> = []): Promise<number[]> {
  const avoided = new Set(avoid);
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await pickPort(avoided));
  return ports;
}

/**
 * Environment for running every service on loopback: each its own gRPC port, every peer's address and
 * the files service's internal HTTP port. Used by the all-in-one process and the multi-process test topology.
 */
export async function loopbackTopologyEnv(): Promise<Record<string, string>> {
  const [identity, cards, search, files, filesHttp, notifications] = await Promise.all(Array.from({ length: 6 }, freePort));
  const host = '127.0.0.1';
  return {
    IDENTITY_GRPC_HOST: host,
    IDENTITY_GRPC_PORT: String(identity),
    CARDS_GRPC_HOST: host,
    CARDS_GRPC_PORT: String(cards),
    SEARCH_GRPC_HOST: host,
    SEARCH_GRPC_PORT: String(search),
    FILES_GRPC_HOST: host,
    FILES_GRPC_PORT: String(files),
    FILES_HTTP_HOST: host,
    FILES_HTTP_PORT: String(filesHttp),
    NOTIFICATIONS_GRPC_HOST: host,
    NOTIFICATIONS_GRPC_PORT: String(notifications),
    IDENTITY_SERVICE_ADDR: `${host}:${identity}`,
    CARDS_SERVICE_ADDR: `${host}:${cards}`,
    SEARCH_SERVICE_ADDR: `${host}:${search}`,
    FILES_SERVICE_ADDR: `${host}:${files}`,
    FILES_HTTP_ADDR: `${host}:${filesHttp}`,
    NOTIFICATIONS_SERVICE_ADDR: `${host}:${notifications}`,
  };
}
