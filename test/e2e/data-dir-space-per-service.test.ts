import { rmSync } from 'node:fs';
import { loopbackTopologyEnv, serviceMetrics, type RunningService } from '@cards/platform';
import { startCards } from '../../services/cards/src/main';
import { startFiles } from '../../services/files/src/main';
import { startIdentity } from '../../services/identity/src/main';
import { startNotifications } from '../../services/notifications/src/main';
import { startSearch } from '../../services/search/src/main';
import { TEST_ENV } from '../support/service';
import { testTempDir } from '../support/cleanup';

// Each service started on its own (its own process in production, its composition root here) on its embedded stores
// watches the free space of its DATA_DIR as the all-in-one does: cards_data_dir_free_bytes on its /metrics and the
// low-space warning (docs/deploy.md, a full disk); it stops at the service's stop. Before, only the all-in-one did.
const SERVICES: Array<[string, (env: Record<string, string | undefined>) => Promise<RunningService>, Record<string, string>]> = [
  ['identity', startIdentity, {}],
  ['cards', startCards, {}],
  ['search', startSearch, {}],
  ['files', startFiles, { FILES_HTTP_HOST: '127.0.0.1', FILES_HTTP_PORT: '0', FILES_INTERNAL_TOKEN: 't'.repeat(32) }],
  ['notifications', startNotifications, {}],
];

const samples = async () => (await serviceMetrics.getSingleMetricAsString('cards_data_dir_free_bytes')).split('\n').filter((line) => line.startsWith('cards_data_dir_free_bytes'));

describe.each(SERVICES)('%s on its embedded stores', (name, start, own) => {
  let dataDir: string;
  beforeEach(() => (dataDir = testTempDir('data-dir-space-')));
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it("has the data dir's free bytes on its /metrics while it runs, and not after its stop", async () => {
    // Engine variables left out (not inherited from a shared-engine run): every store of the service under DATA_DIR.
    const env = { ...TEST_ENV, LOG_LEVEL: 'silent', ...(await loopbackTopologyEnv()), METRICS_PORT: undefined, DATA_DIR: dataDir, ...own };
    expect(await samples()).toEqual([]);
    const running = await start(env);
    try {
      const lines = await samples();
      // Labelled with the service, never the data dir's path (the all-in-one's /metrics is on its public port).
      expect(lines).toEqual([expect.stringMatching(new RegExp(`^cards_data_dir_free_bytes\\{process="${name}"\\} \\d+$`))]);
      expect(lines[0]).not.toContain(dataDir);
      expect(Number(lines[0]!.split(' ')[1])).toBeGreaterThan(0);
    } finally {
      await running.stop();
    }
    expect(await samples()).toEqual([]);
  });
});
