import type { SqliteDatabase } from '@cards/platform';
import type { OneTimeTasks } from '../../domain/ports';

/** One-time tasks done, in the cards database (table one_time_tasks). */
export class SqliteOneTimeTasks implements OneTimeTasks {
  constructor(private readonly db: SqliteDatabase) {}

  async isDone(name: string): Promise<boolean> {
    return this.db.prepare('SELECT 1 FROM one_time_tasks WHERE name = ?').get(name) !== undefined;
  }

  async markDone(name: string, at: Date): Promise<void> {
    this.db.prepare('INSERT INTO one_time_tasks (name, done_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING').run(name, at.toISOString());
  }
}
