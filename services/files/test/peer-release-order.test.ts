import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, newId, SqliteEventLog, startGrpcServer, Topics, type GrpcServerHandle } from '@cards/platform';
import { cards, events } from '@cards/proto';
import { ClientError, Status } from 'nice-grpc';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { DiskObjectStore } from '../src/adapters/disk/disk-object-store';
import { GrpcCardsClient } from '../src/adapters/grpc/grpc-cards-client';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { SqliteFileRepository } from '../src/adapters/sqlite/sqlite-file-repository';
import { FILE_CHANGES_GROUP, subscribeToFileEvents } from '../src/application/file-event-subscriptions';
import { IngestionScheduler } from '../src/application/ingestion-scheduler';
import { CARDS_NOT_RELEASED, IngestionWorker } from '../src/application/ingestion-worker';
import type { CardsPort } from '../src/domain/ports';
import { aFile } from './builders';
import { testTempDir } from '../../../test/support/cleanup';

/** A cards service over gRPC: an older release's definition lacks ApplyFilePrivacy and ClearFileReferences (UNIMPLEMENTED). */
async function startCards(release: 'older' | 'newer', port: number, applied: { fileId: string; private: boolean }[], cleared: string[]): Promise<GrpcServerHandle> {
  const missing = release === 'older' ? ['applyFilePrivacy', 'clearFileReferences'] : [];
  const definition = { ...cards.CardServiceDefinition, methods: Object.fromEntries(Object.entries(cards.CardServiceDefinition.methods).filter(([key]) => !missing.includes(key))) };
  const implementation = {
    ...Object.fromEntries(
      Object.keys(definition.methods).map((key) => [
        key,
        async () => {
          throw new Error('not used');
        },
      ]),
    ),
    async applyFilePrivacy(req: { fileId: string; private: boolean }) {
      applied.push({ fileId: req.fileId, private: req.private });
      return {};
    },
    async clearFileReferences(req: { fileId: string }) {
      cleared.push(req.fileId);
      return {};
    },
  };
  return startGrpcServer({
    name: `cards-${release}`,
    host: '127.0.0.1',
    port,
    logger: createLogger('cards-stub', 'silent'),
    register(s) {
      s.add(definition as typeof cards.CardServiceDefinition, implementation as unknown as cards.CardServiceImplementation);
    },
  });
}

describe('file changes while the cards service runs a release without the methods files calls (files released first)', () => {
  let dir: string;
  beforeEach(() => (dir = testTempDir('files-release-order-')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('retries the privacy change and the deletion with backoff past maxAttempts, applies both once cards has them, and dead-letters nothing', async () => {
    const applied: { fileId: string; private: boolean }[] = [];
    const cleared: string[] = [];
    let server = await startCards('older', 0, applied, cleared);
    const port = Number(server.address.split(':').pop());
    const client = new GrpcCardsClient(server.address, 5_000);
    const repository = new SqliteFileRepository(join(dir, 'files.db'));
    const objects = new DiskObjectStore(join(dir, 'objects'));
    const logged: { level: number; msg: string }[] = [];
    const logger = createLogger('files-test', 'info', { write: (line: string) => void logged.push(JSON.parse(line)) });
    const maxAttempts = 3;
    // The deliveries, counted as cards is called (the bus logs a waiting event's failures once a minute at most).
    let calls = 0;
    const counting = {
      createCard: (card: Parameters<GrpcCardsClient['createCard']>[0]) => client.createCard(card),
      createFileCollection: (input: Parameters<GrpcCardsClient['createFileCollection']>[0]) => client.createFileCollection(input),
      clearFileReferences: (fileId: string) => (calls++, client.clearFileReferences(fileId)),
      applyFilePrivacy: (input: Parameters<GrpcCardsClient['applyFilePrivacy']>[0]) => (calls++, client.applyFilePrivacy(input)),
    };
    const worker = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards: counting, logger, maxAttempts, concurrency: 1 });
    const path = join(dir, 'events.db');
    const bus = new SqliteEventLog({ path, logger, retryBaseMs: 1 });
    const subscription = await subscribeToFileEvents(bus, worker, { wake: () => undefined }, maxAttempts);
    const madePrivate = aFile({ ingestionStatus: 'done' }).private().build();
    await repository.create(madePrivate, []);
    const deleted = newId();
    const fileEvent = (kind: events.FileEvent['kind']) => events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(), kind }).finish();
    const handlerFailures = () => calls;
    const warnings = () => logged.filter((line) => line.msg === 'event handler failed').length;
    const deadLetters = () => {
      const db = new Database(path, { readonly: true });
      try {
        return (db.prepare('SELECT COUNT(*) AS n FROM dead_letters WHERE group_id = ?').get(FILE_CHANGES_GROUP) as { n: number }).n;
      } finally {
        db.close();
      }
    };
    try {
      await bus.publish([
        { topic: Topics.file, key: madePrivate.id, payload: fileEvent({ $case: 'privacyChanged', value: { fileId: madePrivate.id, userId: madePrivate.userId, private: true } }) },
        { topic: Topics.file, key: deleted, payload: fileEvent({ $case: 'deleted', value: { fileId: deleted, userId: newId() } }) },
      ]);
      // Well past maxAttempts deliveries of the first event, each answered UNIMPLEMENTED.
      for (let i = 0; i < 500 && handlerFailures() < 3 * maxAttempts; i++) await new Promise((r) => setTimeout(r, 20));
      expect(handlerFailures()).toBeGreaterThanOrEqual(3 * maxAttempts);
      expect({ deadLetters: deadLetters(), applied, cleared }).toEqual({ deadLetters: 0, applied: [], cleared: [] });
      // One warning for the event waiting, not one a retry (the next after a minute); the deletion behind it waits unread.
      expect(warnings()).toBe(1);

      // The cards team releases: the newer cards service on the same address.
      await server.shutdown();
      server = await startCards('newer', port, applied, cleared);
      for (let i = 0; i < 500 && cleared.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect({ deadLetters: deadLetters(), applied, cleared }).toEqual({ deadLetters: 0, applied: [{ fileId: madePrivate.id, private: true }], cleared: [deleted] });
      expect(logged.filter((line) => line.level >= 50)).toEqual([]);
    } finally {
      await subscription.close();
      await bus.close();
      client.close();
      await server.shutdown();
      await repository.close();
    }
  }, 30_000);
});

/** A cards service whose every method is still missing (a release older than files'): UNIMPLEMENTED, as gRPC answers it. */
function unreleasedCards(): CardsPort & { calls: number } {
  const port = {
    calls: 0,
    async createCard(): Promise<string> {
      port.calls++;
      throw new ClientError('/cards.CardService/CreateCard', Status.UNIMPLEMENTED, 'Method not found');
    },
    async createFileCollection(): Promise<string> {
      throw new ClientError('/cards.CardService/CreateFileCollection', Status.UNIMPLEMENTED, 'Method not found');
    },
    async clearFileReferences(): Promise<void> {
      port.calls++;
      throw new ClientError('/cards.CardService/ClearFileReferences', Status.UNIMPLEMENTED, 'Method not found');
    },
    async applyFilePrivacy(): Promise<void> {
      port.calls++;
      throw new ClientError('/cards.CardService/ApplyFilePrivacy', Status.UNIMPLEMENTED, 'Method not found');
    },
  };
  return port;
}

describe('the wait for a cards release is bounded (FILES_UNRELEASED_RETRY_HOURS)', () => {
  let dir: string;
  beforeEach(() => (dir = testTempDir('files-unreleased-bound-')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const HOUR = 3_600_000;
  const waitUntil = async (done: () => boolean) => {
    for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  };

  it('a change still answered UNIMPLEMENTED past the bound since it was made goes to the dead letters, logged as an error naming the file', async () => {
    const repository = new SqliteFileRepository(join(dir, 'files.db'));
    const logged: { level: number; msg: string; fileId?: string; err?: { message: string } }[] = [];
    const logger = createLogger('files-test', 'info', { write: (line: string) => void logged.push(JSON.parse(line)) });
    const cardsPort = unreleasedCards();
    // The clock the worker reads: the change was made at `madeAt`; the test moves it on.
    const madeAt = Date.parse('2026-01-01T10:00:00.000Z');
    let now = madeAt;
    const maxAttempts = 3;
    const worker = new IngestionWorker({ repository, objects: new DiskObjectStore(join(dir, 'objects')), reader: new LibraryDocumentReader(), cards: cardsPort, logger, maxAttempts, concurrency: 1, unreleasedRetryMs: 24 * HOUR, now: () => now });
    const path = join(dir, 'events.db');
    const bus = new SqliteEventLog({ path, logger, retryBaseMs: 1 });
    const subscription = await subscribeToFileEvents(bus, worker, { wake: () => undefined }, maxAttempts);
    const file = aFile({ ingestionStatus: 'done' }).private().build();
    await repository.create(file, []);
    const deadLetters = () => {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare('SELECT e.key, d.error FROM dead_letters d JOIN events e ON e.seq = d.seq WHERE d.group_id = ?').all(FILE_CHANGES_GROUP) as { key: string; error: string }[];
      } finally {
        db.close();
      }
    };
    try {
      const payload = events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(madeAt), kind: { $case: 'privacyChanged', value: { fileId: file.id, userId: file.userId, private: true } } }).finish();
      await bus.publish([{ topic: Topics.file, key: file.id, payload }]);
      // Within the bound (23 h 59 min after the change): retried past maxAttempts, nothing dead-lettered.
      now = madeAt + 24 * HOUR - 60_000;
      await waitUntil(() => cardsPort.calls >= 3 * maxAttempts);
      expect({ calls: cardsPort.calls >= 3 * maxAttempts, deadLetters: deadLetters() }).toEqual({ calls: true, deadLetters: [] });
      // A day after the change: counted, so dead-lettered after maxAttempts more, to be replayed once cards is released.
      now = madeAt + 24 * HOUR;
      await waitUntil(() => deadLetters().length > 0);
      expect(deadLetters()).toEqual([{ key: file.id, error: expect.stringMatching(/privacy change of file .* gave up waiting for the cards service to have \/cards.CardService\/ApplyFilePrivacy: still UNIMPLEMENTED 24 h after it \(FILES_UNRELEASED_RETRY_HOURS\)/) }]);
      expect(logged.filter((line) => line.level >= 50 && line.fileId === file.id)).toEqual([expect.objectContaining({ msg: expect.stringMatching(/privacy could not be applied/) })]);
    } finally {
      await subscription.close();
      await bus.close();
      await repository.close();
    }
  }, 30_000);

  it("an ingestion waits for the method uncounted from the upload on, then fails past the bound with a reason its owner reads; one warning meanwhile", async () => {
    const repository = new SqliteFileRepository(join(dir, 'files.db'));
    const objects = new DiskObjectStore(join(dir, 'objects'));
    const logged: { level: number; msg: string; fileId?: string }[] = [];
    const logger = createLogger('files-test', 'info', { write: (line: string) => void logged.push(JSON.parse(line)) });
    const cardsPort = unreleasedCards();
    const uploadedAt = Date.parse('2026-01-01T10:00:00.000Z');
    let now = uploadedAt;
    const maxAttempts = 3;
    const worker = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards: cardsPort, logger, maxAttempts, concurrency: 1, unreleasedRetryMs: 2 * HOUR, now: () => now });
    const scheduler = new IngestionScheduler({ repository, worker, logger, maxAttempts, retryBaseMs: 1, retryMaxMs: 2, pollMs: 10, now: () => now });
    const bytes = readFileSync(join(__dirname, '../../../test/fixtures/documents/energy.docx'));
    const file = aFile({ fileName: 'energy.docx', format: 'docx', size: bytes.length, createdAt: new Date(uploadedAt), updatedAt: new Date(uploadedAt) }).build();
    await objects.put(file.id, bytes);
    await repository.create(file, []);
    const warnings = () => logged.filter((line) => line.level === 40 && line.fileId === file.id);
    await scheduler.start();
    try {
      // An hour after the upload: attempts well past maxAttempts, none counted, the file still pending.
      now = uploadedAt + HOUR;
      await waitUntil(() => cardsPort.calls >= 4 * maxAttempts);
      expect({ pending: (await repository.get(file.id))?.ingestionStatus, attempts: cardsPort.calls >= 4 * maxAttempts }).toEqual({ pending: 'pending', attempts: true });
      // The clock has not moved a minute since the first failure: one warning line.
      expect(warnings()).toEqual([expect.objectContaining({ msg: expect.stringMatching(/not counted: waiting for a service/) })]);
      // Two hours after the upload: the next attempt fails the ingestion, with the reason the owner reads on the file.
      now = uploadedAt + 2 * HOUR;
      await waitUntil(() => logged.some((line) => line.msg === 'file ingestion failed'));
      expect(await repository.get(file.id)).toMatchObject({ ingestionStatus: 'failed', ingestionError: CARDS_NOT_RELEASED });
      expect(logged.filter((line) => line.level >= 50)).toEqual([expect.objectContaining({ fileId: file.id, msg: 'file ingestion failed' })]);
    } finally {
      await scheduler.stop();
      await repository.close();
    }
  }, 30_000);
});
