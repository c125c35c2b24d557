import type { Readable } from 'node:stream';
import type { OutgoingEvent, Page } from '@cards/platform';
import type { DeletedIdempotencyKey, DocumentFormat, FileRecord, IngestionStatus, ParsedDocument } from './model';

/**
 * Where file records live. Every change that other parts must learn about is written together with
 * its events (transactional outbox), so a crash between the two loses nothing.
 */
export interface FileRepository {
  /**
   * Stores a new record and its events atomically. Throws AlreadyExistsError when (userId, idempotencyKey) is already
   * taken by a stored record (nothing is stored then).
   */
  create(record: FileRecord, events: OutgoingEvent[]): Promise<void>;
  /** The record, or null when there is none. */
  get(id: string): Promise<FileRecord | null>;
  /** The user's record stored with this idempotency key, or null. */
  findByIdempotencyKey(userId: string, key: string): Promise<FileRecord | null>;
  /** The key of the user's record stored with it and deleted since (delete keeps it), or null. */
  findDeletedIdempotencyKey(userId: string, key: string): Promise<DeletedIdempotencyKey | null>;
  /** All records of one user, newest first (equal creation times by id). */
  listByUser(userId: string): Promise<FileRecord[]>;
  /**
   * At most `limit` of the user's records in the same order, private ones only when includePrivate, starting after
   * `after` (a `next` this repository gave; omitted: the newest). A position is a record's creation time and id, which
   * never change, so paging on while files are added, changed or deleted lists each one that stays listable throughout
   * exactly once; privacy is applied on every page. Throws InvalidArgumentError naming page_token for a cursor it did
   * not give.
   */
  listPageByUser(userId: string, includePrivate: boolean, limit: number, after?: string): Promise<Page<FileRecord>>;
  /**
   * Sets the privacy flag and updated_at; when the flag changes, stores the events with it atomically. False when there
   * is no such record.
   */
  setPrivacy(id: string, isPrivate: boolean, now: Date, events: OutgoingEvent[]): Promise<boolean>;
  /** Records the outcome of an ingestion attempt (and frees the file's ingestion claim); false when the record is gone. */
  setIngestion(id: string, outcome: IngestionOutcome, now: Date): Promise<boolean>;
  /**
   * The ingestion queue (docs/files.md#fair-ingestion): claims the next pending file to ingest for `holder` until
   * `now + leaseMs`, or null when none is due. Due: pending, not claimed (or its claim ran out), its retry time reached.
   * Fair across owners: the owner whose last claimed ingestion started longest ago (never: first) goes first, then that
   * owner's oldest file (creation time, then id). Atomic: two claims at once never get one file. The claim counts an
   * attempt (returned, 1 the first) and makes `now` the owner's last start.
   */
  claimNextIngestion(holder: string, now: Date, leaseMs: number): Promise<IngestionClaim | null>;
  /** Extends the holder's claim of the file to `until`; false when it holds it no more (ran out and was taken, ingested, gone). */
  renewIngestionClaim(id: string, holder: string, until: Date): Promise<boolean>;
  /**
   * The holder gives the file back after a failed attempt, due again at `retryAt`; `attemptCounted` false takes back the
   * attempt its claim counted (an engine was unreachable: an outage must not use up the attempts). No-op if not held.
   */
  releaseIngestionClaim(id: string, holder: string, retryAt: Date, attemptCounted: boolean): Promise<void>;
  /** Frees every claim `holder` has (a restarted process of a stable holder name takes its files back at once); how many. */
  releaseIngestionClaimsOf(holder: string): Promise<number>;
  /** Removes the record and stores its events atomically, keeping its idempotency key (if any); false when there was none. */
  delete(id: string, events: OutgoingEvent[]): Promise<boolean>;
  close(): Promise<void>;
}

export interface IngestionOutcome {
  status: IngestionStatus;
  error: string | null;
  cardCount: number;
  collectionId: string | null;
}

/** A pending file claimed for ingestion, and which attempt this is (1 the first; crashed attempts count). */
export interface IngestionClaim {
  file: FileRecord;
  attempt: number;
}

/** Facts about a stored object. */
export interface StoredObject {
  size: number;
}

/**
 * Byte storage for uploaded files, addressed by key. Writes are all-or-nothing: a reader never sees
 * a partly written object.
 */
export interface ObjectStore {
  /** Stores the bytes under key, replacing any previous object. */
  put(key: string, bytes: Buffer): Promise<void>;
  /**
   * A stream of the object's bytes from `offset` (default 0) to its end, so a reader cut off part way goes on from the
   * byte it reached; empty when `offset` is at or past the end. With `length`, at most that many bytes from `offset`
   * (a download's byte range; none when 0). NotFoundError when there is none.
   */
  open(key: string, offset?: number, length?: number): Promise<Readable>;
  /** The whole object; NotFoundError when there is none. */
  read(key: string): Promise<Buffer>;
  /** Size of the object, or null when there is none. */
  stat(key: string): Promise<StoredObject | null>;
  /** Removes the object; no error when there is none. */
  remove(key: string): Promise<void>;
  /** The objects whose key starts with `prefix`, each with when it was written (any order). */
  list(prefix: string): AsyncIterable<{ key: string; writtenAt: Date }>;
  close(): Promise<void>;
}

/** Thrown by a DocumentReader when a document's bytes cannot be read as its format. */
export class UnreadableDocumentError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UnreadableDocumentError';
  }
}

/** Reads documents of the accepted formats. */
export interface DocumentReader {
  /**
   * Check at upload time: the container is the format's (zip parts present, no decompression bomb) and the document
   * has text that is not whitespace; throws InvalidArgumentError naming the problem. `uploader` (the user id) lets a
   * bounded reader give each user a share of the checks.
   */
  inspect(format: DocumentFormat, bytes: Buffer, uploader?: string): Promise<void>;
  /** Headings and paragraphs in reading order; UnreadableDocumentError when the bytes are corrupt. */
  parse(format: DocumentFormat, bytes: Buffer): Promise<ParsedDocument>;
}

export interface NewCard {
  ownerId: string;
  html: string;
  link: string;
  private: boolean;
  /** Private because the file is (not by the owner's choice): making the file public makes the card public. */
  hiddenByFile: boolean;
  /**
   * The card takes the file's privacy as the cards service reads it from the files service when it makes the card,
   * instead of `private`/`hiddenByFile` (the privacy the ingestion read at its start).
   */
  privacyFromFile: boolean;
  tags: string[];
  fileId: string;
  /** The same key always yields the same card, so a retried ingestion makes no second copy. */
  idempotencyKey: string;
}

/** The cards service as the ingestion sees it. */
export interface CardsPort {
  /** The id of the created (or previously created, for the same key) card. */
  createCard(card: NewCard): Promise<string>;
  /**
   * Creates the file's collection holding the cards, once per file; returns its id (the one made, even for a file
   * deleted since). CardRejectedError (`file_id: no such file`) when there is none yet and the file is gone.
   */
  createFileCollection(input: { ownerId: string; fileId: string; fileName: string; isPublic: boolean; cardIds: string[] }): Promise<string>;
  /** Clears file_id/file_name on the cards and collection made from the file. */
  clearFileReferences(fileId: string): Promise<void>;
  /**
   * Made private, the file hides the owner's public cards carrying it; made public, it gives back only the cards it hid.
   * Its collection is public exactly when the file is.
   */
  applyFilePrivacy(input: { fileId: string; ownerId: string; private: boolean }): Promise<void>;
}

/** Thrown by CardsPort when the cards service refuses one card's content (too short, too long ...) or a file's collection. */
export class CardRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CardRejectedError';
  }
}
