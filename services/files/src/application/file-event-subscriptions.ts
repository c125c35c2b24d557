import { Topics, type EventBus, type Subscription } from '@cards/platform';
import { events } from '@cards/proto';
import type { IngestionScheduler } from './ingestion-scheduler';
import type { IngestionWorker } from './ingestion-worker';

/** Consumer group that hears of uploaded documents: each FileUploaded event wakes the ingestion scheduler. */
export const INGESTION_GROUP = 'files-ingestion';
/** Consumer group that applies deletions and privacy changes, so they never wait behind ingestions of other files. */
export const FILE_CHANGES_GROUP = 'files-file-changes';
/** Consumer group that removes deleted files' bytes once their grace has passed (IngestionWorker.removeDeletedBytes). */
export const DELETED_BYTES_GROUP = 'files-deleted-bytes';

/**
 * The files topic read by two consumer groups on one bus. Uploads: the pending record, stored with its event, is the
 * ingestion queue, which the IngestionScheduler takes in fair order across owners; the event only wakes it, at once
 * (a wake never fails, so the group never holds an event). Changes: an ingestion may take minutes, and a deletion or a
 * privacy change queued behind it would leave cards public (or naming a deleted file) that long. Each group reads every
 * event and handles only its kinds; within a group one file's events stay in order (one key, one partition).
 */
export async function subscribeToFileEvents(
  bus: EventBus,
  worker: IngestionWorker,
  scheduler: Pick<IngestionScheduler, 'wake'>,
  maxAttempts: number,
): Promise<Subscription> {
  const ingestion = await bus.subscribe({
    group: INGESTION_GROUP,
    topics: [Topics.file],
    maxAttempts,
    handler: async (event) => {
      if (events.FileEvent.decode(event.payload).kind?.$case === 'uploaded') scheduler.wake();
    },
  });
  const changes = await bus.subscribe({ group: FILE_CHANGES_GROUP, topics: [Topics.file], maxAttempts, handler: (event) => worker.handle(event) }).catch(async (err: unknown) => {
    await ingestion.close();
    throw err;
  });
  // Deleted files' bytes go on a group of their own (with a grace: waiting for their time never holds the changes).
  // Subscribed without a grace too, where it removes them at once again (nothing left): deletions a release with a
  // grace left waiting in the group when FILE_DELETED_BYTES_GRACE_MS was then set to 0 are removed, not kept for good.
  const bytes = await bus.subscribe({ group: DELETED_BYTES_GROUP, topics: [Topics.file], maxAttempts, handler: (event) => worker.removeDeletedBytes(event) }).catch(async (err: unknown) => {
    await Promise.all([ingestion.close(), changes.close()]);
    throw err;
  });
  return { close: async () => void (await Promise.all([ingestion.close(), changes.close(), bytes.close()])) };
}
