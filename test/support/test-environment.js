// The jest environment of every suite (jest.config.js): node's, plus what test/support/cleanup.ts registered done
// when the file ends — after its last afterAll, whether its tests passed, failed or timed out. Child processes still
// running are killed and waited for (so nothing writes into a directory being removed), then the directories are
// removed. A child left running is named on stderr: the file's own afterAll should have stopped it.
// Under scripts/run-jest.mjs it also records which file this process is running from when (running-<pid>.json in
// RUN_JEST_RESULTS), so that the runner can kill and name a file that hangs: a busy loop no test timeout ends.
const { renameSync, rmSync, writeFileSync } = require('node:fs');
const { dirname, join } = require('node:path');

// jest-environment-node is jest's own (a dependency of jest-config), not one of the workspace's.
const jestConfig = dirname(require.resolve('jest-config', { paths: [require.resolve('jest')] }));
const { TestEnvironment: NodeEnvironment } = require(require.resolve('jest-environment-node', { paths: [jestConfig] }));

const REGISTRY = '__cardsTestCleanup';
const KILL_WAIT_MS = 10_000;

class CardsTestEnvironment extends NodeEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
    this.global[REGISTRY] = { dirs: [], children: [] };
    // A service started in the worker's own process masks 077 from then on (keepDataDirPrivate): given back at the end,
    // so the next file in this worker makes its files as before.
    this.umask = process.umask(0o022);
    process.umask(this.umask);
    // The summary reporter removed the variable from a jest that a test started: only the runner's jest records.
    const results = process.env.RUN_JEST_RESULTS;
    if (results) {
      this.runningRecord = join(results, `running-${process.pid}.json`);
      // Renamed into place: the runner never reads half a record.
      writeFileSync(`${this.runningRecord}.new`, JSON.stringify({ testPath: this.testPath, pid: process.pid, startedAt: Date.now() }));
      renameSync(`${this.runningRecord}.new`, this.runningRecord);
    }
  }

  async teardown() {
    process.umask(this.umask);
    const registry = this.global[REGISTRY] ?? { dirs: [], children: [] };
    const running = registry.children.filter((child) => child.exitCode === null && child.signalCode === null);
    for (const child of running) {
      process.stderr.write(`[cleanup] ${this.testPath}: process ${child.pid} (${child.spawnargs.join(' ').slice(0, 200)}) was still running when the file ended: killed\n`);
      child.kill('SIGKILL');
    }
    await Promise.all(
      running.map(
        (child) =>
          new Promise((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(resolve, KILL_WAIT_MS);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
    for (const dir of registry.dirs) {
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
      } catch (err) {
        process.stderr.write(`[cleanup] ${this.testPath}: could not remove ${dir}: ${err.message}\n`);
      }
    }
    await super.teardown();
    if (this.runningRecord) rmSync(this.runningRecord, { force: true });
  }
}
module.exports = CardsTestEnvironment;
