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
        this.sockets.add(socket);
        socket.once('close', () => this.sockets.delete(socket));
        return socket;
      },
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
