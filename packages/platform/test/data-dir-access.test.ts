import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, keepDataDirPrivate } from '../src';
import { testTempDir } from '../../../test/support/cleanup';

const modeOf = (path: string) => statSync(path).mode & 0o777;

function capturingLogger(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return { logger: createLogger('cards', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) }), lines };
}

/** A chmod failing as one on a directory the process does not own (the tests run as root, whose chmod never fails). */
function chmodRefusedAsNotOwner(dataDir: string): () => never {
  return () => {
    throw Object.assign(new Error(`EPERM: operation not permitted, chmod '${dataDir}'`), { code: 'EPERM' });
  };
}

// keepDataDirPrivate masks 077 for the rest of the process: given back after this file.
let umaskBefore: number;
beforeAll(() => {
  umaskBefore = process.umask(0o022);
  process.umask(umaskBefore);
});
afterAll(() => process.umask(umaskBefore));

describe('keepDataDirPrivate', () => {
  it('makes a missing data dir 0700, and what the process makes afterwards 0700 / 0600', () => {
    const { logger, lines } = capturingLogger();
    const dataDir = join(testTempDir('cards-private-'), 'data');
    keepDataDirPrivate({ env: {}, dataDir, engineVariables: ['MONGO_URL', 'KAFKA_BROKERS'], logger });
    expect(modeOf(dataDir)).toBe(0o700);
    mkdirSync(join(dataDir, 'mail'));
    writeFileSync(join(dataDir, 'mail', 'reset.eml'), 'a reset link');
    expect(modeOf(join(dataDir, 'mail'))).toBe(0o700);
    expect(modeOf(join(dataDir, 'mail', 'reset.eml'))).toBe(0o600);
    expect(lines).toEqual([]);
  });

  it('makes a data dir left 0755 0700, logging it once per process', () => {
    const { logger, lines } = capturingLogger();
    const dataDir = testTempDir('cards-private-old-');
    chmodSync(dataDir, 0o755);
    keepDataDirPrivate({ env: {}, dataDir, engineVariables: [], logger });
    keepDataDirPrivate({ env: {}, dataDir, engineVariables: [], logger });
    expect(modeOf(dataDir)).toBe(0o700);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, dataDir, was: '0755', now: '0700' });
    expect(lines[0]!.msg).toMatch(/made the data dir private/);
  });

  it('warns, and starts, when the data dir is not its own to chmod (a Kubernetes volume root with fsGroup)', () => {
    const { logger, lines } = capturingLogger();
    const dataDir = testTempDir('cards-private-volume-');
    chmodSync(dataDir, 0o2775);
    const notOwner = chmodRefusedAsNotOwner(dataDir);
    expect(() => keepDataDirPrivate({ env: {}, dataDir, engineVariables: [], logger, chmod: notOwner })).not.toThrow();
    expect(modeOf(dataDir)).toBe(0o775);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, dataDir, mode: '0775', code: 'EPERM' });
    expect(lines[0]!.msg).toMatch(/cannot make it private \(it does not own the directory\).*Kubernetes/);
  });

  it('says so at info, not as a warning, in a Kubernetes pod (expected at every start there)', () => {
    const { logger, lines } = capturingLogger();
    const dataDir = testTempDir('cards-private-pod-');
    chmodSync(dataDir, 0o2775);
    const notOwner = chmodRefusedAsNotOwner(dataDir);
    keepDataDirPrivate({ env: { KUBERNETES_SERVICE_HOST: '10.0.0.1' }, dataDir, engineVariables: [], logger, chmod: notOwner });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, dataDir, code: 'EPERM' });
  });

  it('makes no data dir for a service whose every store is on its engine', () => {
    const { logger, lines } = capturingLogger();
    const dataDir = join(testTempDir('cards-private-engines-'), 'data');
    keepDataDirPrivate({ env: { MONGO_URL: 'mongodb://mongo', KAFKA_BROKERS: 'kafka:9092' }, dataDir, engineVariables: ['MONGO_URL', 'KAFKA_BROKERS'], logger });
    expect(existsSync(dataDir)).toBe(false);
    expect(lines).toEqual([]);
  });
});
