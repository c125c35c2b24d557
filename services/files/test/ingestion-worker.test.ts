import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, newId, RetryableUnavailableError, serviceMetrics, SqliteEventLog, Topics } from '@cards/platform';
import { tagsProblem } from '@cards/card-rules';
import Database from 'better-sqlite3';
import { events } from '@cards/proto';
import { DiskObjectStore } from '../src/adapters/disk/disk-object-store';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { SqliteFileRepository } from '../src/adapters/sqlite/sqlite-file-repository';
import { FILE_CHANGES_GROUP, subscribeToFileEvents } from '../src/application/file-event-subscriptions';
import { IngestionScheduler } from '../src/application/ingestion-scheduler';
import { CARDS_NOT_STORED, IngestionWorker, titleTag } from '../src/application/ingestion-worker';
import { CardRejectedError, type CardsPort, type DocumentReader, type FileRepository, type NewCard } from '../src/domain/ports';
import { aFile } from './builders';
import { testTempDir } from '../../../test/support/cleanup';

const FIXTURES = join(__dirname, '../../../test/fixtures/documents');

/**
 * The cards service's side of the contract the worker relies on: CreateCard with an idempotency key
 * returns the same card again; CreateFileCollection is idempotent per file. It can be told to fail.
 */
class RecordingCards implements CardsPort {
  readonly cards = new Map<string, NewCard & { id: string }>();
  readonly collections = new Map<string, { id: string; cardIds: string[]; isPublic: boolean; fileName: string }>();
  readonly cleared: string[] = [];
  readonly privacyApplied: { fileId: string; ownerId: string; private: boolean }[] = [];
  createCalls = 0;
  failAfter = Infinity;
  reject: (card: NewCard) => boolean = () => false;
  /** Where the cards service looks the file up (GetFile) when set: a card or collection of a file that is gone is refused. */
  files: FileRepository | undefined;
  /** Called after each card made, with the number made so far. */
  afterCreate: (made: number) => Promise<void> = async () => undefined;

  async createCard(card: NewCard): Promise<string> {
    this.createCalls++;
    if (this.createCalls > this.failAfter) throw new Error('UNAVAILABLE: cards service went away');
    if (this.reject(card)) throw new CardRejectedError('card_html: too long');
    const existing = this.cards.get(card.idempotencyKey);
    if (existing) return existing.id;
    if (this.files && !(await this.files.get(card.fileId))) throw new CardRejectedError('file_uuid: no such file');
    const id = newId();
    this.cards.set(card.idempotencyKey, { ...card, id });
    await this.afterCreate(this.cards.size);
    return id;
  }
  async createFileCollection(input: { ownerId: string; fileId: string; fileName: string; isPublic: boolean; cardIds: string[] }): Promise<string> {
    const existing = this.collections.get(input.fileId);
    if (existing) return existing.id;
    const file = this.files ? await this.files.get(input.fileId) : undefined;
    if (this.files && (!file || file.userId !== input.ownerId)) throw new CardRejectedError('file_id: no such file');
    const made = { id: newId(), cardIds: input.cardIds, isPublic: input.isPublic, fileName: input.fileName };
    this.collections.set(input.fileId, made);
    return made.id;
  }
  async clearFileReferences(fileId: string): Promise<void> {
    this.cleared.push(fileId);
    this.onChange();
  }
  failPrivacy = false;
  /** How many cards existed when each privacy application arrived. */
  readonly cardsAtPrivacy: number[] = [];
  onChange: () => void = () => undefined;
  async applyFilePrivacy(input: { fileId: string; ownerId: string; private: boolean }): Promise<void> {
    if (this.failPrivacy) throw new Error('INTERNAL: Internal error');
    this.privacyApplied.push(input);
    this.cardsAtPrivacy.push(this.cards.size);
    this.onChange();
  }
}

let dir: string;
let repository: SqliteFileRepository;
let objects: DiskObjectStore;
let cards: RecordingCards;
let worker: IngestionWorker;
const logger = createLogger('files-test', 'silent');

beforeEach(() => {
  dir = testTempDir('files-ingest-');
  repository = new SqliteFileRepository(join(dir, 'files.db'));
  objects = new DiskObjectStore(join(dir, 'objects'));
  cards = new RecordingCards();
  worker = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger, maxAttempts: 3, concurrency: 1 });
});
afterEach(async () => {
  await repository.close();
  // A test that never used the store ends before its start made objects/.tmp: removing the directory first, that
  // mkdir would make it again.
  await objects.close();
  rmSync(dir, { recursive: true, force: true });
});

async function stored(fixture: string, overrides: Parameters<typeof aFile>[0] = {}) {
  const bytes = readFileSync(join(FIXTURES, fixture));
  const format = fixture.split('.').pop() as 'docx';
  const record = aFile({ fileName: fixture, format, size: bytes.length, tags: ['mine'], ...overrides }).build();
  await objects.put(record.id, bytes);
  await repository.create(record, []);
  return record;
}

/** Reads documents as the library does, except that while held, each parse waits until released. */
class HeldReader implements DocumentReader {
  private readonly library = new LibraryDocumentReader();
  private held: { started: () => void; release: Promise<void> } | undefined;
  inspect: DocumentReader['inspect'] = (format, bytes) => this.library.inspect(format, bytes);
  async parse(format: Parameters<DocumentReader['parse']>[0], bytes: Buffer) {
    const held = this.held;
    if (held) {
      held.started();
      await held.release;
    }
    return this.library.parse(format, bytes);
  }
  /** Holds the next parses; resolves `started` when one begins. */
  hold(): { started: Promise<void>; release: () => void } {
    let started!: () => void;
    let release!: () => void;
    const startedPromise = new Promise<void>((r) => (started = r));
    this.held = { started, release: new Promise<void>((r) => (release = r)) };
    return { started: startedPromise, release: () => { this.held = undefined; release(); } };
  }
}

function changeEvent(kind: 'deleted' | 'privacyChanged', record: { id: string; userId: string }): Uint8Array {
  const value = { fileId: record.id, userId: record.userId, private: true };
  return events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(), kind: kind === 'deleted' ? { $case: 'deleted', value } : { $case: 'privacyChanged', value } }).finish();
}

function uploadedPayload(fileId: string): Uint8Array {
  return events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(), kind: { $case: 'uploaded', value: { fileId, userId: '', fileName: '', mimeType: '', private: false, tags: [], size: 0 } } }).finish();
}

describe('IngestionWorker', () => {
  it('makes one card per heading with title tag, file tags, privacy (hidden by the private file), link and key, then the collection', async () => {
    const record = await stored('energy.docx', { private: true });
    const result = await worker.ingest(record.id);
    expect(result.status).toBe('done');
    const made = [...cards.cards.values()];
    expect(made.map((c) => [c.idempotencyKey, c.tags, c.link, c.private, c.hiddenByFile, c.fileId])).toEqual([
      [`${record.id}:0`, ['mine', 'Solar Panels on Village Rooftops'], 'https://example.com/energy/solar-primer', true, true, record.id],
      [`${record.id}:1`, ['mine', 'Wind Turbines and Gearboxes'], 'https://example.com/energy/wind-maintenance', true, true, record.id],
      [`${record.id}:2`, ['mine', 'Pumped Hydro Storage'], 'https://example.net/energy/pumped-hydro', true, true, record.id],
    ]);
    expect(made[0]!.html.startsWith('<h2>Solar Panels on Village Rooftops</h2>\n<p>Photovoltaic panels')).toBe(true);
    expect(made[0]!.html).toContain('<a href="https://example.com/energy/solar-primer">solar primer from the cooperative</a>');
    expect(cards.collections.get(record.id)).toMatchObject({ cardIds: made.map((c) => c.id), isPublic: false, fileName: 'energy.docx' });
    expect(await repository.get(record.id)).toMatchObject({ ingestionStatus: 'done', cardCount: 3, collectionId: result.collectionId });
  });

  it('a crash mid-document leaves the file pending, and the redelivery creates no second copy of any card', async () => {
    const record = await stored('marine.odt');
    cards.failAfter = 2;
    await expect(worker.ingest(record.id, false)).rejects.toThrow(/went away/);
    expect(cards.cards.size).toBe(2);
    expect(await repository.get(record.id)).toMatchObject({ ingestionStatus: 'pending' });
    expect(cards.collections.size).toBe(0);

    cards.failAfter = Infinity;
    await worker.ingest(record.id, false);
    expect(cards.cards.size).toBe(3);
    expect(cards.collections.get(record.id)!.cardIds).toHaveLength(3);
    expect(new Set(cards.collections.get(record.id)!.cardIds).size).toBe(3);
    expect([...cards.cards.values()].map((c) => [c.private, c.hiddenByFile])).toEqual([[false, false], [false, false], [false, false]]);

    // A late duplicate delivery of a finished file does nothing.
    const calls = cards.createCalls;
    await worker.ingest(record.id, false);
    expect(cards.createCalls).toBe(calls);
  });

  it('the last attempt records the failure instead of throwing', async () => {
    const record = await stored('marine.odt');
    cards.failAfter = 0;
    await worker.ingest(record.id, true);
    // One line for the uploader, not the cards service's or gRPC's own words (those are logged).
    const failed = await repository.get(record.id);
    expect(failed).toMatchObject({ ingestionStatus: 'failed', ingestionError: CARDS_NOT_STORED });
    expect(failed!.ingestionError).not.toMatch(/went away/);
  });

  it('a corrupt document fails at once with the reason, no cards and no collection', async () => {
    const record = await stored('corrupt.docx');
    await worker.ingest(record.id, false);
    expect(await repository.get(record.id)).toMatchObject({ ingestionStatus: 'failed', ingestionError: expect.stringMatching(/could not be read/) });
    expect(cards.createCalls).toBe(0);
    expect(cards.collections.size).toBe(0);
  });

  it('a document with no passage over 70 words fails with that reason', async () => {
    const record = await stored('short.odt');
    const result = await worker.ingest(record.id);
    expect(result).toMatchObject({ status: 'failed', error: 'the document holds no passage of more than 70 words, so no card was made: its text has 8 words' });
    expect(cards.collections.size).toBe(0);
  });

  it('logs a failure the document caused (too little text, unreadable) below error, and one of the system (cards not stored) at error', async () => {
    const lines: Array<{ level: number; msg: string; fileId?: string; reason?: string }> = [];
    const logged = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger: createLogger('files-test', 'info', { write: (line: string) => lines.push(JSON.parse(line)) }), maxAttempts: 3, concurrency: 1 });
    const failures = () => lines.filter((l) => l.msg === 'file ingestion failed');
    const short = await stored('short.odt');
    await logged.ingest(short.id);
    expect(failures()).toEqual([expect.objectContaining({ level: 30, fileId: short.id, reason: expect.stringMatching(/more than 70 words/) })]);
    const corrupt = await stored('corrupt.docx');
    await logged.ingest(corrupt.id);
    expect(failures()[1]).toEqual(expect.objectContaining({ level: 40, fileId: corrupt.id, reason: expect.stringMatching(/could not be read/) }));
    const good = await stored('marine.odt');
    cards.failAfter = 0;
    await logged.ingest(good.id, true);
    expect(failures()[2]).toEqual(expect.objectContaining({ level: 50, fileId: good.id, reason: CARDS_NOT_STORED }));
    expect(lines.filter((l) => l.level >= 50)).toHaveLength(1);
    // A file's name can say whose it is ("Medical-report-Jane-Doe.docx"): the lines name the file by its id.
    expect(JSON.stringify(lines)).not.toMatch(/short\.odt|corrupt\.docx|marine\.odt|fileName/);
  });

  it('counts each ingestion that ends in card_library_ingestions_total: done, or failed by kind of reason; an attempt to be retried not', async () => {
    const count = async (outcome: string, reason: string) =>
      (await serviceMetrics.getSingleMetric('card_library_ingestions_total')!.get()).values.find((v) => v.labels.outcome === outcome && v.labels.reason === reason)?.value ?? 0;
    const kinds = [['done', ''], ['failed', 'no_cards'], ['failed', 'unreadable'], ['failed', 'cards_not_stored']] as const;
    const before = await Promise.all(kinds.map(([o, r]) => count(o, r)));
    const counted = async () => (await Promise.all(kinds.map(([o, r]) => count(o, r)))).map((n, i) => n - before[i]!);

    await worker.ingest((await stored('marine.odt')).id);
    await worker.ingest((await stored('short.odt')).id);
    await worker.ingest((await stored('corrupt.docx')).id);
    expect(await counted()).toEqual([1, 1, 1, 0]);
    const failing = await stored('marine.odt');
    cards.failAfter = 0;
    await expect(worker.ingest(failing.id, false)).rejects.toThrow(/went away/);
    expect(await counted()).toEqual([1, 1, 1, 0]);
    await worker.ingest(failing.id, true);
    expect(await counted()).toEqual([1, 1, 1, 1]);
  });

  it('passages the cards service refuses are skipped; the rest still make a collection', async () => {
    const record = await stored('energy.docx');
    cards.reject = (c) => c.tags.includes('Wind Turbines and Gearboxes');
    const result = await worker.ingest(record.id);
    expect(result.status).toBe('done');
    expect(result.cardIds).toHaveLength(2);
  });

  it('a file deleted while it was ingested gets its new references cleared; a file already gone is skipped', async () => {
    const record = await stored('energy.docx');
    const original = cards.createFileCollection.bind(cards);
    cards.createFileCollection = async (input) => {
      await repository.delete(record.id, []);
      return original(input);
    };
    await worker.ingest(record.id);
    expect(cards.cleared).toEqual([record.id]);
    expect((await worker.ingest(newId())).status).toBe('skipped');
  });

  it('a file deleted mid-ingestion (on another replica) stops the cards: those made stay without the reference, no collection, one info line', async () => {
    const lines: Array<{ level: number; msg: string; cards?: number }> = [];
    const logged = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger: createLogger('files-test', 'info', { write: (line: string) => lines.push(JSON.parse(line)) }), maxAttempts: 3, concurrency: 4 });
    const record = await stored('bench/book-100-pages.docx');
    cards.files = repository;
    // The deletion as another replica stores it: the record goes, the ingestion here hears of it from no event.
    cards.afterCreate = async (made) => {
      if (made === 10) await repository.delete(record.id, []);
    };
    const result = await logged.ingest(record.id);
    expect(result.status).toBe('skipped');
    // The book makes 250 cards: after the deletion only the passages already under way (4 at once) were made, and each
    // of the 4 workers sent at most one more, refused, which told it the file was gone.
    expect(cards.cards.size).toBeGreaterThanOrEqual(10);
    expect(cards.cards.size).toBeLessThanOrEqual(10 + 3);
    expect(cards.createCalls).toBeLessThanOrEqual(cards.cards.size + 4);
    expect(cards.collections.size).toBe(0);
    // The cards made keep no reference to the deleted file, even if the deletion's cleanup ran before the last of them.
    expect(cards.cleared).toEqual([record.id]);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
    expect(lines.filter((l) => /deleted during its ingestion/.test(l.msg))).toEqual([expect.objectContaining({ level: 30, cards: cards.cards.size })]);
    expect(JSON.stringify(lines)).not.toContain('fileName');
  }, 30_000);

  it('a file deleted before its collection was made gets none, and its cards lose the reference', async () => {
    const record = await stored('energy.docx');
    cards.afterCreate = async (made) => {
      if (made === 3) await repository.delete(record.id, []);
    };
    const result = await worker.ingest(record.id);
    expect(result.status).toBe('skipped');
    expect(cards.cards.size).toBe(3);
    expect(cards.collections.size).toBe(0);
    expect(cards.cleared).toEqual([record.id]);
  });

  it('a file deleted after the last look, just before the cards service makes its collection, gets none: one info line, its cards lose the reference', async () => {
    const lines: Array<{ level: number; msg: string; cards?: number }> = [];
    const logged = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger: createLogger('files-test', 'info', { write: (line: string) => lines.push(JSON.parse(line)) }), maxAttempts: 3 });
    const record = await stored('energy.docx');
    cards.files = repository;
    const original = cards.createFileCollection.bind(cards);
    cards.createFileCollection = async (input) => {
      await repository.delete(record.id, []);
      return original(input);
    };
    const result = await logged.ingest(record.id);
    expect(result).toEqual({ status: 'skipped', cardIds: [], collectionId: null });
    expect(cards.cards.size).toBe(3);
    expect(cards.collections.size).toBe(0);
    expect(cards.cleared).toEqual([record.id]);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
    expect(lines.filter((l) => /deleted during its ingestion/.test(l.msg))).toEqual([expect.objectContaining({ level: 30, cards: 3 })]);
  });

  it('a FileDeleted event removes the bytes and clears the references', async () => {
    const record = await stored('energy.docx');
    const payload = events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(), kind: { $case: 'deleted', value: { fileId: record.id, userId: record.userId } } }).finish();
    await worker.handle({ topic: Topics.file, key: record.id, payload, offset: '2', attempt: 0 });
    expect(await objects.stat(record.id)).toBeNull();
    expect(cards.cleared).toEqual([record.id]);
  });

  it('with a grace, a FileDeleted event clears the references at once and keeps the bytes until the grace has passed', async () => {
    const graced = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger, maxAttempts: 3, concurrency: 1, deletedBytesGraceMs: 60_000 });
    const record = await stored('energy.docx');
    const deletedAt = new Date();
    const payload = events.FileEvent.encode({ eventId: newId(), occurredAt: deletedAt, kind: { $case: 'deleted', value: { fileId: record.id, userId: record.userId } } }).finish();
    const delivered = { topic: Topics.file, key: record.id, payload, offset: '2', attempt: 0 };
    await graced.handle(delivered);
    expect(cards.cleared).toEqual([record.id]);
    expect(await objects.stat(record.id)).not.toBeNull();
    // Delivered again (never dead-lettered) until the grace has passed, then the bytes go.
    await expect(graced.removeDeletedBytes(delivered, deletedAt.getTime() + 59_999)).rejects.toBeInstanceOf(RetryableUnavailableError);
    expect(await objects.stat(record.id)).not.toBeNull();
    await graced.removeDeletedBytes(delivered, deletedAt.getTime() + 60_000);
    expect(await objects.stat(record.id)).toBeNull();
  });

  it('a FilePrivacyChanged event has the cards service apply the privacy to the file\'s cards and collection', async () => {
    const record = await stored('energy.docx', { private: true });
    const payload = events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(), kind: { $case: 'privacyChanged', value: { fileId: record.id, userId: record.userId, private: true } } }).finish();
    await worker.handle({ topic: Topics.file, key: record.id, payload, offset: '3', attempt: 0 });
    expect(cards.privacyApplied).toEqual([{ fileId: record.id, ownerId: record.userId, private: true }]);
  });

  it('applies the file\'s privacy as stored, so changes delivered out of order (or a dead letter replayed late) leave the cards as the file is', async () => {
    const record = await stored('energy.docx', { private: false });
    const change = (isPrivate: boolean) =>
      events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(), kind: { $case: 'privacyChanged', value: { fileId: record.id, userId: record.userId, private: isPrivate } } }).finish();
    // Made private, then public again; the two events arrive the other way round.
    await repository.setPrivacy(record.id, true, new Date(), []);
    await repository.setPrivacy(record.id, false, new Date(), []);
    await worker.handle({ topic: Topics.file, key: record.id, payload: change(false), offset: '4', attempt: 0 });
    await worker.handle({ topic: Topics.file, key: record.id, payload: change(true), offset: '5', attempt: 0 });
    expect(cards.privacyApplied.at(-1)).toEqual({ fileId: record.id, ownerId: record.userId, private: false });
    // A file deleted since has nothing to apply (its deletion clears the references).
    await repository.delete(record.id, []);
    await worker.handle({ topic: Topics.file, key: record.id, payload: change(true), offset: '6', attempt: 0 });
    expect(cards.privacyApplied).toHaveLength(2);
  });

  it('a FilePrivacyChanged event failing on every delivery is logged as an error naming the file and lands in the dead letters', async () => {
    const record = await stored('energy.docx');
    cards.failPrivacy = true;
    const logged: { level: number; msg: string; fileId?: string }[] = [];
    const errorLog = createLogger('files-test', 'error', { write: (line: string) => void logged.push(JSON.parse(line)) });
    const failing = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger: errorLog, maxAttempts: 3, concurrency: 1 });
    const path = join(dir, 'events.db');
    const bus = new SqliteEventLog({ path, logger, retryBaseMs: 1 });
    const subscription = await subscribeToFileEvents(bus, failing, { wake: () => undefined }, 3);
    const payload = events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(), kind: { $case: 'privacyChanged', value: { fileId: record.id, userId: record.userId, private: true } } }).finish();
    await bus.publish([{ topic: Topics.file, key: record.id, payload }]);
    const deadLetters = () => {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare('SELECT e.key FROM dead_letters d JOIN events e ON e.seq = d.seq WHERE d.group_id = ?').all(FILE_CHANGES_GROUP) as { key: string }[];
      } finally {
        db.close();
      }
    };
    try {
      for (let i = 0; i < 250 && deadLetters().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(deadLetters()).toEqual([{ key: record.id }]);
      expect(logged).toEqual([expect.objectContaining({ level: 50, fileId: record.id, msg: expect.stringMatching(/privacy could not be applied/) })]);
      expect(cards.privacyApplied).toEqual([]);
    } finally {
      await subscription.close();
      await bus.close();
    }
  });
});

describe('file events on the bus', () => {
  it('a deletion left waiting its grace when FILE_DELETED_BYTES_GRACE_MS is set to 0 (files restarted so) has its bytes removed', async () => {
    const record = await stored('energy.docx');
    const bus = new SqliteEventLog({ path: join(dir, 'events.db'), logger, pollIntervalMs: 10, retryBaseMs: 1 });
    try {
      const graced = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger, maxAttempts: 3, concurrency: 1, deletedBytesGraceMs: 3_600_000 });
      const before = await subscribeToFileEvents(bus, graced, { wake: () => undefined }, 3);
      const deleted = events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(), kind: { $case: 'deleted', value: { fileId: record.id, userId: record.userId } } }).finish();
      await bus.publish([{ topic: Topics.file, key: record.id, payload: deleted }]);
      while (!cards.cleared.includes(record.id)) await new Promise((r) => setTimeout(r, 10));
      await before.close();
      expect(await objects.stat(record.id)).not.toBeNull();
      // The next start has no grace. Before, it no longer read files-deleted-bytes, and the bytes stayed for good.
      const after = await subscribeToFileEvents(bus, new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger, maxAttempts: 3, concurrency: 1 }), { wake: () => undefined }, 3);
      try {
        while (await objects.stat(record.id)) await new Promise((r) => setTimeout(r, 10));
      } finally {
        await after.close();
      }
    } finally {
      await bus.close();
    }
  });

  it("applies a file's privacy change and another file's deletion while a third file's ingestion is under way", async () => {
    const reader = new HeldReader();
    const onBus = new IngestionWorker({ repository, objects, reader, cards, logger, maxAttempts: 3, concurrency: 1 });
    const small = await stored('energy.docx');
    const gone = await stored('energy.docx');
    await onBus.ingest(small.id);
    await onBus.ingest(gone.id);
    const long = await stored('energy.docx');
    const bus = new SqliteEventLog({ path: join(dir, 'events.db'), logger, retryBaseMs: 1 });
    const scheduler = new IngestionScheduler({ repository, worker: onBus, logger, maxAttempts: 3 });
    const subscription = await subscribeToFileEvents(bus, onBus, scheduler, 3);
    try {
      const held = reader.hold();
      await scheduler.start();
      await bus.publish([{ topic: Topics.file, key: long.id, payload: uploadedPayload(long.id) }]);
      await held.started;
      const bothApplied = new Promise<void>((resolve) => (cards.onChange = () => cards.privacyApplied.length === 1 && cards.cleared.length === 1 && resolve()));
      await repository.setPrivacy(small.id, true, new Date(), []);
      await repository.delete(gone.id, []);
      await bus.publish([
        { topic: Topics.file, key: small.id, payload: changeEvent('privacyChanged', small) },
        { topic: Topics.file, key: gone.id, payload: changeEvent('deleted', gone) },
      ]);
      await bothApplied;
      expect(cards.privacyApplied).toEqual([{ fileId: small.id, ownerId: small.userId, private: true }]);
      expect(cards.cleared).toEqual([gone.id]);
      expect(await objects.stat(gone.id)).toBeNull();
      expect((await repository.get(long.id))?.ingestionStatus).toBe('pending');
      held.release();
      while ((await repository.get(long.id))?.ingestionStatus === 'pending') await new Promise((r) => setTimeout(r, 10));
      expect((await repository.get(long.id))?.ingestionStatus).toBe('done');
    } finally {
      await scheduler.stop();
      await subscription.close();
      await bus.close();
    }
  });

  it("a file's privacy change that arrives during that file's own ingestion is applied at once and again after it, to every card it made", async () => {
    const reader = new HeldReader();
    const onBus = new IngestionWorker({ repository, objects, reader, cards, logger, maxAttempts: 3, concurrency: 1 });
    const record = await stored('energy.docx', { private: false });
    const held = reader.hold();
    const ingestion = onBus.ingest(record.id);
    await held.started;
    await repository.setPrivacy(record.id, true, new Date(), []);
    const firstApplied = new Promise<void>((resolve) => (cards.onChange = resolve));
    const applied = onBus.handle({ topic: Topics.file, key: record.id, payload: changeEvent('privacyChanged', record), offset: '2', attempt: 0 });
    // Applied at once to the cards made so far (none yet), without waiting for the ingestion...
    await firstApplied;
    expect(cards.cardsAtPrivacy).toEqual([0]);
    held.release();
    const result = await ingestion;
    await applied;
    // ...and again once it ended, to every card it made.
    expect(result.cardIds.length).toBeGreaterThan(0);
    expect(cards.privacyApplied).toEqual([1, 2].map(() => ({ fileId: record.id, ownerId: record.userId, private: true })));
    expect(cards.cardsAtPrivacy).toEqual([0, result.cardIds.length]);
  });

  it("a file's deletion that arrives while its document is read here makes no card and no collection; the references are cleared after the attempt", async () => {
    const reader = new HeldReader();
    const lines: Array<{ level: number; msg: string }> = [];
    const onBus = new IngestionWorker({ repository, objects, reader, cards, logger: createLogger('files-test', 'info', { write: (line: string) => lines.push(JSON.parse(line)) }), maxAttempts: 3, concurrency: 1 });
    const record = await stored('energy.docx');
    cards.files = repository;
    const held = reader.hold();
    const ingestion = onBus.ingest(record.id);
    await held.started;
    await repository.delete(record.id, []);
    const deleted = onBus.handle({ topic: Topics.file, key: record.id, payload: changeEvent('deleted', record), offset: '2', attempt: 0 });
    held.release();
    expect((await ingestion).status).toBe('skipped');
    await deleted;
    expect(cards.createCalls).toBe(0);
    expect(cards.collections.size).toBe(0);
    expect(cards.cleared).toEqual([record.id]);
    expect(await objects.stat(record.id)).toBeNull();
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
    expect(lines.filter((l) => /deleted during its ingestion/.test(l.msg))).toHaveLength(1);
  });

  it("a privacy change applied by another replica while this one ingests the file still reaches every card it made", async () => {
    const reader = new HeldReader();
    const ingesting = new IngestionWorker({ repository, objects, reader, cards, logger, maxAttempts: 3, concurrency: 1 });
    const otherReplica = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger, maxAttempts: 3, concurrency: 1 });
    const record = await stored('energy.docx', { private: false });
    const held = reader.hold();
    const ingestion = ingesting.ingest(record.id);
    await held.started;
    await repository.setPrivacy(record.id, true, new Date(), []);
    // The other replica knows of no ingestion under way: it applies the change to the cards made so far (none).
    await otherReplica.handle({ topic: Topics.file, key: record.id, payload: changeEvent('privacyChanged', record), offset: '2', attempt: 0 });
    expect(cards.cardsAtPrivacy).toEqual([0]);
    held.release();
    const result = await ingestion;
    expect(result.cardIds.length).toBeGreaterThan(0);
    // Each card takes the file's privacy as the cards service reads it when making the card (privacyFromFile); the
    // stored privacy is applied to all of them after, should a card have been made as the change was stored.
    expect([...cards.cards.values()].every((c) => c.privacyFromFile)).toBe(true);
    expect(cards.privacyApplied.at(-1)).toEqual({ fileId: record.id, ownerId: record.userId, private: true });
    expect(cards.cardsAtPrivacy.at(-1)).toBe(result.cardIds.length);
    // The collection is made with the file's privacy of after the cards, never public for a moment.
    expect(cards.collections.get(record.id)?.isPublic).toBe(false);
  });
});

describe('fair ingestion across users (IngestionScheduler)', () => {
  /** Each file's record, stored at a distinct creation time (the queue takes an owner's oldest first). */
  let clock = Date.parse('2026-01-01T10:00:00.000Z');
  const storedBy = (userId: string) => stored('energy.docx', { userId, createdAt: new Date(clock++), updatedAt: new Date(clock) });
  const settled = async (ids: string[]) => {
    while ((await Promise.all(ids.map((id) => repository.get(id)))).some((r) => r?.ingestionStatus === 'pending')) await new Promise((r) => setTimeout(r, 10));
  };
  /** The files in the order their ingestions ended (one at a time: the order they started). */
  const ingestedOrder = () => [...cards.collections.keys()];

  it("a user's upload waits behind one document of another user who queued six, not behind all six", async () => {
    const reader = new HeldReader();
    const onBus = new IngestionWorker({ repository, objects, reader, cards, logger, maxAttempts: 3, concurrency: 1 });
    const bus = new SqliteEventLog({ path: join(dir, 'events.db'), logger, retryBaseMs: 1 });
    const scheduler = new IngestionScheduler({ repository, worker: onBus, logger, maxAttempts: 3 });
    await scheduler.start();
    const subscription = await subscribeToFileEvents(bus, onBus, scheduler, 3);
    try {
      const [alice, bob] = [newId(), newId()];
      const held = reader.hold();
      const alices = [];
      for (let i = 0; i < 6; i++) alices.push(await storedBy(alice));
      await bus.publish(alices.map((f) => ({ topic: Topics.file, key: f.id, payload: uploadedPayload(f.id) })));
      await held.started;
      // Bob uploads while Alice's first document is being ingested and her five others wait.
      const bobs = await storedBy(bob);
      await bus.publish([{ topic: Topics.file, key: bobs.id, payload: uploadedPayload(bobs.id) }]);
      held.release();
      await settled([...alices, bobs].map((f) => f.id));
      expect(ingestedOrder()).toEqual([alices[0]!.id, bobs.id, ...alices.slice(1).map((f) => f.id)]);
    } finally {
      await scheduler.stop();
      await subscription.close();
      await bus.close();
    }
  });

  it('takes owners in turns, the one whose last ingestion started longest ago (or never) first, each oldest first', async () => {
    const [a, b, c] = [newId(), newId(), newId()];
    const files = { a: [] as string[], b: [] as string[], c: [] as string[] };
    for (let i = 0; i < 4; i++) files.a.push((await storedBy(a)).id);
    for (let i = 0; i < 2; i++) files.b.push((await storedBy(b)).id);
    files.c.push((await storedBy(c)).id);
    const scheduler = new IngestionScheduler({ repository, worker, logger, maxAttempts: 3 });
    await scheduler.start();
    try {
      await settled([...files.a, ...files.b, ...files.c]);
    } finally {
      await scheduler.stop();
    }
    expect(ingestedOrder()).toEqual([files.a[0], files.b[0], files.c[0], files.a[1], files.b[1], files.a[2], files.a[3]]);
  });

  it('retries a failed attempt with backoff up to maxAttempts, then records the failure; other files are ingested meanwhile', async () => {
    const failing = await storedBy(newId());
    const other = await storedBy(newId());
    const failed = new Set<string>();
    const original = cards.createCard.bind(cards);
    cards.createCard = async (card) => {
      if (card.fileId === failing.id) {
        failed.add(`${failed.size}`);
        throw new Error('UNAVAILABLE: cards service went away');
      }
      return original(card);
    };
    const scheduler = new IngestionScheduler({ repository, worker, logger, maxAttempts: 3, retryBaseMs: 1, pollMs: 10 });
    await scheduler.start();
    try {
      await settled([failing.id, other.id]);
    } finally {
      await scheduler.stop();
    }
    expect(failed.size).toBe(3);
    expect(await repository.get(failing.id)).toMatchObject({ ingestionStatus: 'failed', ingestionError: CARDS_NOT_STORED });
    expect(await repository.get(other.id)).toMatchObject({ ingestionStatus: 'done' });
  });

  it('a restarted process takes back at once the file it was ingesting when it stopped', async () => {
    const record = await storedBy(newId());
    // Claimed, its attempt never finished: the process was killed mid-ingestion.
    expect((await repository.claimNextIngestion('embedded', new Date(), 3_600_000))?.file.id).toBe(record.id);
    const restarted = new IngestionScheduler({ repository, worker, logger, maxAttempts: 3, holder: 'embedded' });
    await restarted.start();
    try {
      await settled([record.id]);
    } finally {
      await restarted.stop();
    }
    expect(await repository.get(record.id)).toMatchObject({ ingestionStatus: 'done', cardCount: 3 });
  });

  it('a file claimed by a replica that died is ingested by another once the claim runs out', async () => {
    const record = await storedBy(newId());
    expect((await repository.claimNextIngestion('dead-replica', new Date(), 50))?.file.id).toBe(record.id);
    const survivor = new IngestionScheduler({ repository, worker, logger, maxAttempts: 3, pollMs: 10 });
    await survivor.start();
    try {
      await settled([record.id]);
    } finally {
      await survivor.stop();
    }
    expect(await repository.get(record.id)).toMatchObject({ ingestionStatus: 'done', cardCount: 3 });
  });

  it('two workers on one repository never ingest one file at once, nor one file twice, even past the claim time', async () => {
    const reader = new HeldReader();
    const active = new Set<string>();
    const calls: string[] = [];
    let overlaps = 0;
    const tracked = (inner: IngestionWorker): Pick<IngestionWorker, 'ingest'> => ({
      async ingest(fileId, finalAttempt) {
        if (active.has(fileId)) overlaps++;
        active.add(fileId);
        calls.push(fileId);
        try {
          return await inner.ingest(fileId, finalAttempt);
        } finally {
          active.delete(fileId);
        }
      },
    });
    const ids: string[] = [];
    for (const owner of [newId(), newId(), newId()]) for (let i = 0; i < 2; i++) ids.push((await storedBy(owner)).id);
    // The first replica's first document is held for several times its claim time, which it renews meanwhile (every third
    // of it). The claim time is well above what this one event loop is ever blocked for, a parse or the worker starved of
    // CPU on a loaded machine: at 300 ms a 400 ms stall let the second replica's poll, run first when the loop came back,
    // find the claim expired and take the held file too (overlaps 1).
    const claimMs = 2_000;
    const held = reader.hold();
    const first = new IngestionScheduler({ repository, worker: tracked(new IngestionWorker({ repository, objects, reader, cards, logger, maxAttempts: 3, concurrency: 1 })), logger, maxAttempts: 3, claimMs, pollMs: 10 });
    const second = new IngestionScheduler({ repository, worker: tracked(new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards, logger, maxAttempts: 3, concurrency: 1 })), logger, maxAttempts: 3, claimMs, pollMs: 10 });
    await first.start();
    await held.started;
    await second.start();
    try {
      // The second replica ingests the five others meanwhile, then keeps looking while the held one is still claimed.
      await settled(ids.slice(1));
      await new Promise((r) => setTimeout(r, 3 * claimMs));
      expect((await repository.get(ids[0]!))?.ingestionStatus).toBe('pending');
      held.release();
      await settled(ids);
    } finally {
      await Promise.all([first.stop(), second.stop()]);
    }
    expect(overlaps).toBe(0);
    expect([...calls].sort()).toEqual([...ids].sort());
    expect(cards.collections.size).toBe(6);
    expect(cards.createCalls).toBe(cards.cards.size);
  });

  it('stop waits for the attempt under way and takes no further file', async () => {
    const reader = new HeldReader();
    const held = reader.hold();
    const scheduler = new IngestionScheduler({ repository, worker: new IngestionWorker({ repository, objects, reader, cards, logger, maxAttempts: 3, concurrency: 1 }), logger, maxAttempts: 3 });
    const [under, next] = [await storedBy(newId()), await storedBy(newId())];
    await scheduler.start();
    await held.started;
    let stopped = false;
    const stopping = scheduler.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false);
    held.release();
    await stopping;
    expect(await repository.get(under.id)).toMatchObject({ ingestionStatus: 'done' });
    expect(await repository.get(next.id)).toMatchObject({ ingestionStatus: 'pending' });
    scheduler.wake();
    await new Promise((r) => setTimeout(r, 20));
    expect(await repository.get(next.id)).toMatchObject({ ingestionStatus: 'pending' });
  });
});

describe('titleTag', () => {
  it('keeps a heading with commas as one tag and within 200 characters', () => {
    expect(titleTag('Harvest, Processing , and Storage')).toBe('Harvest; Processing; and Storage');
    expect(titleTag('x'.repeat(300))).toHaveLength(200);
  });

  it('counts the 200 characters as code points: never cuts an emoji in half, and keeps a heading of 200 emoji whole', () => {
    const emoji = '\u{1F600}';
    expect(titleTag(emoji.repeat(200))).toBe(emoji.repeat(200));
    expect(titleTag(`${'x'.repeat(199)}${emoji}${emoji}`)).toBe(`${'x'.repeat(199)}${emoji}`);
  });

  it('drops the direction marks and overrides a tag may not hold, so a right-to-left heading still tags its card', () => {
    const heading = '\u200F\u05DE\u05D1\u05D5\u05D0 \u202B2024\u202C';
    expect(titleTag(heading)).toBe('\u05DE\u05D1\u05D5\u05D0 2024');
    expect(tagsProblem([titleTag(heading)])).toBeNull();
  });

  it('drops the zero-width and other invisible characters a tag may not hold, also a joiner the 200-character cut leaves last', () => {
    expect(titleTag('Intro\u200Bduction to pay\u3164ments \u{1F469}\u200D\u{1F4BB}')).toBe('Introduction to payments \u{1F469}\u200D\u{1F4BB}');
    const cut = titleTag(`${'x'.repeat(198)}\u{1F469}\u200D\u{1F4BB}`);
    expect(cut).toBe(`${'x'.repeat(198)}\u{1F469}`);
    expect(tagsProblem([cut])).toBeNull();
  });
});
