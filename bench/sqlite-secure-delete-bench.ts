// What PRAGMA secure_delete = ON (openSqlite, packages/platform/src/sqlite.ts) costs on a write-heavy path: 2,200 rows
// (2,000 of ~3 KB, 200 of ~28 KB, a card's size) inserted, updated once and deleted, one write per transaction, with
// it OFF and ON in turn; min and median of wall and CPU time (user + system) over 11 runs each. CPU is the figure to
// read on a loaded machine. Usage: pnpm exec tsx bench/sqlite-secure-delete-bench.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '@cards/platform';

const cpuMs: Record<string, number[]> = { OFF: [], ON: [] };
function run(mode: 'ON' | 'OFF'): number {
  const dir = mkdtempSync(join(tmpdir(), 'sd-cost-'));
  const db = openSqlite(join(dir, 'x.db'), ['CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)']);
  db.pragma(`secure_delete = ${mode}`);
  const small = 'lorem ipsum dolor '.repeat(170);
  const big = 'lorem ipsum dolor '.repeat(1560);
  const ins = db.prepare('INSERT INTO t (id, body) VALUES (?, ?)');
  const upd = db.prepare('UPDATE t SET body = ? WHERE id = ?');
  const del = db.prepare('DELETE FROM t WHERE id = ?');
  const start = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < 2200; i++) ins.run(i, (i < 2000 ? small : big) + i);
  for (let i = 0; i < 2200; i++) upd.run((i < 2000 ? small : big) + 'x' + i, i);
  for (let i = 0; i < 2200; i++) del.run(i);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  cpuMs[mode]!.push((cpu.user + cpu.system) / 1000);
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return ms;
}
const results: Record<string, number[]> = { OFF: [], ON: [] };
for (let r = 0; r < 11; r++) for (const m of ['OFF', 'ON'] as const) results[m]!.push(run(m));
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const min = (a: number[]) => Math.min(...a);
console.log(JSON.stringify({ wall: { OFF: { min: min(results.OFF!), median: median(results.OFF!) }, ON: { min: min(results.ON!), median: median(results.ON!) } }, cpu: { OFF: { min: min(cpuMs.OFF!), median: median(cpuMs.OFF!) }, ON: { min: min(cpuMs.ON!), median: median(cpuMs.ON!) } } }));
