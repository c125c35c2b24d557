import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { visibleText } from '../src';

const PACKAGE = resolve(__dirname, '..');

describe('@cards/html-parsing as plain JavaScript', () => {
  it('type-checks (tsc --checkJs, JSDoc types)', () => {
    const result = spawnSync(process.execPath, [join(PACKAGE, '../../node_modules/typescript/bin/tsc'), '-p', join(PACKAGE, 'tsconfig.json')], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('loads in a worker thread, where Node runs no TypeScript loader', async () => {
    const html = `<p>${'<span>'.repeat(1_000)}deep &amp; visible<script>hidden()</script></p>`;
    const worker = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       parentPort.postMessage(require(workerData.entry).visibleText(workerData.html));`,
      { eval: true, workerData: { entry: require.resolve('../src'), html } },
    );
    try {
      const text = await new Promise((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      expect(text).toBe(visibleText(html));
      expect(text).toBe('deep & visible');
    } finally {
      await worker.terminate();
    }
  });
});
