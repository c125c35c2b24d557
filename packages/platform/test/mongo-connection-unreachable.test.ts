import { createLogger } from '../src/logger';
import { connectMongo, MongoOutboxStore } from '../src/mongo';
import { isEngineUnavailableError } from '../src/readiness';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { waitFor } from '../../../test/engines/service-process';

const logger = createLogger('mongo-connection-test', process.env.LOG_LEVEL ?? 'fatal');
// Its own server: the test stops it.
const { engine, skipReason } = engineForSuite('mongo-java-server', startMongoSync);

describeOnEngine('MongoConnection.closeIfUnreachable (mongo-java-server)', skipReason, () => {
  it('leaves a connection whose server answers alone; once the server is gone, closes it so an operation waiting for a server fails at once, as an engine outage', async () => {
    // Server selection longer than the test may take (40 s): only the close can end the waiting read. Not longer: the
    // driver (mongodb 6.22) leaves the waiting read's selection timer running after the close, and that ref'd timer held
    // a jest running this file in its own process for the rest of it after the run (120 s with 120_000).
    const connection = await connectMongo({ url: engine!.url, database: 'close_if_unreachable', logger, serverSelectionTimeoutMs: 45_000 });
    const outbox = new MongoOutboxStore(connection.db);
    try {
      expect(await connection.closeIfUnreachable()).toBe(false);
      expect(await outbox.count()).toBe(0);

      await engine!.stop();
      const waitingRead = outbox.pending(10).then(
        () => 'answered',
        (err: unknown) => err,
      );
      await waitFor('the driver sees no server', () => connection.closeIfUnreachable(), 20_000);
      const failure = await waitingRead;
      // Not toBeInstanceOf(Error): an error Node's core makes (a socket's) is of another realm than jest's sandbox (CI:
      // "Expected constructor: Error, Received constructor: Error"); what matters is that the read failed as an outage.
      expect(failure).not.toBe('answered');
      const { name, code, message } = failure as { name?: unknown; code?: unknown; message?: unknown };
      // An engine outage, not a bad request or event: a call gets UNAVAILABLE (503), an event is not dead-lettered.
      expect({ outage: isEngineUnavailableError(failure), name, code, message }).toEqual({ outage: true, name, code, message });
    } finally {
      await connection.close();
    }
  }, 40_000);
});
