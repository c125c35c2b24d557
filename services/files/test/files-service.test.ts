import { readdirSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, InvalidArgumentError, newId, NotFoundError, PermissionDeniedError, ResourceExhaustedError, SqliteOutboxStore, TooLargeError, UnauthenticatedError } from '@cards/platform';
import type { CallContext } from 'nice-grpc';
import { events } from '@cards/proto';
import { DiskObjectStore } from '../src/adapters/disk/disk-object-store';
import type { ObjectStore } from '../src/domain/ports';
import { OWN_CHECKS_BUSY_MESSAGE } from '../src/adapters/documents/bounded-document-reader';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { SqliteFileRepository } from '../src/adapters/sqlite/sqlite-file-repository';
import { FilesService, UNFINISHED_UPLOAD_MS, type UploadInput } from '../src/application/files-service';
import { fileHandlers } from '../src/grpc/file-handlers';
import { testTempDir } from '../../../test/support/cleanup';

const docx = readFileSync(join(__dirname, '../../../test/fixtures/documents/energy.docx'));
const DOCX_MIME = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
let dir: string;
let repository: SqliteFileRepository;
let objects: DiskObjectStore;
let service: FilesService;
let kicks = 0;

beforeEach(() => {
  dir = testTempDir('files-service-');
  repository = new SqliteFileRepository(join(dir, 'files.db'));
  objects = new DiskObjectStore(join(dir, 'objects'));
  kicks = 0;
  service = new FilesService({ repository, objects, reader: new LibraryDocumentReader(), maxFileBytes: 100_000, logger: createLogger('t', 'silent'), onEventsWritten: () => kicks++ });
});
afterEach(async () => {
  await repository.close();
  // A test that never used the store ends before its start made objects/.tmp: removing the directory first, that
  // mkdir would make it again.
  await objects.close();
  rmSync(dir, { recursive: true, force: true });
});

const upload = (overrides: Partial<UploadInput> = {}) =>
  service.upload({ callerId: newId(), fileName: 'energy.docx', mimeType: DOCX_MIME, private: false, tags: [], bytes: docx, ...overrides });

describe('FilesService', () => {
  describe('a read the gateway goes on with (resume) after the file was deleted or made private', () => {
    const readAll = async (content: NodeJS.ReadableStream) => {
      const parts: Buffer[] = [];
      for await (const part of content) parts.push(part as Buffer);
      return Buffer.concat(parts);
    };

    it('is sent the rest of the bytes while the store holds them; a read not resumed, or whose bytes are gone, is 404', async () => {
      const owner = newId();
      const reader = newId();
      const [deleted, hidden] = [await upload({ callerId: owner }), await upload({ callerId: owner })];
      await service.delete(owner, deleted.id);
      await service.setPrivacy(owner, hidden.id, true);
      const gone = await service.open(deleted.id, reader, 100, { resume: true });
      expect({ id: gone.record.id, size: gone.record.size }).toEqual({ id: deleted.id, size: docx.length });
      expect((await readAll(gone.content)).equals(docx.subarray(100))).toBe(true);
      const madePrivate = await service.open(hidden.id, reader, 100, { resume: true });
      expect(madePrivate.record).toMatchObject({ id: hidden.id, size: docx.length, private: true });
      expect((await readAll(madePrivate.content)).equals(docx.subarray(100))).toBe(true);
      // Resumed from byte 0 too (the gateway's first call was cut after the header, before a byte).
      const fromStart = await service.open(deleted.id, reader, 0, { resume: true });
      expect((await readAll(fromStart.content)).equals(docx)).toBe(true);
      // A read begun now (not resumed) is refused as before.
      await expect(service.open(deleted.id, reader, 0)).rejects.toBeInstanceOf(NotFoundError);
      await expect(service.open(deleted.id, reader, 100)).rejects.toBeInstanceOf(NotFoundError);
      await expect(service.open(hidden.id, reader, 100)).rejects.toBeInstanceOf(NotFoundError);
      // Once the bytes are gone (the grace passed), the resumed read is refused too.
      await objects.remove(deleted.id);
      await expect(service.open(deleted.id, reader, 100, { resume: true })).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  it('upload stores bytes, record and one FileUploaded event, then kicks the relay', async () => {
    const record = await upload({ tags: ['a,b', ' a ', '', 'c'] });
    expect(record).toMatchObject({ fileName: 'energy.docx', format: 'docx', size: docx.length, tags: ['a', 'b', 'c'], ingestionStatus: 'pending' });
    expect((await objects.read(record.id)).equals(docx)).toBe(true);
    const pending = await new SqliteOutboxStore(repository.db).pending(10);
    expect(pending).toHaveLength(1);
    const event = events.FileEvent.decode(pending[0]!.payload);
    expect(event.kind?.$case === 'uploaded' && event.kind.value.fileId).toBe(record.id);
    expect(kicks).toBe(1);
  });

  it('an upload cut short between its bytes and its record (the process killed) leaves no bytes behind after the next start\'s sweep', async () => {
    const done = await upload();
    // What a process killed between the two writes left: the marker, then the bytes, no record.
    const cut = newId();
    await objects.put(`unfinished-upload-${cut}`, Buffer.alloc(0));
    await objects.put(cut, docx);
    // A finished upload whose marker stayed (its removal failed): only the marker goes.
    await objects.put(`unfinished-upload-${done.id}`, Buffer.alloc(0));
    const names = () => readdirSync(join(dir, 'objects')).filter((n) => n !== '.tmp').sort();
    expect(names()).toEqual([cut, done.id, `unfinished-upload-${cut}`, `unfinished-upload-${done.id}`].sort());
    // Markers newer than the sweep's bound are uploads under way: kept.
    expect(await service.sweepUnfinishedUploads()).toBe(0);
    expect(names()).toHaveLength(4);
    const older = new Date(Date.now() - UNFINISHED_UPLOAD_MS - 60_000);
    for (const name of names().filter((n) => n.startsWith('unfinished-upload-'))) utimesSync(join(dir, 'objects', name), older, older);
    expect(await service.sweepUnfinishedUploads()).toBe(1);
    expect(names()).toEqual([done.id]);
    expect((await service.get(done.id, done.userId, { checkContent: true })).id).toBe(done.id);
  });

  it('the sweep reads a marker\'s age on the store\'s clock: a replica whose clock runs two hours ahead keeps the bytes of an upload under way', async () => {
    // The store (an S3 server, a shared file system) stamps what it is given two hours before this process's clock.
    const lagMs = 2 * 60 * 60 * 1000;
    const lagging: ObjectStore = {
      put: (key, bytes) => objects.put(key, bytes),
      open: (key, offset, length) => objects.open(key, offset, length),
      read: (key) => objects.read(key),
      stat: (key) => objects.stat(key),
      remove: (key) => objects.remove(key),
      async *list(prefix) {
        for await (const { key, writtenAt } of objects.list(prefix)) yield { key, writtenAt: new Date(writtenAt.getTime() - lagMs) };
      },
      close: async () => undefined,
    };
    const ahead = new FilesService({ repository, objects: lagging, reader: new LibraryDocumentReader(), maxFileBytes: 100_000, logger: createLogger('t', 'silent'), onEventsWritten: () => undefined });
    // Another replica's upload, between its bytes and its record, just now.
    const underWay = newId();
    await objects.put(`unfinished-upload-${underWay}`, Buffer.alloc(0));
    await objects.put(underWay, docx);
    expect(await ahead.sweepUnfinishedUploads()).toBe(0);
    expect(readdirSync(join(dir, 'objects')).filter((n) => n !== '.tmp').sort()).toEqual([underWay, `unfinished-upload-${underWay}`]);
  });

  it('upload leaves only its bytes in the store (its marker removed), and nothing when its record is refused', async () => {
    const done = await upload();
    expect(readdirSync(join(dir, 'objects')).filter((n) => n !== '.tmp')).toEqual([done.id]);
  });

  it('an upload whose bytes could not be stored leaves neither bytes nor marker; one whose bytes could not be removed after its record failed keeps its marker for the sweep', async () => {
    const stored = () => readdirSync(join(dir, 'objects')).filter((n) => n !== '.tmp').sort();
    const full: DiskObjectStore = Object.assign(Object.create(objects) as DiskObjectStore, {
      put: async (key: string, bytes: Buffer) => {
        if (!key.startsWith('unfinished-upload-')) throw new Error('ENOSPC: no space left on device');
        await objects.put(key, bytes);
      },
    });
    const failingPut = new FilesService({ repository, objects: full, reader: new LibraryDocumentReader(), maxFileBytes: 100_000, logger: createLogger('t', 'silent'), onEventsWritten: () => undefined });
    await expect(failingPut.upload({ callerId: newId(), fileName: 'energy.docx', mimeType: DOCX_MIME, private: false, tags: [], bytes: docx })).rejects.toThrow('ENOSPC');
    expect(stored()).toEqual([]);

    // The record's insert fails, and so does the removal of the bytes (the store unreachable a moment).
    const noRecord: SqliteFileRepository = Object.assign(Object.create(repository) as SqliteFileRepository, {
      create: async () => {
        throw new Error('SQLITE_FULL: database or disk is full');
      },
    });
    const unreachable: DiskObjectStore = Object.assign(Object.create(objects) as DiskObjectStore, {
      remove: async (key: string) => {
        if (!key.startsWith('unfinished-upload-')) throw new Error('connect ECONNREFUSED');
        await objects.remove(key);
      },
    });
    const failingRecord = new FilesService({ repository: noRecord, objects: unreachable, reader: new LibraryDocumentReader(), maxFileBytes: 100_000, logger: createLogger('t', 'silent'), onEventsWritten: () => undefined });
    await expect(failingRecord.upload({ callerId: newId(), fileName: 'energy.docx', mimeType: DOCX_MIME, private: false, tags: [], bytes: docx })).rejects.toThrow('SQLITE_FULL');
    const left = stored();
    expect(left).toHaveLength(2);
    const [bytes] = left.filter((n) => !n.startsWith('unfinished-upload-'));
    expect(left).toContain(`unfinished-upload-${bytes}`);
    // The next start's sweep, once the marker is old, takes both.
    const older = new Date(Date.now() - UNFINISHED_UPLOAD_MS - 60_000);
    utimesSync(join(dir, 'objects', `unfinished-upload-${bytes}`), older, older);
    expect(await service.sweepUnfinishedUploads()).toBe(1);
    expect(stored()).toEqual([]);
  });

  it('upload checks the document as its uploader\'s (the bounded reader\'s per-user share), storing nothing when refused', async () => {
    const uploaders: Array<string | undefined> = [];
    const sharing = new FilesService({
      repository,
      objects,
      reader: {
        inspect: async (_format, _bytes, uploader) => {
          uploaders.push(uploader);
          throw new ResourceExhaustedError(OWN_CHECKS_BUSY_MESSAGE);
        },
        parse: async () => ({ blocks: [] }),
      },
      maxFileBytes: 100_000,
      logger: createLogger('t', 'silent'),
      onEventsWritten: () => undefined,
    });
    const callerId = newId();
    await expect(sharing.upload({ callerId, fileName: 'energy.docx', mimeType: DOCX_MIME, private: false, tags: [], bytes: docx })).rejects.toThrow(OWN_CHECKS_BUSY_MESSAGE);
    expect(uploaders).toEqual([callerId]);
    expect(await new SqliteOutboxStore(repository.db).pending(10)).toEqual([]);
  });

  it('counts tag characters as code points: a tag of 200 emoji is stored, 201 refused', async () => {
    const emoji = '\u{1F600}';
    expect((await upload({ tags: [` ${emoji.repeat(200)} `] })).tags).toEqual([emoji.repeat(200)]);
    await expect(upload({ tags: [emoji.repeat(201)] })).rejects.toThrow(/each tag at most 200 characters/);
  });

  it('refuses without a caller, over the size limit, with too many tags; stores nothing then', async () => {
    await expect(upload({ callerId: '' })).rejects.toBeInstanceOf(UnauthenticatedError);
    await expect(upload({ bytes: Buffer.concat([docx, Buffer.alloc(100_000)]) })).rejects.toBeInstanceOf(TooLargeError);
    await expect(upload({ tags: Array.from({ length: 100 }, (_, i) => `t${i}`) })).rejects.toThrow(/at most 99 tags/);
    await expect(upload({ fileName: 'energy.pdf', mimeType: 'application/pdf' })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await new SqliteOutboxStore(repository.db).pending(10)).toEqual([]);
  });

  it('open from an offset streams the rest of the file, still checking visibility; an offset outside the file is refused', async () => {
    const owner = newId();
    const record = await upload({ callerId: owner, private: true });
    const rest = async (offset: number) => {
      const chunks: Buffer[] = [];
      for await (const chunk of (await service.open(record.id, owner, offset)).content) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    };
    expect((await rest(1000)).equals(docx.subarray(1000))).toBe(true);
    expect((await rest(docx.length)).length).toBe(0);
    await expect(service.open(record.id, newId(), 1000)).rejects.toBeInstanceOf(NotFoundError);
    for (const offset of [-1, docx.length + 1, 0.5]) await expect(service.open(record.id, owner, offset)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('a record whose stored bytes are missing: open is NotFound, and so is GetFile asked to check the content (a stat, no read)', async () => {
    const owner = newId();
    const record = await upload({ callerId: owner, private: true });
    const handlers = fileHandlers(service);
    const getFile = (checkContent: boolean) => handlers.getFile({ fileId: record.id, callerId: owner, offset: 0, checkContent, resume: false }, {} as CallContext);
    expect((await getFile(true)).size).toBe(docx.length);
    await objects.remove(record.id);
    await expect(service.open(record.id, owner)).rejects.toThrow(new NotFoundError('File not found'));
    await expect(getFile(true)).rejects.toThrow(new NotFoundError('File not found'));
    // Without the check GetFile reads the record only (the listing's and the download's visibility check).
    expect((await getFile(false)).id).toBe(record.id);
    // Someone else's private file is NotFound before its bytes are looked for.
    await expect(service.get(record.id, newId(), { checkContent: true })).rejects.toThrow(new NotFoundError('File not found'));
  });

  it('visibility: private files are the owner\'s alone; others may read public ones but not change them', async () => {
    const owner = newId();
    const other = newId();
    const secret = await upload({ callerId: owner, private: true });
    const open = await upload({ callerId: owner });
    await expect(service.get(secret.id, other)).rejects.toBeInstanceOf(NotFoundError);
    await expect(service.get(secret.id, undefined)).rejects.toBeInstanceOf(NotFoundError);
    expect((await service.get(secret.id, owner)).id).toBe(secret.id);
    expect((await service.listUserFiles(owner, other)).items.map((f) => f.id)).toEqual([open.id]);
    expect((await service.listUserFiles(owner, owner)).items.map((f) => f.id).sort()).toEqual([secret.id, open.id].sort());
    await expect(service.setPrivacy(other, secret.id, false)).rejects.toBeInstanceOf(NotFoundError);
    await expect(service.setPrivacy(other, open.id, true)).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(service.delete(other, open.id)).rejects.toBeInstanceOf(PermissionDeniedError);
    await service.setPrivacy(owner, open.id, true);
    await expect(service.get(open.id, other)).rejects.toBeInstanceOf(NotFoundError);
    // The change goes out as an event for the file's cards and collection; setting the same value again sends none.
    await service.setPrivacy(owner, open.id, true);
    const changes = (await new SqliteOutboxStore(repository.db).pending(10))
      .map((e) => events.FileEvent.decode(e.payload).kind)
      .filter((kind) => kind?.$case === 'privacyChanged');
    expect(changes).toEqual([{ $case: 'privacyChanged', value: { fileId: open.id, userId: owner, private: true } }]);
    await service.delete(owner, secret.id);
    await expect(service.get(secret.id, owner)).rejects.toBeInstanceOf(NotFoundError);
    await expect(service.get('not-a-uuid', owner)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('a privacy change to the value the file has already writes nothing: no event, updated_at kept, the same answer', async () => {
    const owner = newId();
    const file = await upload({ callerId: owner, private: true });
    repository.db.prepare('UPDATE files SET updated_at = ? WHERE id = ?').run('2020-01-01T00:00:00.000Z', file.id);
    const writes = jest.spyOn(repository, 'setPrivacy');
    kicks = 0;
    await expect(service.setPrivacy(owner, file.id, true)).resolves.toBeUndefined();
    expect(writes).not.toHaveBeenCalled();
    expect(kicks).toBe(0);
    expect((await service.get(file.id, owner)).updatedAt).toEqual(new Date('2020-01-01T00:00:00.000Z'));
    await service.setPrivacy(owner, file.id, false);
    expect(writes).toHaveBeenCalledTimes(1);
    expect((await service.get(file.id, owner)).updatedAt.getTime()).toBeGreaterThan(Date.parse('2020-01-01T00:00:00.000Z'));
  });
});
