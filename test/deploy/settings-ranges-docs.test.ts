// README.md's settings table and docs/deploy.md's tables against the config modules themselves: each numeric
// setting's default as written is the one its schema gives, and each upper bound the schema enforces is written in
// the setting's row (docs/deploy.md), so a bound added or changed in code cannot go unsaid (the README's table lacked
// the ranges added with 0d92e89 while deploy.md had them).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { grpcServerConfigSchema, MAX_TIMER_MS, readinessConfigSchema } from '@cards/platform';
import { gatewayConfigSchema } from '../../services/gateway/src/config';
import { identityConfigSchema } from '../../services/identity/src/config';
import { cardsConfigSchema } from '../../services/cards/src/config';
import { searchConfigSchema } from '../../services/search/src/config';
import { filesConfigSchema } from '../../services/files/src/config';
import { notificationsConfigSchema } from '../../services/notifications/src/config';
import { ROOT } from './helm';

// What the test asks of a config schema; zod itself is the services' dependency, not the root's (tsc finds no 'zod' here).
interface ZodTypeAny {
  safeParse(value: unknown): { success: boolean; data?: any };
}

const SCHEMAS: Record<string, ZodTypeAny> = {
  gateway: gatewayConfigSchema,
  identity: identityConfigSchema,
  cards: cardsConfigSchema,
  search: searchConfigSchema,
  files: filesConfigSchema,
  notifications: notificationsConfigSchema,
  'shared runtime (`@cards/platform`)': grpcServerConfigSchema.merge(readinessConfigSchema),
};
// What every schema needs besides the variable under test to parse at all.
const BASE: Record<string, string> = { FILES_INTERNAL_TOKEN: 'a-token-of-twenty-chars' };

/** The object schema under refinements and pipes, whose shape names the variables. */
function shapeOf(schema: ZodTypeAny): Record<string, ZodTypeAny> {
  let s: any = schema;
  while (!s.shape && s._def) s = s._def.schema ?? s._def.innerType ?? s._def.in;
  return s.shape;
}

interface NumericSetting {
  name: string;
  default: number;
  /** The largest value the whole schema accepts (its refinements included); undefined when there is none below 2^53. */
  max: number | undefined;
}

/** Every numeric setting of `schema` with its default and, found by bisection, its largest accepted value. */
function numericSettings(schema: ZodTypeAny): NumericSetting[] {
  const accepts = (name: string, n: number) => schema.safeParse({ ...BASE, [name]: String(n) }).success;
  return Object.entries(shapeOf(schema)).flatMap(([name, field]): NumericSetting[] => {
    const parsed = field.safeParse(undefined);
    // Ports are covered by the general sentence; settings without a numeric default (METRICS_PORT) have their row.
    if (!parsed.success || typeof parsed.data !== 'number' || /PORT$/.test(name)) return [];
    if (accepts(name, Number.MAX_SAFE_INTEGER)) return [{ name, default: parsed.data, max: undefined }];
    let low = parsed.data;
    let high = Number.MAX_SAFE_INTEGER;
    while (high - low > 1) {
      const mid = Math.floor((low + high) / 2);
      if (accepts(name, mid)) low = mid;
      else high = mid;
    }
    return [{ name, default: parsed.data, max: low }];
  });
}

/** The rows of a markdown table section whose first cell names variables: their names and their cells. */
function rows(text: string): Array<{ names: string[]; defaults: string[]; row: string }> {
  return text
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((row) => {
      const cells = row.split(' | ');
      return { names: [...cells[0]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!), defaults: [...cells[1]!.matchAll(/`([^`]*)`/g)].map((m) => m[1]!), row };
    });
}

const deploy = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

function deploySection(title: string): string {
  const env = deploy.slice(deploy.indexOf('## Environment variables'));
  const start = env.indexOf(`\n### ${title}\n`);
  const end = env.indexOf('\n### ', start + 1);
  return env.slice(start, end < 0 ? undefined : end);
}

/** Whether `row` writes `n` (as 600000, 600,000 or 600 000 would be read). */
const writes = (row: string, n: number) => row.replace(/(\d)[, ](?=\d{3}\b)/g, '$1').split(/[^0-9]/).includes(String(n));

describe.each(Object.keys(SCHEMAS))('docs/deploy.md, %s', (title) => {
  const settings = numericSettings(SCHEMAS[title]!);
  const table = rows(deploySection(title));

  it('gives the default the config module gives, for every numeric setting whose row lists one default per name', () => {
    expect(settings.length).toBeGreaterThan(0);
    const wrong = settings.flatMap((setting) => {
      const row = table.find((r) => r.names.includes(setting.name));
      if (!row || row.names.length !== row.defaults.length) return [];
      const written = row.defaults[row.names.indexOf(setting.name)]!;
      // A default said in words (VERIFY_MAX_PER_AUTHOR: half of `VERIFY_CONCURRENCY`) is the row's to explain.
      if (!/^-?[\d.]+$/.test(written)) return [];
      return Number(written) === setting.default ? [] : [`${setting.name}: ${written}, code ${setting.default}`];
    });
    expect(wrong).toEqual([]);
  });

  it('writes in its row every upper bound the config module enforces (timers at 2147483647 are the general rule)', () => {
    const unsaid = settings.flatMap((setting) => {
      if (setting.max === undefined || setting.max === MAX_TIMER_MS) return [];
      const row = table.find((r) => r.names.includes(setting.name));
      return row && writes(row.row, setting.max) ? [] : [`${setting.name}: at most ${setting.max}`];
    });
    expect(unsaid).toEqual([]);
  });
});

describe("README.md's settings table", () => {
  const table = rows(readme.slice(readme.indexOf('## Configuration')));
  const all = Object.values(SCHEMAS).flatMap(numericSettings);

  it('gives the default the config modules give (one default per name) and writes their upper bounds', () => {
    const wrong: string[] = [];
    for (const row of table) {
      for (const [i, name] of row.names.entries()) {
        const found = all.filter((s) => s.name === name);
        if (found.length === 0) continue;
        const setting = found[0]!;
        // One default per name and one value in code (SHUTDOWN_DRAIN_MS differs by service: its row says so in words).
        if (row.names.length === row.defaults.length && found.every((s) => s.default === setting.default) && Number(row.defaults[i]) !== setting.default) {
          wrong.push(`${name}: default ${row.defaults[i]}, code ${setting.default}`);
        }
        for (const bound of new Set(found.map((s) => s.max))) {
          if (bound !== undefined && bound !== MAX_TIMER_MS && !writes(row.row, bound)) wrong.push(`${name}: at most ${bound} unsaid`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});
