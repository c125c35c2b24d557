import { rmSync } from 'node:fs';
import { createLogger, ConfigError, dataDirFreeWarningBytesOf, serviceMetrics, startFailureLog, watchDataDirSpace, watchServiceDataDirSpace } from '../src';
import { testTempDir } from '../../../test/support/cleanup';

type Line = { level: number; msg: string; [field: string]: unknown };
const MB = 1024 * 1024;

describe("the data dir's free space", () => {
  it('DATA_DIR_FREE_WARNING_MB: 100 MB unset, 0 turns the warning off, anything else not a number of megabytes is a ConfigError', () => {
    expect(dataDirFreeWarningBytesOf({})).toBe(100 * MB);
    expect(dataDirFreeWarningBytesOf({ DATA_DIR_FREE_WARNING_MB: '0' })).toBe(0);
    expect(dataDirFreeWarningBytesOf({ DATA_DIR_FREE_WARNING_MB: '2.5' })).toBe(2.5 * MB);
    for (const bad of ['-1', 'lots', '10MB']) expect(() => dataDirFreeWarningBytesOf({ DATA_DIR_FREE_WARNING_MB: bad })).toThrow(ConfigError);
    // Past a billion MB: 1e308 was taken as a floor of Infinity bytes, warning of low space on any disk.
    for (const bad of ['1e308', '1000000001']) expect(() => dataDirFreeWarningBytesOf({ DATA_DIR_FREE_WARNING_MB: bad })).toThrow(/DATA_DIR_FREE_WARNING_MB must be a number of megabytes from 0 \(the warning off\) to 1000000000/);
    expect(dataDirFreeWarningBytesOf({ DATA_DIR_FREE_WARNING_MB: '1000000000' })).toBe(1_000_000_000 * MB);
  });

  it('is a gauge on /metrics, and below the floor one warning, not one per check', async () => {
    const lines: Line[] = [];
    const logger = createLogger('all-in-one', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) });
    let free = 500 * MB;
    let clock = 0;
    const watch = watchDataDirSpace({ path: '/data', role: 'all-in-one', logger, floorBytes: 100 * MB, freeBytes: async () => free, now: () => clock, intervalMs: 3_600_000 });
    try {
      expect(await serviceMetrics.getSingleMetricAsString('cards_data_dir_free_bytes')).toMatch(new RegExp(`^cards_data_dir_free_bytes{process="all-in-one"} ${500 * MB}$`, 'm'));
      // Never the data dir's path: the all-in-one serves /metrics on its public port.
      expect(await serviceMetrics.metrics()).not.toContain('/data');
      await watch.check();
      expect(lines.filter((l) => l.level >= 40)).toEqual([]);
      free = 40 * MB;
      for (let i = 0; i < 5; i++, clock += 60_000) await watch.check();
      expect(await serviceMetrics.getSingleMetricAsString('cards_data_dir_free_bytes')).toMatch(new RegExp(`^cards_data_dir_free_bytes{process="all-in-one"} ${40 * MB}$`, 'm'));
      expect(lines.filter((l) => l.level >= 40)).toEqual([
        expect.objectContaining({ level: 40, msg: expect.stringMatching(/^the data dir's file system is almost full/), dataDir: '/data', freeBytes: 40 * MB, floorBytes: 100 * MB }),
      ]);
    } finally {
      watch.stop();
    }
  });

  it('reads the real file system (fs.statfs)', async () => {
    const dir = testTempDir('data-dir-space-');
    const watch = watchDataDirSpace({ path: dir, role: 'all-in-one', logger: createLogger('all-in-one', 'silent'), floorBytes: 0 });
    try {
      expect(await watch.check()).toBeGreaterThan(0);
    } finally {
      watch.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a start refused by a full disk says so and names the data dir, not a raw SqliteError', () => {
    const full = Object.assign(new Error('database or disk is full'), { name: 'SqliteError', code: 'SQLITE_FULL' });
    expect(startFailureLog(full, { dataDir: '/srv/cards/data' })).toEqual({
      fields: { dataDir: '/srv/cards/data', error: 'database or disk is full', code: 'SQLITE_FULL' },
      msg: expect.stringMatching(/^the data dir's filesystem is full \(\/srv\/cards\/data\)/),
    });
    const other = new Error('boom');
    expect(startFailureLog(other, { dataDir: '/srv/cards/data', otherwise: 'cards failed to start' })).toEqual({ fields: { err: other }, msg: 'cards failed to start' });
  });
});

describe("the data dir's free space, watched for a service", () => {
  const sample = async () => (await serviceMetrics.getSingleMetricAsString('cards_data_dir_free_bytes')).split('\n').filter((line) => line.startsWith('cards_data_dir_free_bytes'));

  it('once per process and data dir however many services call it (the all-in-one), until the last one stops', async () => {
    const logger = createLogger('all-in-one', 'silent');
    const freeBytes = async () => 500 * MB;
    const services = ['all-in-one', 'identity', 'cards'].map((role) => watchServiceDataDirSpace({ role, env: {}, dataDir: '/data', engineVariables: ['MONGO_URL'], logger, freeBytes }));
    try {
      // One sample of the free bytes, not three added up.
      expect(await sample()).toEqual([`cards_data_dir_free_bytes{process="all-in-one"} ${500 * MB}`]);
      services[0]!.stop();
      services[0]!.stop();
      services[1]!.stop();
      expect(await sample()).toEqual([`cards_data_dir_free_bytes{process="all-in-one"} ${500 * MB}`]);
    } finally {
      services[2]!.stop();
    }
    expect(await sample()).toEqual([]);
  });

  it('not at all for a service whose engine variables are all set (nothing of it under DATA_DIR); a bad DATA_DIR_FREE_WARNING_MB is a ConfigError', async () => {
    const logger = createLogger('cards', 'silent');
    const watch = watchServiceDataDirSpace({ role: 'cards', env: { MONGO_URL: 'mongodb://mongo', KAFKA_BROKERS: 'kafka:9092' }, dataDir: '/data', engineVariables: ['MONGO_URL', 'KAFKA_BROKERS'], logger, freeBytes: async () => 1 });
    expect(await sample()).toEqual([]);
    watch.stop();
    expect(() => watchServiceDataDirSpace({ role: 'cards', env: { DATA_DIR_FREE_WARNING_MB: 'lots' }, dataDir: '/data', engineVariables: ['MONGO_URL'], logger })).toThrow(ConfigError);
  });
});
