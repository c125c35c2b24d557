import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { NotDueYetError } from '../src/errors';
import { createLogger } from '../src/logger';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { testTempDir } from '../../../test/support/cleanup';

// A consumer whose store is unreachable for longer than its retries last must not dead-letter the event:
// the outage ends, the event is handled. Other failures still go to the dead letters after maxAttempts.
describe('event consumers during an engine outage (embedded log)', () => {
  const logger = createLogger('engine-outage-test', 'fatal');
  let dir: string;
  let bus: SqliteEventLog;
  const deadLetters = (path: string) => {
    const db = new Database(path, { readonly: true });
    try {
      return (db.prepare('SELECT COUNT(*) AS n FROM dead_letters').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  beforeEach(() => {
    dir = testTempDir('cards-outage-');
    bus = new SqliteEventLog({ path: join(dir, 'events.db'), logger, pollIntervalMs: 20, retryBaseMs: 5 });
  });
  afterEach(async () => {
    await bus.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps retrying an event while the handler fails because an engine is unreachable, then handles it', async () => {
    let failures = 0;
    const handled: string[] = [];
    const subscription = await bus.subscribe({
      group: 'g',
      topics: ['t'],
      maxAttempts: 3,
      handler: async (event) => {
        if (failures < 6) {
          failures++;
          throw Object.assign(new Error('Server selection timed out after 5000 ms'), { name: 'MongoServerSelectionError' });
        }
        handled.push(event.key);
      },
    });
    await bus.publish([{ topic: 't', key: 'k1', payload: new Uint8Array([1]) }]);
    const deadline = Date.now() + 20_000;
    while (handled.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await subscription.close();
    expect(failures).toBe(6); // twice maxAttempts
    expect(handled).toEqual(['k1']);
    expect(deadLetters(join(dir, 'events.db'))).toBe(0);
  });

  it("keeps delivering an event not due yet (NotDueYetError: a deleted file's bytes kept for a grace) past maxAttempts, then handles it", async () => {
    let waits = 0;
    const handled: string[] = [];
    const subscription = await bus.subscribe({
      group: 'g',
      topics: ['t'],
      maxAttempts: 3,
      handler: async (event) => {
        if (waits < 6) {
          waits++;
          throw new NotDueYetError('the bytes of deleted file f are kept for reads under way until later');
        }
        handled.push(event.key);
      },
    });
    await bus.publish([{ topic: 't', key: 'k1', payload: new Uint8Array([1]) }]);
    // Before, the third wait was its last: the event went to the dead letters, the bytes were never removed.
    while (handled.length === 0 && deadLetters(join(dir, 'events.db')) === 0) await new Promise((r) => setTimeout(r, 20));
    await subscription.close();
    expect({ waits, handled, deadLetters: deadLetters(join(dir, 'events.db')) }).toEqual({ waits: 6, handled: ['k1'], deadLetters: 0 });
  });

  it('still dead-letters an event whose handler fails for another reason after maxAttempts', async () => {
    let attempts = 0;
    const subscription = await bus.subscribe({
      group: 'g',
      topics: ['t'],
      maxAttempts: 3,
      handler: async () => {
        attempts++;
        throw new Error('malformed payload');
      },
    });
    await bus.publish([{ topic: 't', key: 'k1', payload: new Uint8Array([1]) }]);
    const deadline = Date.now() + 20_000;
    while (deadLetters(join(dir, 'events.db')) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await subscription.close();
    expect(attempts).toBe(3);
    expect(deadLetters(join(dir, 'events.db'))).toBe(1);
  });
});
