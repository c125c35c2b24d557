import type { Collection } from 'mongodb';
import { MongoOneTimeTasks } from './mongo-one-time-tasks';

/** A start-time migration this database no longer needs (`_id` = its name). */
export interface MigrationDocument {
  _id: string;
  doneAt: Date;
}

/**
 * A change that documents written by an earlier version need, run when the store opens. `run` treats what it finds
 * left to change and answers how many documents it found; none of them is found again afterwards.
 */
export interface StartMigration {
  name: string;
  run(): Promise<number>;
}

/**
 * Runs each migration not recorded in `done`, and records one once a run of it finds nothing left. Not already after
 * the run that did the work: during a rolling upgrade, replicas of the earlier version keep writing older documents, and
 * the next starts treat those until one finds none. Replicas starting together may both run a migration (its changes
 * are conditional, so the second changes nothing) and both record it.
 */
export async function runStartMigrations(done: Collection<MigrationDocument>, migrations: readonly StartMigration[]): Promise<void> {
  const names = migrations.map((m) => m.name);
  const recorded = new Set((await done.find({ _id: { $in: names } }, { projection: { _id: 1 } }).toArray()).map((m) => m._id));
  for (const migration of migrations) {
    if (recorded.has(migration.name) || (await migration.run()) > 0) continue;
    await new MongoOneTimeTasks(done).markDone(migration.name, new Date());
  }
}
