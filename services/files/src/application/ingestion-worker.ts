import { MAX_TAG_CHARS, truncatedToCharacters, withoutInvisibleInName } from '@cards/card-rules';
import { ClientError, Status } from 'nice-grpc';
import { isEngineUnavailableError, NotDueYetError, NotFoundError, RetryableUnavailableError, retryableWhenPeerNotReady, serviceCounter, type DeliveredEvent, type Logger } from '@cards/platform';
import { events } from '@cards/proto';
import { noCardReason, splitIntoCards } from '../domain/card-splitter';
import type { CardDraft, FileRecord } from '../domain/model';
import { CardRejectedError, UnreadableDocumentError, type CardsPort, type DocumentReader, type FileRepository, type ObjectStore } from '../domain/ports';

export interface IngestionWorkerDeps {
  repository: FileRepository;
  objects: ObjectStore;
  reader: DocumentReader;
  cards: CardsPort;
  logger: Logger;
  /** Deliveries of a change event before the bus gives up; the last one logs the failure. */
  maxAttempts: number;
  /**
   * How long after a deletion its file's bytes are kept (FILE_DELETED_BYTES_GRACE_MS): then removeDeletedBytes, on its
   * own subscription, removes them. 0 (the default): the deletion's handling removes them at once.
   */
  deletedBytesGraceMs?: number;
  /** Cards created at the same time for one document. */
  concurrency?: number;
  /**
   * How long a change or an ingestion waits for a cards service that does not have the method yet (UNIMPLEMENTED:
   * files released before cards, docs/deploy.md#upgrade-order), from the change (the event's time) or the upload, and
   * how long an ingestion waits for a cards service that is down (UNAVAILABLE, unreachable), from the upload; past it
   * the failure counts as any other (FILES_UNRELEASED_RETRY_HOURS). Default 24 h. A change waits for a cards service
   * that is down without end, as for an engine.
   */
  unreleasedRetryMs?: number;
  /** The clock (tests). */
  now?: () => number;
}

/**
 * Why an ingestion failed, in a word (the `reason` label of card_library_ingestions_total): the document was unreadable
 * (damaged, password-protected, not what it claims), gave no cards (too little text) or had every passage refused;
 * its bytes were missing from object storage; the cards service did not take the cards (after the attempts: down or
 * failing) or did not have a method yet (released after files, past FILES_UNRELEASED_RETRY_HOURS).
 */
export type IngestionFailureKind = 'unreadable' | 'no_cards' | 'passages_refused' | 'bytes_missing' | 'cards_not_stored' | 'cards_not_released';

/** Ingestions that ended, by outcome and, for a failed one, its kind of reason: an ingestion's own outcome, whatever the event's. */
const ingestions = serviceCounter(
  'card_library_ingestions_total',
  "Document ingestions that ended, by outcome (done, failed) and a failed one's reason: unreadable, no_cards, passages_refused, bytes_missing, cards_not_stored, cards_not_released (empty for done)",
  ['outcome', 'reason'] as const,
);
// Every series from the start, at 0, so a rate over them is defined before the first failure.
ingestions.inc({ outcome: 'done', reason: '' }, 0);
for (const reason of ['unreadable', 'no_cards', 'passages_refused', 'bytes_missing', 'cards_not_stored', 'cards_not_released'] satisfies IngestionFailureKind[]) ingestions.inc({ outcome: 'failed', reason }, 0);

export interface IngestionResult {
  status: 'done' | 'failed' | 'skipped';
  cardIds: string[];
  collectionId: string | null;
  error?: string;
}

/**
 * Ingests documents and applies file changes. An ingestion (ingest, one attempt, run by the IngestionScheduler in fair
 * order across owners): parse the document, create its cards (each with an
 * idempotency key `${fileId}:${index}`, so a redelivery after a crash makes no second copy), then the
 * file's collection (idempotent per file), then record the outcome. FileDeleted: remove the bytes and
 * clear the file references on cards and collection. FilePrivacyChanged: the file's cards and collection
 * take its privacy. Failures of peers are thrown so the scheduler (an ingestion) or the bus (a change) retries; for an
 * upload, the last attempt and any unreadable document record `failed` with the reason; a privacy change failing on its last attempt
 * is logged as an error naming the file, and the bus moves it to its dead letters, to be replayed. An upload's event only
 * wakes the scheduler; changes come through their own subscription (file-event-subscriptions.ts); a change of a file
 * waits only for that file's ingestion attempt under way in this process.
 */
export class IngestionWorker {
  /** The attempt under way of each file this process is ingesting. */
  private readonly ingesting = new Map<string, Promise<IngestionResult>>();

  constructor(private readonly deps: IngestionWorkerDeps) {}

  /**
   * Handler of the file changes subscription: FileDeleted and FilePrivacyChanged, never behind other files' ingestions
   * (FileUploaded only wakes the IngestionScheduler, which calls ingest, so it is passed over here).
   */
  async handle(delivered: DeliveredEvent): Promise<void> {
    const event = events.FileEvent.decode(delivered.payload);
    const finalAttempt = (delivered.countedFailures ?? delivered.attempt) + 1 >= this.deps.maxAttempts;
    switch (event.kind?.$case) {
      case 'uploaded':
        return;
      case 'deleted':
        await this.afterIngestionUnderWay(event.kind.value.fileId);
        if (!this.deps.deletedBytesGraceMs) await this.deps.objects.remove(event.kind.value.fileId);
        await this.deps.cards.clearFileReferences(event.kind.value.fileId).catch((err: unknown) => {
          throw this.whilePeerNotReady(err, event.occurredAt, 'the deletion of file ' + event.kind!.value.fileId);
        });
        return;
      case 'privacyChanged':
        await this.applyFilePrivacy(event.kind.value, finalAttempt, event.occurredAt);
        return;
      default:
        this.deps.logger.warn({ offset: delivered.offset }, 'ignoring a file event of an unknown kind');
    }
  }

  /**
   * Handler of the deleted bytes subscription (always subscribed: without a grace the bytes were removed at once by
   * handle, and this finds nothing left, but deletions left waiting under a grace since set to 0 are removed here): a
   * deleted file's bytes are removed once the grace has
   * passed since its deletion; until then the event is delivered again (a NotDueYetError: never
   * dead-lettered, at most 5 s apart), so reads of the file under way complete (FilesService.resumed). Each event waits
   * only for its own time, and deletions come in their order, so a removal is never later than its grace and a few s.
   */
  async removeDeletedBytes(delivered: DeliveredEvent, now = Date.now()): Promise<void> {
    const event = events.FileEvent.decode(delivered.payload);
    if (event.kind?.$case !== 'deleted') return;
    const { fileId } = event.kind.value;
    const due = (event.occurredAt?.getTime() ?? 0) + (this.deps.deletedBytesGraceMs ?? 0);
    if (now < due) throw new NotDueYetError(`the bytes of deleted file ${fileId} are kept for reads under way until ${new Date(due).toISOString()}`);
    await this.afterIngestionUnderWay(fileId);
    await this.deps.objects.remove(fileId);
  }

  /**
   * A deletion of a file whose ingestion attempt is under way here is applied after it, as when one consumer took
   * both, so the references of every card the attempt made are cleared.
   */
  private async afterIngestionUnderWay(fileId: string): Promise<void> {
    await this.ingesting.get(fileId)?.catch(() => undefined);
  }

  /**
   * Applied at once to the cards made so far, even while the file's ingestion is under way (here or on another
   * replica): the attempt applies the privacy stored at its end to every card it made (catchUpWithPrivacy).
   */
  private async applyFilePrivacy(change: events.FilePrivacyChanged, finalAttempt: boolean, changedAt: Date | undefined): Promise<void> {
    const { fileId, userId: ownerId } = change;
    // The file's privacy as stored now, not as the event says: replicas' outboxes may publish two quick changes out of
    // order, and a dead letter is replayed late, so the event only says the privacy changed. A deleted file has none.
    const file = await this.deps.repository.get(fileId);
    if (!file) return;
    const isPrivate = file.private;
    try {
      await this.deps.cards.applyFilePrivacy({ fileId, ownerId, private: isPrivate });
    } catch (thrown) {
      // A cards service that is down is waited for: the bus retries it with backoff without end, as an unreachable
      // engine; one that runs a release without ApplyFilePrivacy yet (files released first), up to unreleasedRetryMs.
      const err = this.whilePeerNotReady(thrown, changedAt, `the privacy change of file ${fileId}`);
      // Else the bus dead-letters the event after this; until it is replayed, the file's cards and collection keep
      // their former privacy, so a private file may leave them public.
      if (finalAttempt && !isEngineUnavailableError(err)) {
        this.deps.logger.error({ err, fileId, ownerId, private: isPrivate }, "the file's privacy could not be applied to its cards and collection; its event goes to the dead letters");
      }
      throw err;
    }
  }

  private get unreleasedRetryMs(): number {
    return this.deps.unreleasedRetryMs ?? DEFAULT_UNRELEASED_RETRY_MS;
  }

  /**
   * A peer's UNAVAILABLE, or its UNIMPLEMENTED less than unreleasedRetryMs after `since`, as the RetryableUnavailableError
   * the bus and the scheduler retry without counting; an UNIMPLEMENTED past it as a CalleeNotReleasedError, which counts
   * as any failure (the change is dead-lettered, to be replayed once cards is released; the ingestion fails). With
   * `outageBounded` (an ingestion), an UNAVAILABLE past it too is returned as it is, so it counts from then on. Without a
   * `since` (an event without its time) the wait has no bound, as before. Any other error is returned as it is.
   */
  private whilePeerNotReady(err: unknown, since: Date | undefined, what: string, outageBounded = false): unknown {
    const bounded = err instanceof ClientError && (err.code === Status.UNIMPLEMENTED || (outageBounded && err.code === Status.UNAVAILABLE));
    if (bounded && since !== undefined) {
      const waited = (this.deps.now ?? Date.now)() - since.getTime();
      if (waited >= this.unreleasedRetryMs) {
        if (err.code === Status.UNAVAILABLE) return err;
        const hours = Math.round((this.unreleasedRetryMs / 3_600_000) * 100) / 100;
        return new CalleeNotReleasedError(
          `${what} gave up waiting for the cards service to have ${err.path}: still UNIMPLEMENTED ${hours} h after it (FILES_UNRELEASED_RETRY_HOURS); release cards (docs/deploy.md#upgrade-order)`,
          err,
        );
      }
    }
    return retryableWhenPeerNotReady(err);
  }

  async ingest(fileId: string, finalAttempt = true): Promise<IngestionResult> {
    const attempt = this.attemptIngestion(fileId, finalAttempt);
    this.ingesting.set(fileId, attempt);
    try {
      return await attempt;
    } finally {
      if (this.ingesting.get(fileId) === attempt) this.ingesting.delete(fileId);
    }
  }

  private async attemptIngestion(fileId: string, finalAttempt: boolean): Promise<IngestionResult> {
    const { logger, repository } = this.deps;
    const record = await repository.get(fileId);
    if (!record) return { status: 'skipped', cardIds: [], collectionId: null };
    if (record.ingestionStatus !== 'pending') return { status: 'skipped', cardIds: [], collectionId: record.collectionId };
    try {
      return await this.ingestRecord(record);
    } catch (thrown) {
      if (thrown instanceof UnreadableDocumentError) return this.fail(record, 'unreadable', thrown.message, thrown.cause, 'warn');
      // A cards service that is down or restarting (UNAVAILABLE, or unreachable: GrpcCardsClient) or without the
      // method yet (files released first) is waited for from the upload on, up to unreleasedRetryMs, the attempts not
      // counted (the scheduler: its longest backoff, one warning a minute), as an engine outage. Past the bound an
      // outage counts, so the attempts left then record CARDS_NOT_STORED; a missing method fails at once, its owner told why.
      const err = this.whilePeerNotReady(thrown, record.createdAt, `the ingestion of file ${record.id}`, true);
      if (isPeerWait(thrown, err)) throw err;
      if (err instanceof CalleeNotReleasedError) return this.fail(record, 'cards_not_released', CARDS_NOT_RELEASED, err);
      if (!finalAttempt) throw thrown;
      // The error is the cards service's or its transport's (a gRPC path and status): the log keeps it, the uploader
      // reads what happened and what to do.
      return this.fail(record, 'cards_not_stored', CARDS_NOT_STORED, thrown);
    } finally {
      logger.debug({ fileId }, 'ingestion attempt finished');
    }
  }

  private async ingestRecord(record: FileRecord): Promise<IngestionResult> {
    const { cards, logger, objects, reader, repository } = this.deps;
    let bytes: Buffer;
    try {
      bytes = await objects.read(record.id);
    } catch (err) {
      if (err instanceof NotFoundError) return this.fail(record, 'bytes_missing', 'the file bytes are missing from object storage');
      throw err;
    }
    const started = Date.now();
    const document = await reader.parse(record.format, bytes);
    const drafts = splitIntoCards(document);
    if (drafts.length === 0) return this.fail(record, 'no_cards', noCardReason(document), undefined, 'info');
    // The parse may take a while: a file deleted meanwhile gets no cards.
    if (!(await repository.get(record.id))) return this.stopForDeletion(record, 0);

    let made = 0;
    let ids: (string | null)[];
    try {
      ids = await mapWithConcurrency(drafts, this.deps.concurrency ?? 4, async (draft) => {
        const id = await this.createCard(record, draft);
        if (id !== null) made++;
        return id;
      });
    } catch (err) {
      if (err instanceof FileDeletedMeanwhile) return this.stopForDeletion(record, made);
      throw err;
    }
    const cardIds = ids.filter((id): id is string => id !== null);
    if (cardIds.length === 0) return this.fail(record, 'passages_refused', 'the cards service refused every passage of the document', undefined, 'warn');

    // Public exactly when the file is now, as its cards were made (privacyFromFile). A file deleted meanwhile gets no
    // collection: its owner would be told of a collection for a file she deleted.
    const current = await repository.get(record.id);
    if (!current) return this.stopForDeletion(record, cardIds.length);
    let collectionId: string;
    try {
      collectionId = await cards.createFileCollection({
        ownerId: record.userId,
        fileId: record.id,
        fileName: record.fileName,
        isPublic: !current.private,
        cardIds,
      });
    } catch (err) {
      // The cards service refuses the collection of a file it cannot find (`file_id: no such file`): deleted after the
      // look above, maybe on another replica. The record says which it is, as for a refused passage.
      if (err instanceof CardRejectedError && !(await repository.get(record.id))) return this.stopForDeletion(record, cardIds.length);
      throw err;
    }
    await this.catchUpWithPrivacy(record);
    const stillThere = await repository.setIngestion(record.id, { status: 'done', error: null, cardCount: cardIds.length, collectionId }, new Date());
    // Deleted between the last look and the collection: the delete's cleanup may have run before the collection existed.
    if (!stillThere) await cards.clearFileReferences(record.id);
    logger.info({ fileId: record.id, cards: cardIds.length, collectionId, ms: Date.now() - started }, 'file ingested');
    ingestions.inc({ outcome: 'done', reason: '' });
    return { status: 'done', cardIds, collectionId };
  }

  /**
   * The file was deleted while its ingestion was under way (the deletion stored here or on another replica): the cards
   * made so far stay, as a deleted file's cards do, and no more are made, nor its collection. The deletion's cleanup
   * (ClearFileReferences) may have run on another replica before the last of them existed, so it is done once more.
   */
  private async stopForDeletion(record: FileRecord, cardsMade: number): Promise<IngestionResult> {
    if (cardsMade > 0) await this.deps.cards.clearFileReferences(record.id);
    this.deps.logger.info({ fileId: record.id, cards: cardsMade }, 'the file was deleted during its ingestion; ingestion stopped, no collection made');
    return { status: 'skipped', cardIds: [], collectionId: null };
  }

  /**
   * Each card took the file's privacy as the cards service read it when making the card (privacyFromFile), but a change
   * stored while a card was being made may have been applied by a changes consumer (here or on another replica) before
   * that card existed, so when the privacy differs from the one the attempt read at its start, the file's privacy as
   * stored now is applied once more, until it stops changing: a change stored after the last read is applied by its own
   * event, to cards that all exist by then.
   */
  private async catchUpWithPrivacy(record: FileRecord): Promise<void> {
    let applied = record.private;
    for (let round = 0; round < 5; round++) {
      const now = await this.deps.repository.get(record.id);
      if (!now || now.private === applied) return;
      await this.deps.cards.applyFilePrivacy({ fileId: record.id, ownerId: record.userId, private: now.private });
      applied = now.private;
    }
  }

  private async createCard(record: FileRecord, draft: CardDraft): Promise<string | null> {
    const tags = [...new Set([...record.tags, ...(draft.title ? [titleTag(draft.title)] : [])])];
    try {
      return await this.deps.cards.createCard({
        ownerId: record.userId,
        html: draft.html,
        link: draft.link,
        private: record.private,
        hiddenByFile: record.private,
        // The file's privacy when each card is made, so a change stored mid-ingestion reaches the cards made after it
        // at once; catchUpWithPrivacy covers the ones made while the change was being stored.
        privacyFromFile: true,
        tags,
        fileId: record.id,
        idempotencyKey: `${record.id}:${draft.index}`,
      });
    } catch (err) {
      if (!(err instanceof CardRejectedError)) throw err;
      // The cards service refuses a passage of a file it cannot find (`file_uuid: no such file`): deleted meanwhile,
      // maybe on another replica. The record says which it is; the ingestion then stops instead of refusing every passage.
      if (!(await this.deps.repository.get(record.id))) throw new FileDeletedMeanwhile(record.id);
      this.deps.logger.warn({ fileId: record.id, block: draft.index, reason: err.message }, 'the cards service refused a passage; skipped');
      return null;
    }
  }

  /**
   * `detail`: what the reason sums up (a library's own error), for the log only. `level`: error for what the system
   * failed at (bytes missing, cards not stored); what the uploaded document caused (too little text, unreadable,
   * password-protected, every passage refused) is the uploader's to fix and is told to them, so it is logged lower.
   */
  private async fail(record: FileRecord, kind: IngestionFailureKind, reason: string, detail?: unknown, level: 'error' | 'warn' | 'info' = 'error'): Promise<IngestionResult> {
    this.deps.logger[level]({ fileId: record.id, reason, ...(detail === undefined ? {} : { err: detail }) }, 'file ingestion failed');
    await this.deps.repository.setIngestion(record.id, { status: 'failed', error: reason, cardCount: 0, collectionId: null }, new Date());
    ingestions.inc({ outcome: 'failed', reason: kind });
    return { status: 'failed', cardIds: [], collectionId: null, error: reason };
  }
}

/** The reason a file's last ingestion attempt records when its cards could not be stored (the detail is logged). */
export const CARDS_NOT_STORED = 'the cards could not be stored: the card library did not answer after several attempts. Upload the document again later';

/**
 * The reason an ingestion records when the cards service still did not have a method it calls unreleasedRetryMs after
 * the upload (files released before cards and cards never released). The detail is logged as an error.
 */
export const CARDS_NOT_RELEASED = 'the cards could not be stored: the card library is being upgraded and did not take them in time. Upload the document again later';

/** FILES_UNRELEASED_RETRY_HOURS' default: a day. */
export const DEFAULT_UNRELEASED_RETRY_MS = 24 * 3_600_000;

/** A peer still answering UNIMPLEMENTED past the wait's bound: counted as a failure (not an outage). */
export class CalleeNotReleasedError extends Error {
  constructor(message: string, cause: unknown) {
    super(message);
    this.name = 'CalleeNotReleasedError';
    Object.defineProperty(this, 'cause', { value: cause, enumerable: false, writable: true, configurable: true });
  }
}

/** A peer's UNAVAILABLE or UNIMPLEMENTED within the wait, made retryable (whilePeerNotReady): not counted. */
function isPeerWait(thrown: unknown, err: unknown): boolean {
  return thrown instanceof ClientError && err !== thrown && err instanceof RetryableUnavailableError;
}

/**
 * A heading as one tag: tags are shown comma-joined, so a comma in a heading would split it in two; the invisible
 * characters a tag may not hold (direction marks and overrides, common in right-to-left documents, zero-width spaces)
 * are dropped rather than have the passage refused, once more after the cut, which can leave a joiner with nothing
 * after it.
 */
export function titleTag(title: string): string {
  return withoutInvisibleInName(truncatedToCharacters(withoutInvisibleInName(title).replace(/\s*,\s*/g, '; '), MAX_TAG_CHARS)).trim();
}

/** Thrown by createCard when the cards service refused a passage because the file is gone. */
class FileDeletedMeanwhile extends Error {
  constructor(fileId: string) {
    super(`file ${fileId} was deleted during its ingestion`);
    this.name = 'FileDeletedMeanwhile';
  }
}

/**
 * `fn` on every item, at most `limit` at once. The first failure stops the taking of further items; the calls under way
 * are waited for (so none goes on after the answer), then that failure is thrown.
 */
async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length && !failure) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!);
      } catch (err) {
        failure ??= { err };
      }
    }
  });
  await Promise.all(workers);
  if (failure) throw failure.err;
  return results;
}
