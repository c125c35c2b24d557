import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helm';

export const COMPONENTS = ['gateway', 'identity', 'cards', 'search', 'files', 'notifications'] as const;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Variables a service reads: the keys of its zod config schemas (any *config.ts) and any direct process.env.X. */
export function variablesReadBy(component: string): Set<string> {
  const names = new Set<string>();
  for (const file of sourceFiles(join(ROOT, 'services', component, 'src'))) {
    const text = readFileSync(file, 'utf8');
    if (/config\.ts$/.test(file)) for (const m of text.matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm)) names.add(m[1]!);
    for (const m of text.matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g)) names.add(m[1]!);
  }
  return names;
}

/** The shared runtime's sources: variables it reads itself (LOG_LEVEL, KAFKA_PARTITIONS, ...). */
export function platformSource(): string {
  return sourceFiles(join(ROOT, 'packages/platform/src'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
}

/** Release-wide settings every container may get, and values only the runtime (Node, Kubernetes) reads. */
export const EVERYWHERE = new Set(['NODE_ENV', 'LOG_LEVEL', 'DATA_DIR', 'NODE_OPTIONS', 'MONGODB_ROOT_PASSWORD']);

/** Variables that wire a service to its peers, engines and credentials: a service that reads one must be given it. */
export const WIRING =
  /^(PUBLIC_URL|MONGO_URL|ELASTICSEARCH_URL|KAFKA_BROKERS|S3_ENDPOINT|S3_ACCESS_KEY|S3_SECRET_KEY|SMTP_URL|JWT_SECRET|[A-Z]+_SERVICE_ADDR|[A-Z]+_HTTP_ADDR|[A-Z]+_INTERNAL_TOKEN|[A-Z]+_GRPC_PORT|[A-Z]+_GRPC_HOST|[A-Z]+_HTTP_PORT|[A-Z]+_HTTP_HOST)$/;

/**
 * Mismatches between the variables a deployment sets on each component and those the component reads.
 * `optional` names may be left unset (generated or optional settings).
 */
export function wiringProblems(setOn: (component: string) => Set<string>, where: string, optional: Set<string> = new Set()): string[] {
  const platform = platformSource();
  const problems: string[] = [];
  for (const component of COMPONENTS) {
    const reads = variablesReadBy(component);
    const set = setOn(component);
    for (const name of set) {
      if (!EVERYWHERE.has(name) && !reads.has(name) && !platform.includes(name)) problems.push(`${where} sets ${name} on ${component}, which services/${component} does not read`);
    }
    for (const name of reads) {
      if (WIRING.test(name) && !set.has(name) && !optional.has(name)) problems.push(`services/${component} reads ${name} but ${where} does not set it`);
    }
  }
  return problems;
}
