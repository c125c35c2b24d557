import type { ContentLock } from '../../domain/ports';

/**
 * Runs tasks one after the other per key within this process; tasks under different keys run side by side. Enough
 * for the SQLite store, which one process owns, and the first stage of a lock shared between processes.
 */
export class InProcessContentLock implements ContentLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    try {
      return await result;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
