import { chmodSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { awaitEngineListening, freePortsSync, prepareJavaEngine, spawnJava } from './engine-support';
import { testTempDir } from '../support/cleanup';

export interface ElasticsearchEngine {
  /** http:// URL for ELASTICSEARCH_URL. */
  url: string;
  stop(): Promise<void>;
  /** Stops the node but keeps its home (its indices survive), for tests of engine loss. */
  halt(): Promise<void>;
  /** Starts the halted node again on the same ports and home, blocking until its HTTP port answers. */
  resume(): void;
}

export const ELASTICSEARCH_VERSION = '8.19.21';

/** Elasticsearch server + netty4 + test framework jars from Maven Central, cached under test/engines/cache/elasticsearch. */
export function prepareElasticsearch(): string {
  return prepareJavaEngine({ name: 'elasticsearch', sourceDir: 'elasticsearch' });
}

/**
 * Starts a real single-node Elasticsearch (the server code, booted by the test framework's MockNode)
 * on free loopback ports, blocking until its HTTP port answers. Core mappings and queries work,
 * dense_vector kNN included; analysis-common (ngram, language analyzers), painless and `GET /` do
 * not, because those modules are not published to Maven Central (docs/engines.md).
 */
export function startElasticsearchSync(): ElasticsearchEngine {
  const classpath = prepareElasticsearch();
  const home = testTempDir('cards-es-');
  // Run as nobody when we are root: the node must be able to write its home.
  chmodSync(home, 0o777);
  const [http, transport] = freePortsSync(2) as [number, number];
  const spawnNode = () => {
    const started = spawnJava(classpath, 'org.junit.runner.JUnitCore', ['ElasticsearchEngine'], {
      logFile: join(home, 'elasticsearch.log'),
      heap: '512m',
      jvmArgs: [`-Xms512m`, `-Des.engine.home=${home}`, `-Des.engine.http=${http}`, `-Des.engine.transport=${transport}`, '-Dtests.security.manager=false'],
      asUnprivilegedUser: true,
    });
    awaitEngineListening(started, 'elasticsearch', http, 240_000, home);
    return started;
  };
  let engine = spawnNode();
  return {
    url: `http://127.0.0.1:${http}`,
    async stop() {
      await engine.stop();
      rmSync(home, { recursive: true, force: true });
    },
    halt: () => engine.stop(),
    resume() {
      engine = spawnNode();
    },
  };
}

export async function startElasticsearch(): Promise<ElasticsearchEngine> {
  return startElasticsearchSync();
}
