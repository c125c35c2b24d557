import { isDuplicateKeyError } from '@cards/platform';
import type { Collection } from 'mongodb';
import type { OneTimeTasks } from '../../domain/ports';

/** A one-time task done (`_id` = its name). */
export interface OneTimeTaskDocument {
  _id: string;
  doneAt: Date;
}

/** One-time tasks done, in the cards database's `one_time_tasks` collection. */
export class MongoOneTimeTasks implements OneTimeTasks {
  constructor(private readonly done: Collection<OneTimeTaskDocument>) {}

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
