import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { awaitEngineListening, EngineUnavailableError, freePortsSync, prepareJavaEngine, spawnJava } from './engine-support';
import { testTempDir } from '../support/cleanup';

export interface MongoEngine {
  /** mongodb:// URL for MONGO_URL. */
  url: string;
  stop(): Promise<void>;
}

export const MONGO_JAVA_SERVER_VERSION = '1.47.0';

/** de.bwaldvogel:mongo-java-server (in-memory backend) from Maven Central, cached under test/engines/cache/mongo. */
export function prepareMongo(): string {
  return prepareJavaEngine({ name: 'mongo', sourceDir: 'mongo' });
}

/**
 * Starts a MongoDB wire-protocol server (mongo-java-server, in memory) on a free loopback port,
 * blocking until it listens. It speaks the protocol but is not MongoDB: no multi-document
 * transactions, no replica set (see docs/engines.md). Throws EngineUnavailableError when it cannot run here.
 */
export function startMongoSync(options: { port?: number } = {}): MongoEngine {
  const classpath = prepareMongo();
  const dir = testTempDir('cards-mongo-');
  // A given port restarts a server where clients already point (tests of engine loss); its data starts empty.
  const port = options.port ?? (freePortsSync(1)[0] as number);
  const engine = spawnJava(classpath, 'MongoEngine', [String(port)], { logFile: join(dir, 'mongo.log'), heap: '256m' });
  awaitEngineListening(engine, 'mongo-java-server', port, 120_000, dir);
  return {
    url: `mongodb://127.0.0.1:${port}`,
    async stop() {
      await engine.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function startMongo(options: { port?: number } = {}): Promise<MongoEngine> {
  return startMongoSync(options);
}
