// The licences of what the images ship: every production dependency of @cards/all-in-one (whose closure is every
// service's) and of @cards/web (bundled into web/dist), read from each installed package's package.json by
// `pnpm licenses list --prod --json` (no network: it reads node_modules). Exits 1, naming the package, on a licence
// outside ALLOWED or one it cannot read, unless REVIEWED holds that package with exactly that declared licence.
// docs/licences.md records the inventory, the choice of the list and the data licences (word vectors and lists).
//   node scripts/licences.mjs                  the table and the verdict
//   node scripts/licences.mjs --json           the same as JSON ({ packages, problems })
//   node scripts/licences.mjs --inventory F    checks F (the JSON of `pnpm licenses list --json`) instead of the tree
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The workspace packages whose production dependencies reach an image (the `...` takes their dependencies too). */
const SHIPPED = ['@cards/all-in-one...', '@cards/web...'];

/**
 * SPDX identifiers allowed in an image. Permissive licences, plus MPL-2.0: weak copyleft per file, met by shipping
 * the unmodified npm package (its source is in the image); changing such a file means publishing the change.
 * Strong or network copyleft (GPL, LGPL, AGPL, SSPL, EUPL alone) and non-commercial terms are not on it.
 */
export const ALLOWED = new Set([
  'MIT', 'MIT-0', 'ISC', 'BSD-2-Clause', 'BSD-3-Clause', 'Apache-2.0', '0BSD', 'BlueOak-1.0.0', 'CC0-1.0',
  'Unlicense', 'Python-2.0', 'Zlib', 'MPL-2.0',
]);

/** Packages whose package.json does not say its licence in SPDX, read by hand: declared string -> what it is. */
export const REVIEWED = {
  // The upstream repository (asg017/sqlite-vec) carries LICENSE-MIT and LICENSE-APACHE; the npm packages carry neither.
  'sqlite-vec': { declared: 'MIT OR Apache', licence: 'MIT OR Apache-2.0' },
  'sqlite-vec-linux-x64': { declared: 'MIT OR Apache', licence: 'MIT OR Apache-2.0' },
  // Its LICENSE file is the two-clause BSD text (mammoth's dependency).
  duck: { declared: 'BSD', licence: 'BSD-2-Clause' },
};

/** Tokens of an SPDX expression: ids, '(', ')', 'AND', 'OR' ('WITH <exception>' stays on its id). */
function tokens(expression) {
  return expression.replace(/[()]/g, ' $& ').trim().split(/\s+/).reduce((out, token, index, all) => {
    if (token === 'WITH') return out;
    if (all[index - 1] === 'WITH') out[out.length - 1] += ` WITH ${token}`;
    else out.push(/^(and|or)$/i.test(token) ? token.toUpperCase() : token);
    return out;
  }, []);
}

/** Whether an SPDX expression is satisfied by the allow-list: OR needs one side, AND both; undefined if unreadable. */
export function allowed(expression) {
  const list = tokens(expression);
  let at = 0;
  const primary = () => {
    const token = list[at++];
    if (token === '(') {
      const value = or();
      if (list[at++] !== ')') throw new Error('unbalanced');
      return value;
    }
    if (token === undefined || token === ')' || token === 'AND' || token === 'OR') throw new Error('unexpected');
    return ALLOWED.has(token);
  };
  const and = () => {
    let value = primary();
    while (list[at] === 'AND') { at++; value = primary() && value; }
    return value;
  };
  const or = () => {
    let value = and();
    while (list[at] === 'OR') { at++; value = and() || value; }
    return value;
  };
  try {
    const value = or();
    return at === list.length ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Flattens `pnpm licenses list --json` ({ licence: [{ name, versions, license }] }) into one row per package. */
export function packagesOf(inventory) {
  const rows = [];
  for (const [group, entries] of Object.entries(inventory)) {
    for (const entry of entries) rows.push({ name: entry.name, versions: entry.versions ?? [], declared: entry.license ?? group });
  }
  return rows.sort((a, b) => a.name.localeCompare(b.name));
}

/** Each package's licence as checked, and the problems: packages outside the list or with an unreadable licence. */
export function check(rows) {
  const problems = [];
  const packages = rows.map((row) => {
    const review = REVIEWED[row.name];
    const licence = review && review.declared === row.declared ? review.licence : row.declared;
    const verdict = !licence || /^unknown$/i.test(licence) ? undefined : allowed(licence);
    if (verdict !== true) {
      const why = verdict === false ? `licence "${licence}" is not on the allow-list` : `licence "${row.declared}" unknown or unreadable`;
      problems.push(`${row.name}@${row.versions.join(', ')}: ${why}`);
    }
    return { ...row, licence, reviewed: licence !== row.declared };
  });
  return { packages, problems };
}

function pnpmCommand() {
  const execPath = process.env.npm_execpath;
  return execPath && /pnpm/.test(execPath) ? [process.execPath, execPath] : ['pnpm'];
}

function installedInventory() {
  const [command, ...prefix] = pnpmCommand();
  const filters = SHIPPED.flatMap((name) => ['--filter', name]);
  const out = execFileSync(command, [...prefix, '-r', ...filters, 'licenses', 'list', '--prod', '--json'], {
    cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out);
}

function main(argv) {
  const inventoryAt = argv.indexOf('--inventory');
  const inventory = inventoryAt >= 0 ? JSON.parse(readFileSync(argv[inventoryAt + 1], 'utf8')) : installedInventory();
  const { packages, problems } = check(packagesOf(inventory));
  if (argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify({ packages, problems }, null, 2)}\n`);
  } else {
    const counts = new Map();
    for (const row of packages) counts.set(row.licence, (counts.get(row.licence) ?? 0) + 1);
    for (const [licence, count] of [...counts].sort((a, b) => b[1] - a[1])) process.stdout.write(`${String(count).padStart(4)}  ${licence}\n`);
    for (const row of packages.filter((r) => r.reviewed)) process.stdout.write(`reviewed: ${row.name} declares "${row.declared}", read as ${row.licence}\n`);
    process.stdout.write(`${packages.length} production packages\n`);
  }
  for (const problem of problems) process.stderr.write(`licence check: ${problem}\n`);
  process.exitCode = problems.length ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv.slice(2));
