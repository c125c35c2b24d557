import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, newId, SqliteEventLog, startGrpcServer, Topics, type GrpcServerHandle } from '@cards/platform';
import { cards, events } from '@cards/proto';
import Database from 'better-sqlite3';
import { DiskObjectStore } from '../src/adapters/disk/disk-object-store';
import { GrpcCardsClient } from '../src/adapters/grpc/grpc-cards-client';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { SqliteFileRepository } from '../src/adapters/sqlite/sqlite-file-repository';
import { FILE_CHANGES_GROUP, subscribeToFileEvents } from '../src/application/file-event-subscriptions';
import { IngestionWorker } from '../src/application/ingestion-worker';
import { aFile } from './builders';

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
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'files-release-order-'))));
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
    const worker = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards: client, logger, maxAttempts, concurrency: 1 });
    const path = join(dir, 'events.db');
    const bus = new SqliteEventLog({ path, logger, retryBaseMs: 1 });
    const subscription = await subscribeToFileEvents(bus, worker, { wake: () => undefined }, maxAttempts);
    const madePrivate = aFile({ ingestionStatus: 'done' }).private().build();
    await repository.create(madePrivate, []);
    const deleted = newId();
    const fileEvent = (kind: events.FileEvent['kind']) => events.FileEvent.encode({ eventId: newId(), occurredAt: new Date(), kind }).finish();
    const handlerFailures = () => logged.filter((line) => line.msg === 'event handler failed').length;
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
