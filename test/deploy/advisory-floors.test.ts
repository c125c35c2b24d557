// The security advisories reviewed against what the images ship (docs/licences.md, "Advisories"): every installed
// production version of a package below is at or above the release that fixed them. `pnpm audit` cannot run on this
// workplace (the registry answers its POST with 405), so this is the offline floor: a dependency pinned back, or a new
// one resolving an old copy, fails here. A version still below a floor is accepted only as the exact version reviewed.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './helm';
import { hasPnpm } from '../support/pnpm';

type Floor = {
  name: string;
  /** The first fixed release of each release line (major, or major.minor below 1.0). */
  patched: string[];
  advisories: string;
  /** A version below the floor that stays, with why (not reachable here, no fix on Node 20). */
  accepted?: { version: string; why: string };
};

export const FLOORS: Floor[] = [
  { name: 'nodemailer', patched: ['9.0.1'], advisories: 'GHSA-p6gq-j5cr-w38f (high: message-level raw bypasses disableFileAccess/disableUrlAccess); CRLF in transport name and List-* headers, jsonTransport file access, OAuth2 TLS (medium, fixed in 8.0.5-8.0.9)' },
  { name: 'http-proxy-middleware', patched: ['3.0.7'], advisories: 'CVE-2026-55603 (high: CRLF in fixRequestBody multipart), CVE-2026-55602 (medium: router Host matching)' },
  { name: 'path-to-regexp', patched: ['0.1.13', '8.4.0'], advisories: 'CVE-2026-4867, CVE-2026-4926, CVE-2026-4923 (ReDoS/DoS in route patterns)' },
  { name: '@grpc/grpc-js', patched: ['1.14.4'], advisories: 'CVE-2026-48068, CVE-2026-48069 (malformed compressed message crash)' },
  { name: 'protobufjs', patched: ['7.5.6'], advisories: 'GHSA-75px-5xx7-5xc7 (code generation gadget after prototype pollution)' },
  { name: 'undici', patched: ['6.27.0', '7.29.0'], advisories: 'CVE-2026-6733 and the 2026 CRLF/cookie/desync wave (CVE-2026-13697 et al.)' },
  { name: 'fast-xml-parser', patched: ['4.5.4', '5.7.0'], advisories: 'CVE-2026-25896, CVE-2026-25128, GHSA-gh4j-gqv2-49f6' },
  { name: '@xmldom/xmldom', patched: ['0.8.15'], advisories: 'GHSA-965w-775f-mr7g, GHSA-6gmq-8vp8-gcm6' },
  { name: 'jws', patched: ['3.2.3'], advisories: 'CVE-2025-65945 (HMAC verification)' },
  {
    name: 'sanitize-html',
    patched: ['2.17.6'],
    advisories: 'incomplete URI scheme validation of URI attributes other than href/src/cite (medium, July 2026)',
    accepted: { version: '2.17.0', why: 'fixed releases need Node >= 22.12; the card allow-list has no URI attribute but a[href], schemes http/https only' },
  },
];

/** The release line a version belongs to: its major, or major.minor below 1.0. */
const line = (version: string) => {
  const [major, minor] = version.split('.');
  return major === '0' ? `0.${minor}` : major!;
};
const compare = (a: string, b: string) => {
  const pa = a.split(/[.+-]/).map(Number);
  const pb = b.split(/[.+-]/).map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
};

/** Whether a version is at or above its line's fixed release (a line newer than every listed one is). */
export function patched(version: string, fixes: string[]): boolean {
  const own = fixes.find((fix) => line(fix) === line(version));
  if (own) return compare(version, own) >= 0;
  return fixes.every((fix) => compare(version, fix) > 0);
}

describe('advisory floors, the rule', () => {
  it('compares within a release line and lets newer lines pass', () => {
    expect(patched('7.0.13', ['9.0.1'])).toBe(false);
    expect(patched('9.1.1', ['9.0.1'])).toBe(true);
    expect(patched('3.0.5', ['3.0.7'])).toBe(false);
    expect(patched('3.0.11', ['3.0.7'])).toBe(true);
    expect(patched('0.1.12', ['0.1.13', '8.4.0'])).toBe(false);
    expect(patched('6.3.0', ['0.1.13', '8.4.0'])).toBe(false);
    expect(patched('8.4.2', ['0.1.13', '8.4.0'])).toBe(true);
    expect(patched('8.8.1', ['7.5.6'])).toBe(true);
    expect(patched('0.8.14', ['0.8.15'])).toBe(false);
  });
});

if (!hasPnpm()) process.stdout.write('[advisory floors] installed tree skipped: no pnpm to list the installed packages with\n');
(hasPnpm() ? describe : describe.skip)('advisory floors, the production dependencies installed', () => {
  let installed: Map<string, string[]>;
  beforeAll(() => {
    const result = spawnSync(process.execPath, [join(ROOT, 'scripts/licences.mjs'), '--json'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    const { packages } = JSON.parse(result.stdout) as { packages: Array<{ name: string; versions: string[] }> };
    installed = new Map(packages.map((p) => [p.name, p.versions]));
  });

  it.each(FLOORS.map((floor) => [floor.name, floor] as const))('%s is at or above the fixed release', (_name, floor) => {
    const below = (installed.get(floor.name) ?? []).filter((version) => !patched(version, floor.patched) && version !== floor.accepted?.version);
    expect(below).toEqual([]);
  });

  it('names only packages that ship (a floor on a package that left the tree is stale)', () => {
    expect(FLOORS.filter((floor) => !installed.has(floor.name)).map((floor) => floor.name)).toEqual([]);
  });
});
