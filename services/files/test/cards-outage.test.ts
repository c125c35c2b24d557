import { readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createLogger, newId, startGrpcServer, type GrpcServerHandle } from '@cards/platform';
import { cards } from '@cards/proto';
import { ClientError, Status } from 'nice-grpc';
import { DiskObjectStore } from '../src/adapters/disk/disk-object-store';
import { GrpcCardsClient } from '../src/adapters/grpc/grpc-cards-client';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { SqliteFileRepository } from '../src/adapters/sqlite/sqlite-file-repository';
import { IngestionScheduler } from '../src/application/ingestion-scheduler';
import { CARDS_NOT_STORED, IngestionWorker } from '../src/application/ingestion-worker';
import type { CardsPort } from '../src/domain/ports';
import { aFile } from './builders';
import { testTempDir } from '../../../test/support/cleanup';

/** A cards service over gRPC that stores every card and collection it is sent (createCard, createFileCollection). */
function startWorkingCards(port: number, cardsMade: string[], delayMs = 0): Promise<GrpcServerHandle> {
  const implementation = {
    ...Object.fromEntries(
      Object.keys(cards.CardServiceDefinition.methods).map((key) => [
        key,
        async () => {
          throw new Error('not used');
        },
      ]),
    ),
    async createCard(req: { idempotencyKey?: string }) {
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      cardsMade.push(req.idempotencyKey ?? '');
      return { card: { id: newId() }, duplicate: false };
    },
    async createFileCollection() {
      return { id: newId() };
    },
    async applyFilePrivacy() {
      return {};
    },
    async clearFileReferences() {
      return {};
    },
  };
  return startGrpcServer({
    name: 'cards-stub',
    host: '127.0.0.1',
    port,
    logger: createLogger('cards-stub', 'silent'),
    register(s) {
      s.add(cards.CardServiceDefinition, implementation as unknown as cards.CardServiceImplementation);
    },
  });
}

/** A loopback port nothing listens on (a cards service that is down: connections refused). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const HOUR = 3_600_000;
const waitUntil = async (done: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 1500 && !(await done()); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('an ingestion while the cards service is down (a restart, an outage)', () => {
  let dir: string;
  beforeEach(() => (dir = testTempDir('files-cards-outage-')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const setUp = async (cardsPort: CardsPort, now: () => number, bound = 24 * HOUR) => {
    const repository = new SqliteFileRepository(join(dir, 'files.db'));
    const objects = new DiskObjectStore(join(dir, 'objects'));
    const logged: { level: number; msg: string; fileId?: string }[] = [];
    const logger = createLogger('files-test', 'debug', { write: (line: string) => void logged.push(JSON.parse(line)) });
    const maxAttempts = 3;
    const worker = new IngestionWorker({ repository, objects, reader: new LibraryDocumentReader(), cards: cardsPort, logger, maxAttempts, concurrency: 1, unreleasedRetryMs: bound, now });
    const scheduler = new IngestionScheduler({ repository, worker, logger, maxAttempts, retryBaseMs: 1, retryMaxMs: 2, pollMs: 10, now });
    const bytes = readFileSync(join(__dirname, '../../../test/fixtures/documents/energy.docx'));
    const uploadedAt = Date.parse('2026-01-01T10:00:00.000Z');
    const file = aFile({ fileName: 'energy.docx', format: 'docx', size: bytes.length, createdAt: new Date(uploadedAt), updatedAt: new Date(uploadedAt) }).build();
    await objects.put(file.id, bytes);
    await repository.create(file, []);
    const warnings = () => logged.filter((line) => line.level === 40 && line.fileId === file.id);
    const errors = () => logged.filter((line) => line.level >= 50);
    return { repository, scheduler, file, uploadedAt, maxAttempts, warnings, errors, logged };
  };

  it('waits uncounted past maxAttempts with one warning, and stores the cards once cards answers again (connection refused, then up)', async () => {
    const port = await freePort();
    const client = new GrpcCardsClient(`127.0.0.1:${port}`, 5_000);
    let calls = 0;
    const counting: CardsPort = {
      createCard: (card) => (calls++, client.createCard(card)),
      createFileCollection: (input) => client.createFileCollection(input),
      clearFileReferences: (fileId) => client.clearFileReferences(fileId),
      applyFilePrivacy: (input) => client.applyFilePrivacy(input),
    };
    let now = Date.parse('2026-01-01T10:05:00.000Z');
    const { repository, scheduler, file, maxAttempts, warnings, errors } = await setUp(counting, () => now);
    let server: GrpcServerHandle | undefined;
    await scheduler.start();
    try {
      // Cards is down: attempts well past maxAttempts, none counted, the file still pending.
      await waitUntil(() => calls >= 3 * maxAttempts);
      expect({ attempts: calls >= 3 * maxAttempts, status: (await repository.get(file.id))?.ingestionStatus }).toEqual({ attempts: true, status: 'pending' });
      // The clock has not moved a minute since the first failure: one warning line, not one an attempt.
      expect(warnings()).toEqual([expect.objectContaining({ msg: expect.stringMatching(/not counted: waiting for a service/) })]);
      now += 10 * 60_000;
      // Cards comes back on its address: the file is ingested, nothing failed.
      const made: string[] = [];
      server = await startWorkingCards(port, made);
      await waitUntil(async () => (await repository.get(file.id))?.ingestionStatus !== 'pending');
      expect(await repository.get(file.id)).toMatchObject({ ingestionStatus: 'done', ingestionError: null });
      expect(made.length).toBeGreaterThan(0);
      expect(errors()).toEqual([]);
    } finally {
      await scheduler.stop();
      client.close();
      await server?.shutdown();
      await repository.close();
    }
  }, 40_000);

  it('past FILES_UNRELEASED_RETRY_HOURS since the upload the outage counts: the attempts left record the failure with its reason', async () => {
    let calls = 0;
    const down: CardsPort = {
      async createCard() {
        calls++;
        throw new ClientError('/cards.v1.CardService/CreateCard', Status.UNAVAILABLE, 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:1');
      },
      async createFileCollection(): Promise<string> {
        throw new Error('not reached');
      },
      async clearFileReferences() {},
      async applyFilePrivacy() {},
    };
    const uploadedAt = Date.parse('2026-01-01T10:00:00.000Z');
    let now = uploadedAt + HOUR;
    const { repository, scheduler, file, maxAttempts, errors } = await setUp(down, () => now, 2 * HOUR);
    await scheduler.start();
    try {
      await waitUntil(() => calls >= 3 * maxAttempts);
      expect((await repository.get(file.id))?.ingestionStatus).toBe('pending');
      // Two hours after the upload: each failure counts, so maxAttempts more, then `failed` as before the wait.
      const before = calls;
      now = uploadedAt + 2 * HOUR;
      await waitUntil(async () => (await repository.get(file.id))?.ingestionStatus !== 'pending');
      expect(await repository.get(file.id)).toMatchObject({ ingestionStatus: 'failed', ingestionError: CARDS_NOT_STORED });
      expect(calls - before).toBeLessThanOrEqual(maxAttempts + 1);
      expect(errors()).toEqual([expect.objectContaining({ fileId: file.id, msg: 'file ingestion failed' })]);
    } finally {
      await scheduler.stop();
      await repository.close();
    }
  }, 40_000);
});

describe('GrpcCardsClient: a deadline while cards cannot be reached', () => {
  it('is UNAVAILABLE when no connection was made (a peer that accepts and never answers, or drops the connection attempt)', async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => {
      sockets.add(socket);
      socket.on('data', () => undefined);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const client = new GrpcCardsClient(`127.0.0.1:${(silent.address() as { port: number }).port}`, 300);
    try {
      const failure = await client.createCard({ ownerId: newId(), html: '<p>x</p>', link: '', private: false, tags: [], fileId: newId(), idempotencyKey: 'k:0', hiddenByFile: false, privacyFromFile: false }).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(ClientError);
      expect({ code: Status[(failure as ClientError).code], details: (failure as ClientError).details }).toEqual({ code: 'UNAVAILABLE', details: expect.stringMatching(/no connection to the cards service within the deadline/) });
      const privacy = await client.applyFilePrivacy({ fileId: newId(), ownerId: newId(), private: true }).catch((err: unknown) => err);
      expect(Status[(privacy as ClientError).code]).toBe('UNAVAILABLE');
    } finally {
      client.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  }, 20_000);

  it('stays DEADLINE_EXCEEDED when cards is connected and slow (counted as before)', async () => {
    const made: string[] = [];
    const server = await startWorkingCards(0, made, 1_500);
    const client = new GrpcCardsClient(server.address, 300);
    try {
      // Connected first, so the slow call runs on a ready channel.
      await client.applyFilePrivacy({ fileId: newId(), ownerId: newId(), private: false });
      const failure = await client.createCard({ ownerId: newId(), html: '<p>x</p>', link: '', private: false, tags: [], fileId: newId(), idempotencyKey: 'k:0', hiddenByFile: false, privacyFromFile: false }).catch((err: unknown) => err);
      expect(Status[(failure as ClientError).code]).toBe('DEADLINE_EXCEEDED');
    } finally {
      client.close();
      await server.shutdown();
    }
  }, 20_000);
});
