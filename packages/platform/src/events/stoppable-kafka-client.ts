import { connect, isIP, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { Kafka, type KafkaConfig } from 'kafkajs';

/** What requests under way on a connection cut by stop() fail with. */
export const CUT_BY_CLOSE = 'connection cut: the event bus is closing';

/** What work abandoned because the bus closed rejects with. */
export function busClosedError(cause?: unknown): Error {
  return new Error('event bus is closed', cause === undefined ? undefined : { cause });
}

/** Sockets kafkajs opens keep alive as its own factory sets them. */
const KEEP_ALIVE_DELAY_MS = 60_000;

/**
 * Whether a socket error is a TLS certificate check that failed (not trusted, expired, not naming the host): Node's
 * verification codes (SELF_SIGNED_CERT_IN_CHAIN, UNABLE_TO_VERIFY_LEAF_SIGNATURE, CERT_HAS_EXPIRED,
 * ERR_TLS_CERT_ALTNAME_INVALID, ...). Retrying does not help; kafkajs retries it as any connection error.
 */
export function isCertificateError(err: unknown): err is Error & { code: string } {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE/.test(code);
}

/** What the connections a client opened while watched showed, for an error saying why the brokers did not answer. */
export interface ConnectionsSeen {
  /** A TCP connection was made: something listens at the address. */
  connected: boolean;
  /** A broker sent bytes back (a Kafka answer) on a connection that was not TLS, or after the TLS handshake. */
  answered: boolean;
  /** A connection without TLS got a TLS record back (an alert): the listener speaks TLS. */
  answeredInTls: boolean;
  /** A TLS connection that failed or closed before its handshake ended, with the error when there was one. */
  handshakeFailure?: Error;
}

/** Watches the connections a client opens from now on; end() stops. */
export interface ConnectionWatch {
  /** Rejects with the socket's error at the first TLS certificate check that fails on a watched connection. */
  readonly certificateRefused: Promise<never>;
  seen(): ConnectionsSeen;
  end(): void;
}

interface Connectable {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
}

/**
 * A kafkajs client that a closing event bus can stop from waiting on brokers. kafkajs has no way to abort its retries:
 * a connect to a broker that is down retries for seconds, and disconnect() waits for every request in flight, a
 * JoinGroup the broker holds until a rebalance ends included. After stop(), connects and work raced against it reject
 * at once, kafkajs' connect retries give up at their next attempt (their broker list is then empty, which kafkajs does
 * not retry), a connect that succeeds anyway is undone, and cutConnections() ends the open connections, failing what
 * is in flight on them.
 */
export class StoppableKafkaClient {
  readonly kafka: Kafka;
  private stopped = false;
  private readonly sockets = new Set<Socket>();
  private readonly watches = new Set<{ seen: ConnectionsSeen; refuse(err: Error): void }>();
  private readonly whenStopped: Promise<never>;
  private rejectWhenStopped: (err: Error) => void = () => undefined;

  constructor(config: Omit<KafkaConfig, 'brokers' | 'socketFactory'> & { brokers: string[] }) {
    this.whenStopped = new Promise<never>((_, reject) => (this.rejectWhenStopped = reject));
    this.whenStopped.catch(() => undefined);
    this.kafka = new Kafka({
      ...config,
      brokers: () => (this.stopped ? [] : config.brokers),
      // kafkajs' own factory, plus keep-alive and the record of open sockets: TLS when the config has ssl (KAFKA_SSL).
      socketFactory: ({ host, port, ssl, onConnect }) => {
        const socket = ssl ? connectTls({ host, port, ...(isIP(host) ? {} : { servername: host }), ...ssl }, onConnect) : connect({ host, port }, onConnect);
        socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
        if (this.watches.size > 0) this.watchSocket(socket, Boolean(ssl));
        this.sockets.add(socket);
        socket.once('close', () => this.sockets.delete(socket));
        return socket;
      },
    });
  }

  /**
   * Records what the connections opened from now on show (TCP connected, answered, TLS handshake failed) and rejects
   * `certificateRefused` at a failed certificate check, so that ready() can say why instead of waiting for kafkajs'
   * retries and reporting a timeout.
   */
  watchConnections(): ConnectionWatch {
    let refuse: (err: Error) => void = () => undefined;
    const certificateRefused = new Promise<never>((_, reject) => (refuse = reject));
    certificateRefused.catch(() => undefined);
    const watch = { seen: { connected: false, answered: false, answeredInTls: false } as ConnectionsSeen, refuse: (err: Error) => refuse(err) };
    this.watches.add(watch);
    return { certificateRefused, seen: () => ({ ...watch.seen }), end: () => void this.watches.delete(watch) };
  }

  private watchSocket(socket: Socket, tls: boolean): void {
    const watches = [...this.watches];
    let secured = !tls;
    let connected = false;
    socket.once('connect', () => {
      connected = true;
      watches.forEach((w) => (w.seen.connected = true));
    });
    if (tls) socket.once('secureConnect', () => (secured = true));
    let first = true;
    socket.on('data', (chunk: Buffer) => {
      // A Kafka response starts with its 4-byte length; a TLS record with its type (alert 21, handshake 22) and version 3.x.
      const tlsRecord = first && !tls && (chunk[0] === 0x15 || chunk[0] === 0x16) && chunk[1] === 0x03;
      first = false;
      if (tlsRecord) watches.forEach((w) => (w.seen.answeredInTls = true));
      else if (secured) watches.forEach((w) => (w.seen.answered = true));
    });
    socket.once('error', (err) => {
      if (isCertificateError(err)) watches.forEach((w) => w.refuse(err));
      // Only after the TCP connection: a broker that is down (ECONNREFUSED) is unreachable, not a failed handshake.
      else if (connected && !secured) watches.forEach((w) => (w.seen.handshakeFailure = err));
    });
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.rejectWhenStopped(busClosedError());
  }

  /** Ends every connection the client has open; kafkajs fails the requests under way on them. */
  cutConnections(): void {
    for (const socket of this.sockets) socket.destroy(new Error(CUT_BY_CLOSE));
  }

  /** `work`, or a rejection with busClosedError() as soon as stop() is called, whichever comes first. */
  untilStopped<T>(work: Promise<T>): Promise<T> {
    if (this.stopped) {
      work.catch(() => undefined);
      return Promise.reject(busClosedError());
    }
    return Promise.race([work, this.whenStopped]);
  }

  /** Connects `client` (an admin, producer or consumer of this client) unless stopped first; one that connects after stop() is disconnected. */
  connect(client: Connectable): Promise<void> {
    if (this.stopped) return Promise.reject(busClosedError());
    const connecting = client.connect();
    connecting.then(
      () => {
        if (this.stopped) client.disconnect().catch(() => undefined);
      },
      () => undefined,
    );
    return this.untilStopped(connecting);
  }
}
