import type { Readable } from 'node:stream';
import { AlreadyExistsError, InvalidArgumentError, NotFoundError, pageLimit, PermissionDeniedError, refuseIfProblem, earlierCreateForKey, TooLargeError, Topics, UnauthenticatedError, isUuid, newId, type Logger, type Page } from '@cards/platform';
import { events } from '@cards/proto';
import { MAX_FILE_TAGS, splitTags, tagsProblem } from '@cards/card-rules';
import { checkMagicBytes, checkMimeType, formatFromFileName } from '../domain/document-format';
import type { FileRecord } from '../domain/model';
import type { DocumentReader, FileRepository, ObjectStore } from '../domain/ports';

/** The most files one page holds: a file may carry 100 tags of 200 characters, so 200 files stay below ~4.2 MB as gRPC. */
export const MAX_FILE_PAGE_SIZE = 200;

/** The header of a resumed read whose file was deleted since: only `id` and `size` are told (FilesService.resumed). */
const GONE_RECORD: Omit<FileRecord, 'id' | 'size'> = {
  userId: '',
  fileName: '',
  mimeType: '',
  format: 'pdf',
  private: true,
  tags: [],
  ocFilePath: null,
  ingestionStatus: 'done',
  ingestionError: null,
  cardCount: 0,
  collectionId: null,
  idempotencyKey: null,
  requestFingerprint: null,
  createdAt: new Date(0),
  updatedAt: new Date(0),
};

export interface UploadInput {
  callerId: string;
  fileName: string;
  mimeType: string;
  private: boolean;
  tags: string[];
  bytes: Buffer;
  /** The client's key: an upload repeated with it answers the record the first one stored (see upload). */
  idempotencyKey?: string;
  /** The fingerprint of the request that carried the key; a key stored with another one refuses the upload. */
  requestFingerprint?: string;
}

export interface FilesServiceDeps {
  repository: FileRepository;
  objects: ObjectStore;
  reader: DocumentReader;
  maxFileBytes: number;
  logger: Logger;
  /** Called after a commit that wrote events (the outbox relay's kick). */
  onEventsWritten(): void;
}


/**
 * The object an upload writes before its bytes and removes once its record is stored (or refused): left behind, it
 * names bytes that no record points at (the process killed between the two), which sweepUnfinishedUploads removes.
 */
const UPLOAD_MARKER_PREFIX = 'unfinished-upload-';

/**
 * How old an unfinished upload's marker must be for the sweep to take its bytes: an upload stores its record a few
 * milliseconds after its bytes, so a marker an hour old was left by a process killed in between, never one under way.
 */
export const UNFINISHED_UPLOAD_MS = 60 * 60 * 1000;

/** Use cases of the files service: upload, read, list, change privacy, delete. */
export class FilesService {
  constructor(private readonly deps: FilesServiceDeps) {}

  get maxFileBytes(): number {
    return this.deps.maxFileBytes;
  }

  /**
   * Stores an uploaded document; its ingestion follows from the FileUploaded event stored with the record. With an
   * idempotency key, an upload repeated by the caller (a retry after a lost answer, a second click, or both at once)
   * answers the record the first one stored and stores, reads and ingests nothing; AlreadyExistsError when that file
   * was deleted since (storing it again would bring back what the user deleted), and IdempotencyKeyReusedError when the
   * key came with a request of another fingerprint.
   */
  async upload(input: UploadInput): Promise<FileRecord> {
    if (!input.callerId) throw new UnauthenticatedError('You must be logged in');
    const key = input.idempotencyKey || undefined;
    if (key) {
      const earlier = await this.earlierUpload(input.callerId, key, input.requestFingerprint);
      if (earlier) return earlier;
    }
    const format = formatFromFileName(input.fileName);
    const mimeType = checkMimeType(format, input.mimeType);
    if (input.bytes.length > this.deps.maxFileBytes) {
      throw new TooLargeError(`base64_docx_file: the file is ${input.bytes.length} bytes, above the limit of ${this.deps.maxFileBytes}`);
    }
    // Split at commas like the cards service does (tags are shown comma-joined).
    const tags = splitTags(input.tags);
    refuseIfProblem('tag_set', tagsProblem(tags, MAX_FILE_TAGS));
    checkMagicBytes(format, input.bytes);
    await this.deps.reader.inspect(format, input.bytes, input.callerId);

    const now = new Date();
    const record: FileRecord = {
      id: newId(),
      userId: input.callerId,
      fileName: input.fileName.trim(),
      mimeType,
      format,
      private: input.private,
      size: input.bytes.length,
      tags,
      ocFilePath: null,
      ingestionStatus: 'pending',
      ingestionError: null,
      cardCount: 0,
      collectionId: null,
      idempotencyKey: key ?? null,
      requestFingerprint: (key && input.requestFingerprint) || null,
      createdAt: now,
      updatedAt: now,
    };
    // Bytes first: a record (and its ingestion event) never points at bytes that are not there. The marker before them
    // says they are not known to have a record yet (sweepUnfinishedUploads), until the record is stored.
    const marker = `${UPLOAD_MARKER_PREFIX}${record.id}`;
    await this.deps.objects.put(marker, Buffer.alloc(0));
    try {
      await this.deps.objects.put(record.id, input.bytes);
    } catch (err) {
      // A put that failed to this process may still have landed (an S3 answer lost): the marker goes with the bytes only.
      await this.removeCutUpload(record.id, marker);
      throw err;
    }
    const uploaded = events.FileEvent.encode({
      eventId: newId(),
      occurredAt: now,
      kind: {
        $case: 'uploaded',
        value: { fileId: record.id, userId: record.userId, fileName: record.fileName, mimeType, private: record.private, tags, size: record.size },
      },
    }).finish();
    try {
      await this.deps.repository.create(record, [{ topic: Topics.file, key: record.id, payload: uploaded }]);
    } catch (err) {
      await this.removeCutUpload(record.id, marker);
      // The same upload at the same moment stored its record first.
      const earlier = err instanceof AlreadyExistsError && key ? await this.earlierUpload(input.callerId, key, input.requestFingerprint) : null;
      if (earlier) return earlier;
      throw err;
    }
    this.deps.onEventsWritten();
    // Left behind on a failure, the sweep finds the record and only removes the marker.
    await this.deps.objects.remove(marker).catch((err: unknown) => this.deps.logger.warn({ err, fileId: record.id }, 'removing an upload marker failed; the next start removes it'));
    this.deps.logger.info({ fileId: record.id, format, size: record.size }, 'file uploaded');
    return record;
  }

  /**
   * Removes the bytes of uploads cut short between storing their bytes and their record (a process killed, an engine
   * lost), whose markers are older than `olderThanMs`, and those markers; a marker whose record exists is only removed.
   * The age is read on the store's clock, not this process's: the sweep writes a marker of its own and measures the
   * others against its written time (the S3 server's or the file system's clock, which set every marker's), so a
   * replica whose clock runs ahead never takes an upload under way on another replica for an old one.
   * Answers how many uploads' bytes it removed.
   */
  async sweepUnfinishedUploads(olderThanMs: number = UNFINISHED_UPLOAD_MS): Promise<number> {
    const { objects, repository } = this.deps;
    // Not a UUID after the prefix: another sweep takes it for no upload's, and removes it only once it is as old.
    const probe = `${UPLOAD_MARKER_PREFIX}clock-${newId()}`;
    await objects.put(probe, Buffer.alloc(0));
    try {
      const markers: Array<{ key: string; writtenAt: Date }> = [];
      let storeNow: Date | undefined;
      for await (const marker of objects.list(UPLOAD_MARKER_PREFIX)) {
        if (marker.key === probe) storeNow = marker.writtenAt;
        else markers.push(marker);
      }
      if (!storeNow) throw new Error(`the sweep's own marker ${probe} was not listed; the store's clock is unknown`);
      const before = storeNow.getTime() - olderThanMs;
      let removed = 0;
      for (const { key, writtenAt } of markers) {
        if (writtenAt.getTime() >= before) continue;
        const fileId = key.slice(UPLOAD_MARKER_PREFIX.length);
        if (isUuid(fileId) && !(await repository.get(fileId))) {
          await objects.remove(fileId);
          removed++;
        }
        await objects.remove(key);
      }
      return removed;
    } finally {
      await objects.remove(probe).catch(() => undefined);
    }
  }

  /**
   * Removes the bytes of an upload that failed before its record was stored, then its marker; when the bytes could not
   * be removed the marker stays, so that the next start's sweep removes them (without it nothing would name them).
   */
  private async removeCutUpload(fileId: string, marker: string): Promise<void> {
    const { objects, logger } = this.deps;
    try {
      await objects.remove(fileId);
    } catch (err) {
      logger.warn({ err, fileId }, 'removing the bytes of a failed upload failed; the next start removes them');
      return;
    }
    await objects.remove(marker).catch(() => undefined);
  }

  /** What an earlier upload with the caller's key stored: its record, or null for none (see upload for the refusals). */
  private async earlierUpload(callerId: string, key: string, requestFingerprint: string | undefined): Promise<FileRecord | null> {
    const { repository } = this.deps;
    return earlierCreateForKey(
      { live: () => repository.findByIdempotencyKey(callerId, key), deleted: () => repository.findDeletedIdempotencyKey(callerId, key) },
      requestFingerprint,
      'a file',
      'Idempotency-Key: the file this key uploaded was deleted since; send a new key to upload it again',
    );
  }

  /**
   * The record when the caller may see it: public, or the caller's own. NotFoundError otherwise, and with `checkContent`
   * also when the record's stored bytes are missing (the object's size asked of the store, nothing read), as open
   * answers: what a HEAD of the file asks, so that it answers what the read would.
   */
  async get(fileId: string, callerId: string | undefined, { checkContent = false } = {}): Promise<FileRecord> {
    if (!isUuid(fileId)) throw new InvalidArgumentError('file_id: must be a UUID');
    const record = await this.deps.repository.get(fileId.toLowerCase());
    if (!record || (record.private && record.userId !== callerId)) throw new NotFoundError('File not found');
    if (checkContent && !(await this.deps.objects.stat(record.id))) throw new NotFoundError('File not found');
    return record;
  }

  /**
   * The record and a stream of its bytes from `offset` (a reader going on from the byte it reached), for a caller who
   * may see it; InvalidArgumentError when the offset is not a byte position of the file (0 to its size). `range`, given
   * the record, may ask for only `length` bytes from `start` instead (a download's Range).
   */
  async open(
    fileId: string,
    callerId: string | undefined,
    offset = 0,
    { resume = false, range }: { resume?: boolean; range?: (record: FileRecord) => { start: number; length: number } | null } = {},
  ): Promise<{ record: FileRecord; content: Readable }> {
    const record = resume ? await this.resumed(fileId, callerId) : await this.get(fileId, callerId);
    // A download's byte range, chosen from the record (its size, its validators); null for the whole file.
    const part = range?.(record) ?? null;
    const from = part ? part.start : offset;
    if (!Number.isSafeInteger(from) || from < 0 || from > record.size) throw new InvalidArgumentError(`offset: must be from 0 to the file's size (${record.size})`);
    try {
      return { record, content: await this.deps.objects.open(record.id, from, part?.length) };
    } catch (err) {
      if (err instanceof NotFoundError) throw new NotFoundError('File not found');
      throw err;
    }
  }

  /**
   * The file of a read the gateway opened (the caller could see it then) and goes on with: its record when the caller
   * may still see it; else, while the store still holds its bytes (a deleted file's are kept FILE_DELETED_BYTES_GRACE_MS,
   * see subscribeToFileEvents), the record as it is now (made private since) or, deleted, one naming only its id and
   * size. So a read under way completes from what was opened, as a raw download's stream does, instead of being cut.
   */
  private async resumed(fileId: string, callerId: string | undefined): Promise<FileRecord> {
    if (!isUuid(fileId)) throw new InvalidArgumentError('file_id: must be a UUID');
    const id = fileId.toLowerCase();
    const record = await this.deps.repository.get(id);
    if (record && (!record.private || record.userId === callerId)) return record;
    const stored = await this.deps.objects.stat(id);
    if (!stored) throw new NotFoundError('File not found');
    return record ?? { ...GONE_RECORD, id, size: stored.size };
  }

  /**
   * The user's files the caller may see (all of them for the user, public ones for others), newest first: at most
   * `pageSize` (capped at MAX_FILE_PAGE_SIZE) after the `pageToken` a previous page gave; page size 0 with no token
   * lists them all in one page.
   */
  async listUserFiles(userId: string, callerId: string | undefined, pageSize = 0, pageToken = ''): Promise<Page<FileRecord>> {
    if (!isUuid(userId)) throw new InvalidArgumentError('user_id: must be a UUID');
    const owner = userId.toLowerCase();
    const includePrivate = callerId === owner;
    const limit = pageLimit(pageSize, pageToken, MAX_FILE_PAGE_SIZE);
    if (limit === undefined) {
      const records = await this.deps.repository.listByUser(owner);
      return { items: includePrivate ? records : records.filter((r) => !r.private) };
    }
    return this.deps.repository.listPageByUser(owner, includePrivate, limit, pageToken === '' ? undefined : pageToken);
  }

  /** Sets the file's privacy; its cards and collection follow through the FilePrivacyChanged event. The same value again changes nothing. */
  async setPrivacy(callerId: string, fileId: string, isPrivate: boolean): Promise<void> {
    const record = await this.owned(callerId, fileId);
    if (record.private === isPrivate) return;
    const now = new Date();
    const changed = events.FileEvent.encode({
      eventId: newId(),
      occurredAt: now,
      kind: { $case: 'privacyChanged', value: { fileId: record.id, userId: record.userId, private: isPrivate } },
    }).finish();
    if (!(await this.deps.repository.setPrivacy(record.id, isPrivate, now, [{ topic: Topics.file, key: record.id, payload: changed }]))) throw new NotFoundError('File not found');
    this.deps.onEventsWritten();
  }

  /** Removes the record now; the bytes and the cards' file references follow through the FileDeleted event. */
  async delete(callerId: string, fileId: string): Promise<void> {
    const record = await this.owned(callerId, fileId);
    const deleted = events.FileEvent.encode({
      eventId: newId(),
      occurredAt: new Date(),
      kind: { $case: 'deleted', value: { fileId: record.id, userId: record.userId } },
    }).finish();
    if (!(await this.deps.repository.delete(record.id, [{ topic: Topics.file, key: record.id, payload: deleted }]))) throw new NotFoundError('File not found');
    this.deps.onEventsWritten();
    this.deps.logger.info({ fileId: record.id }, 'file deleted');
  }

  private async owned(callerId: string, fileId: string): Promise<FileRecord> {
    if (!callerId) throw new UnauthenticatedError('You must be logged in');
    const record = await this.get(fileId, callerId);
    if (record.userId !== callerId) throw new PermissionDeniedError('Only the owner can change this file');
    return record;
  }
}
