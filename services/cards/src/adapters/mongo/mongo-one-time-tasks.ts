import { isDuplicateKeyError } from '@cards/platform';
import type { Collection } from 'mongodb';
import type { OneTimeTasks } from '../../domain/ports';
import type { MigrationDocument } from './mongo-start-migrations';

/**
 * One-time tasks done, recorded beside the start migrations in the cards database's `migrations` collection (`_id` =
 * the task's name): both are work done once per database, and their names do not overlap.
 */
export class MongoOneTimeTasks implements OneTimeTasks {
  constructor(private readonly done: Collection<MigrationDocument>) {}

  async isDone(name: string): Promise<boolean> {
    return (await this.done.countDocuments({ _id: name }, { limit: 1 })) > 0;
  }

  async markDone(name: string, at: Date): Promise<void> {
    try {
      await this.done.insertOne({ _id: name, doneAt: at });
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }
}
