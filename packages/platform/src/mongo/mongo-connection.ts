import { MongoClient, type ClientSession, type Db, type MongoServerError } from 'mongodb';
import type { Logger } from 'pino';
import { ConfigError } from '../config';

export interface MongoConnectionOptions {
  /** MONGO_URL, e.g. mongodb://user:pass@host:27017/?replicaSet=rs0 */
  url: string;
  /** Database of this service: each service owns its own, so every service can share one MONGO_URL. */
  database: string;
  logger: Logger;
  /** How long to look for a server before failing; start-up fails fast instead of hanging. */
  serverSelectionTimeoutMs?: number;
  /**
   * Prefix of the database name (falls back to the MONGO_DATABASE_PREFIX variable), so several
   * deployments or test systems can share one server: `<prefix>_<database>`.
   */
  databasePrefix?: string;
}

/** One service's MongoDB connection: its database, whether it can run transactions, readiness and close. */
export interface MongoConnection {
  client: MongoClient;
  db: Db;
  /**
   * True on a replica set or sharded cluster (multi-document transactions work); false on a
   * standalone server or a protocol-compatible test server such as mongo-java-server.
   */
  supportsTransactions: boolean;
  /** Pings the server; rejects with a clear message when it is gone (for readiness probes). */
  ready(): Promise<void>;
  close(): Promise<void>;
  /**
   * For shutdown, before waiting for background work (outbox relays, job runners): while no server answers (MongoDB
   * gone) closes the client, so that work's operations fail at once instead of each waiting out server selection
   * (what failed stays stored for the next start), and answers true; while one answers, does nothing and answers false.
   */
  closeIfUnreachable(): Promise<boolean>;
}

/** The longest service database name (`<prefix>_notifications`); with the prefix it must stay under 64 bytes. */
const LONGEST_DATABASE = 'notifications';
/** MongoDB refuses a database name of 64 bytes or more: `<prefix>_notifications` must fit. */
export const MAX_MONGO_DATABASE_PREFIX_BYTES = 63 - 1 - LONGEST_DATABASE.length;

/**
 * MONGO_DATABASE_PREFIX as written, checked at start: empty or only spaces is none (as KAFKA_NAMESPACE), spaces around
 * are dropped, and a prefix MongoDB would refuse in a database name (/ \ . " $ * < > : | ? a space or NUL, or making
 * `<prefix>_notifications` 64 bytes or more) stops the start naming the variable and the rule. Before, 'team.a' was
 * refused by the driver naming no variable ('Database names cannot contain the character .'), and ' ', 'my app' or 'a:b'
 * went to the server as database names MongoDB's rules refuse (Windows servers refuse * < > : | ? too).
 */
export function mongoDatabasePrefix(value: string | undefined): string | undefined {
  const prefix = value?.trim();
  if (!prefix) return undefined;
  if (/[/\\. "$*<>:|?\0\s]/.test(prefix) || Buffer.byteLength(prefix) > MAX_MONGO_DATABASE_PREFIX_BYTES) {
    throw new ConfigError([
      `MONGO_DATABASE_PREFIX: must be at most ${MAX_MONGO_DATABASE_PREFIX_BYTES} bytes without / \\ . " $ * < > : | ? or spaces (MongoDB database names, <prefix>_notifications under 64 bytes), got "${value}"`,
    ]);
  }
  return prefix;
}

/** The URL without its password, for messages and logs. */
export function redactMongoUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

/**
 * Connects and pings, failing within serverSelectionTimeoutMs with a message naming MONGO_URL
 * (never its password) when the server cannot be reached. Logs the database and whether
 * transactions are available, since the adapters' atomicity depends on it.
 */
export async function connectMongo(options: MongoConnectionOptions): Promise<MongoConnection> {
  const where = redactMongoUrl(options.url);
  const prefix = mongoDatabasePrefix(options.databasePrefix ?? process.env.MONGO_DATABASE_PREFIX);
  let client: MongoClient;
  try {
    client = new MongoClient(options.url, {
      serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? 5000,
      connectTimeoutMS: options.serverSelectionTimeoutMs ?? 5000,
      appName: options.database,
    });
  } catch (err) {
    throw new Error(`MONGO_URL is not a valid MongoDB connection string (${where}): ${(err as Error).message}`);
  }
  // The driver's own view: a server counts once it answered a check or an operation, and no longer after a network error.
  let anyServerAnswers = true;
  client.on('topologyDescriptionChanged', (event) => {
    anyServerAnswers = event.newDescription.hasKnownServers;
  });
  const database = prefix ? `${prefix}_${options.database}` : options.database;
  const db = client.db(database);
  let hello: Record<string, unknown>;
  try {
    await client.connect();
    hello = await db.admin().command({ hello: 1 }).catch(() => db.admin().command({ isMaster: 1 }));
  } catch (err) {
    await client.close().catch(() => undefined);
    throw new Error(`MongoDB at ${where} is unreachable (MONGO_URL): ${(err as Error).message}`);
  }
  const supportsTransactions = typeof hello.setName === 'string' || hello.msg === 'isdbgrid';
  options.logger.info({ url: where, database, supportsTransactions }, 'MONGO_URL set: using MongoDB');
  if (!supportsTransactions) {
    options.logger.warn('MongoDB is not a replica set: multi-document changes use compensating single-document steps instead of transactions');
  }
  return {
    client,
    db,
    supportsTransactions,
    async ready() {
      try {
        await db.command({ ping: 1 });
      } catch (err) {
        throw new Error(`MongoDB at ${where} is unreachable (MONGO_URL): ${(err as Error).message}`);
      }
    },
    close: () => client.close(),
    async closeIfUnreachable() {
      if (anyServerAnswers) return false;
      await client.close();
      return true;
    },
  };
}

/**
 * Runs `work` in a multi-document transaction when the server supports them; otherwise runs it
 * without a session, so `work` must then be written as ordered, compensating single-document steps.
 */
export async function withOptionalTransaction<T>(connection: Pick<MongoConnection, 'client' | 'supportsTransactions'>, work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
  if (!connection.supportsTransactions) return work(undefined);
  const session = connection.client.startSession();
  try {
    let result: T | undefined;
    await session.withTransaction(async () => {
      result = await work(session);
    });
    return result as T;
  } finally {
    await session.endSession();
  }
}

/** True for a unique-index violation, optionally on the index covering `field`. */
export function isDuplicateKeyError(err: unknown, field?: string): boolean {
  const e = err as (Partial<MongoServerError> & { keyPattern?: Record<string, unknown> }) | null;
  if (!e || e.code !== 11000) return false;
  if (!field) return true;
  if (e.keyPattern) return field in e.keyPattern;
  return typeof e.message === 'string' && e.message.includes(field);
}
