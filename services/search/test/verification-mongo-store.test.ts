import { randomBytes } from 'node:crypto';
import { connectMongo, createLogger } from '@cards/platform';
import { MongoVerificationStore } from '../src/verification/adapters/mongo/mongo-verification-store';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { aJob, describeVerificationStoreContract } from './verification-store.contract';

type Document = Record<string, unknown>;

const logger = createLogger('verification-store-test', process.env.LOG_LEVEL ?? 'fatal');
// TEST_MONGO_URL points the suite at a real MongoDB; otherwise the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

describeVerificationStoreContract(
  external ? 'mongodb (TEST_MONGO_URL)' : 'mongodb (mongo-java-server)',
  async () => {
    const connection = await connectMongo({ url: engine!.url, database: `verification_test_${randomBytes(4).toString('hex')}`, logger });
    const store = await MongoVerificationStore.open(connection);
    const outbox = store.outbox();
    return {
      store,
      pendingEvents: () => outbox.pending(100),
      async cleanup() {
        // The store's close() has closed the connection; drop the database on a fresh one.
        const admin = await connectMongo({ url: engine!.url, database: connection.db.databaseName, logger });
        await admin.db.dropDatabase().catch(() => undefined);
        await admin.close();
      },
    };
  },
  skipReason,
);

// The claim reads a bounded part of the queue however many jobs wait (one author's thousands of cards): each command
// it sends returns a few documents (both servers), and on a real MongoDB (TEST_MONGO_URL) each examines a few, shown by
// explain() of the very commands the claim sent (mongo-java-server has no explain command).
// mongo-java-server has no explain command: the documents examined are checked on a real MongoDB only.
const explainSkip = external ? undefined : 'mongo-java-server has no explain command; set TEST_MONGO_URL to a real MongoDB';
if (!skipReason && explainSkip) console.warn(`SKIPPED the verification claim's explain() check (documents examined): ${explainSkip}`);
if (skipReason) {
  it.skip(`verification claim reads on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describe(`the verification claim reads a bounded part of the queue on ${external ? 'MongoDB (TEST_MONGO_URL)' : 'mongo-java-server'}`, () => {
    it('claims four jobs of four authors behind one author\'s 400 waiting, returning (and, on MongoDB, examining) about one document per job', async () => {
      // Command monitoring is set when the client is made (the driver's connections read it then).
      const monitored = new URL(engine!.url);
      monitored.searchParams.set('monitorCommands', 'true');
      const connection = await connectMongo({ url: monitored.toString(), database: `verification_test_${randomBytes(4).toString('hex')}`, logger });
      const store = await MongoVerificationStore.open(connection);
      let watching = false;
      try {
        const flood = 'author-flood';
        for (let i = 0; i < 400; i++) await store.enqueue(aJob().byAuthor(flood).build());
        const others = ['author-a', 'author-b', 'author-c'].map((author) => aJob().byAuthor(author).build());
        for (const job of others) await store.enqueue(job);
        const sent: Document[] = [];
        let returned = 0;
        connection.client.on('commandStarted', (e) => (watching && (e.commandName === 'find' || e.commandName === 'aggregate') ? void sent.push(e.command) : undefined));
        connection.client.on('commandSucceeded', (e) => {
          if (!watching) return;
          // Jobs (counts aside), also those an aggregation hands back grouped (an array `jobs` per author).
          const batch = (e.reply as { cursor?: { firstBatch?: { id?: unknown; jobs?: unknown[] }[] } }).cursor?.firstBatch ?? [];
          returned += batch.reduce((n, doc) => n + (Array.isArray(doc.jobs) ? doc.jobs.length : doc.id === undefined ? 0 : 1), 0);
        });
        watching = true;
        const claimed = await store.claim(4, new Date(Date.parse('2100-01-01T00:00:00Z')), new Date(Date.parse('2100-01-01T01:00:00Z')), 2);
        watching = false;
        // The flood's oldest first (no author running), then one job of each other author, not the flood's second.
        expect(claimed.map((j) => j.authorId)).toEqual([flood, 'author-a', 'author-b', 'author-c']);
        expect(sent.length).toBeGreaterThan(0);
        // One job document a job taken. Before: one aggregation over every waiting job (all 403 read and grouped by the
        // server) handed back each author's oldest six, 9 here.
        expect(returned).toBeLessThanOrEqual(claimed.length + 2);
        if (external) {
          let examined = 0;
          for (const command of sent) {
            // The command as sent, without the driver's session and routing fields.
            const plain = Object.fromEntries(Object.entries(command).filter(([key]) => !key.startsWith('$') && key !== 'lsid' && key !== 'txnNumber'));
            const explained = await connection.db.command({ explain: plain, verbosity: 'executionStats' });
            // A find's stats are at the top; an aggregation's, under its first stage's cursor.
            const stats = (explained.executionStats ?? (explained.stages as { $cursor?: Document }[] | undefined)?.[0]?.$cursor?.executionStats) as Document | undefined;
            examined += Number(stats?.totalDocsExamined ?? 0);
          }
          expect(examined).toBeLessThanOrEqual(2 * claimed.length);
        }
      } finally {
        await connection.db.dropDatabase().catch(() => undefined);
        await store.close();
      }
    }, 60_000);
  });
}

// The `runnable` index (status, dueAt, seq) of earlier versions is runnable_author's prefix: opening the store drops it.
if (skipReason) {
  it.skip(`verification store opening on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describe(`opening the verification store on ${external ? 'MongoDB (TEST_MONGO_URL)' : 'mongo-java-server'}`, () => {
    const indexNames = async (connection: Awaited<ReturnType<typeof connectMongo>>) =>
      (await connection.db.collection('verification_jobs').listIndexes().toArray()).map((i) => i.name as string).sort();

    it('indexes the queue with runnable_author, without the runnable index it makes redundant', async () => {
      const connection = await connectMongo({ url: engine!.url, database: `verification_test_${randomBytes(4).toString('hex')}`, logger });
      try {
        await MongoVerificationStore.open(connection);
        expect(await indexNames(connection)).toEqual(['_id_', 'author', 'card', 'id', 'outbox_order', 'runnable_author', 'source_event']);
      } finally {
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      }
    });

    it('drops the runnable index an earlier version left, with two replicas starting at once, keeps its jobs claimable and starts again without it', async () => {
      const database = `verification_test_${randomBytes(4).toString('hex')}`;
      const [connection, other, again] = await Promise.all([1, 2, 3].map(() => connectMongo({ url: engine!.url, database, logger })));
      try {
        // A queue with a job waiting, and the earlier version's index (as that version made it) still there.
        const job = aJob().build();
        expect(await (await MongoVerificationStore.open(connection!)).enqueue(job)).toBe(true);
        await connection!.db.collection('verification_jobs').createIndex({ status: 1, dueAt: 1, seq: 1 }, { name: 'runnable' });
        expect(await indexNames(connection!)).toContain('runnable');

        const [store] = await Promise.all([MongoVerificationStore.open(other!), MongoVerificationStore.open(again!)]);
        expect(await indexNames(connection!)).not.toContain('runnable');
        expect(await indexNames(connection!)).toContain('runnable_author');
        await expect(MongoVerificationStore.open(connection!)).resolves.toBeDefined();
        const claimed = await store.claim(1, new Date(Date.parse('2100-01-01T00:00:00Z')), new Date(Date.parse('2100-01-01T01:00:00Z')), 2);
        expect(claimed.map((j) => j.id)).toEqual([job.id]);
      } finally {
        await connection!.db.dropDatabase().catch(() => undefined);
        for (const c of [connection, other, again]) await c!.close();
      }
    });
  });
}
