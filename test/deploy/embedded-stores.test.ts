// EMBEDDED_STORES=refuse (set by the Helm chart on pods without a volume): a service whose engine URL is empty, e.g. an
// existingSecret holding MONGO_URL="", stops at start naming it instead of keeping its data on the pod's emptyDir.
import { readdirSync, rmSync } from 'node:fs';
import { startCards } from '../../services/cards/src/main';
import { startFiles } from '../../services/files/src/main';
import { startIdentity } from '../../services/identity/src/main';
import { startNotifications } from '../../services/notifications/src/main';
import { startSearch } from '../../services/search/src/main';
import { testTempDir } from '../support/cleanup';

type Start = (env: Record<string, string | undefined>) => Promise<{ stop(): Promise<void> }>;

/** Each service, its engine variables as the chart sets them (from the Secret or values), and the start function. */
const SERVICES: Array<[string, Start, Record<string, string>]> = [
  ['identity', startIdentity, { MONGO_URL: 'mongodb://mongo:27017', JWT_SECRET: 'j'.repeat(48), SMTP_URL: 'smtp://mail:587' }],
  ['cards', startCards, { MONGO_URL: 'mongodb://mongo:27017', KAFKA_BROKERS: 'kafka:9092' }],
  ['search', startSearch, { MONGO_URL: 'mongodb://mongo:27017', ELASTICSEARCH_URL: 'http://es:9200', KAFKA_BROKERS: 'kafka:9092' }],
  ['files', startFiles, { MONGO_URL: 'mongodb://mongo:27017', S3_ENDPOINT: 'http://s3:9000', S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b', KAFKA_BROKERS: 'kafka:9092', FILES_INTERNAL_TOKEN: 't'.repeat(32) }],
  ['notifications', startNotifications, { MONGO_URL: 'mongodb://mongo:27017', KAFKA_BROKERS: 'kafka:9092' }],
];

describe('EMBEDDED_STORES=refuse', () => {
  let dataDir: string;
  beforeEach(() => (dataDir = testTempDir('embedded-stores-')));
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  describe.each(SERVICES)('%s', (_name, start, engines) => {
    it.each(Object.keys(engines).filter((name) => !/^S3_(ACCESS|SECRET)_KEY$|_TOKEN$/.test(name)))('stops at start naming %s when it is empty, storing nothing', async (variable) => {
      const env = { ...engines, [variable]: '', EMBEDDED_STORES: 'refuse', DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
      await expect(start(env)).rejects.toThrow(new RegExp(`${variable}: required with EMBEDDED_STORES=refuse`));
      expect(readdirSync(dataDir)).toEqual([]);
    });
  });
});
