import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_EVENT_BYTES, type DeliveredEvent, type OutgoingEvent } from '../src/events/event-bus';
import { EventTooLargeError } from '../src/errors';
import { OutboxRelay, type OutboxStore } from '../src/events/outbox';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { createLogger } from '../src/logger';
import { contractTests, describeOnEngine } from '../../../test/engines/suite';
import { testTempDir } from '../../../test/support/cleanup';

export interface OutboxStoreHarness {
  store: OutboxStore;
  /** Writes events the way the service does inside its state-changing transaction. */
  append(events: OutgoingEvent[]): Promise<void>;
  close(): Promise<void>;
}

const logger = createLogger('outbox-contract', process.env.LOG_LEVEL ?? 'fatal');
const ev = (key: string, text: string, topic = 'cards.card.v1'): OutgoingEvent => ({ topic, key, payload: new TextEncoder().encode(text) });
const read = (e: { payload: Uint8Array }) => new TextDecoder().decode(e.payload);

/** The OutboxStore port's behaviour on every adapter: SQLite always, MongoDB when a server is available. */
export function describeOutboxStoreContract(name: string, factory: () => Promise<OutboxStoreHarness>, skipReason?: string): void {
  describeOnEngine(`OutboxStore contract: ${name}`, skipReason, () => {
    const test = contractTests(`outbox-store on ${name}`);
    let h: OutboxStoreHarness;
    beforeEach(async () => {
      h = await factory();
    });
    afterEach(async () => {
      await h.close();
    });

    test('pending() gives entries oldest first, intact, up to the limit', async () => {
      await h.append([ev('a', 'one'), ev('b', 'two', 'cards.bookmark.v1')]);
      await h.append([ev('a', 'three')]);
      const firstTwo = await h.store.pending(2);
      expect(firstTwo.map((e) => [e.topic, e.key, read(e)])).toEqual([
        ['cards.card.v1', 'a', 'one'],
        ['cards.bookmark.v1', 'b', 'two'],
      ]);
      expect((await h.store.pending(10)).map(read)).toEqual(['one', 'two', 'three']);
      expect(new Set((await h.store.pending(10)).map((e) => e.id)).size).toBe(3);
    });

    test('remove() deletes exactly the given entries and ignores unknown or empty lists', async () => {
      await h.append([ev('a', 'one'), ev('a', 'two'), ev('a', 'three')]);
      const [first, , third] = await h.store.pending(10);
      await h.store.remove([first!.id, third!.id]);
      await h.store.remove([]);
      expect((await h.store.pending(10)).map(read)).toEqual(['two']);
      await h.store.remove([first!.id]);
      expect((await h.store.pending(10)).map(read)).toEqual(['two']);
    });

    test('count() answers the entries not yet removed (the relay reads it for its pending gauge)', async () => {
      expect(await h.store.count()).toBe(0);
      await h.append([ev('a', 'one'), ev('b', 'two')]);
      await h.append([ev('a', 'three')]);
      expect(await h.store.count()).toBe(3);
      await h.store.remove([(await h.store.pending(1))[0]!.id]);
      expect(await h.store.count()).toBe(2);
    });

    test('binary payloads survive byte for byte', async () => {
      const bytes = new Uint8Array([0, 1, 127, 128, 255, 0]);
      await h.append([{ topic: 't.v1', key: 'k', payload: bytes }]);
      expect([...(await h.store.pending(1))[0]!.payload]).toEqual([...bytes]);
    });

    test('an event over MAX_EVENT_BYTES is refused when written, with none of the events written beside it', async () => {
      const largest: OutgoingEvent = { topic: 'cards.card.v1', key: 'k', payload: new Uint8Array(MAX_EVENT_BYTES - 1) };
      const tooLarge: OutgoingEvent = { ...largest, payload: new Uint8Array(MAX_EVENT_BYTES) };
      await expect(h.append([ev('a', 'before'), tooLarge])).rejects.toThrow(EventTooLargeError);
      await expect(h.append([tooLarge])).rejects.toThrow(/cards\.card\.v1 event would be 1000001 bytes, above the limit of 1000000/);
      expect(await h.store.pending(10)).toEqual([]);
      await h.append([largest]);
      expect((await h.store.pending(10)).map((e) => e.payload.byteLength)).toEqual([MAX_EVENT_BYTES - 1]);
    });

    test('the relay drains it to the bus in order and leaves it empty', async () => {
      const dir = testTempDir('outbox-contract-');
      const bus = new SqliteEventLog({ path: join(dir, 'events.db'), logger, pollIntervalMs: 20 });
      const relay = new OutboxRelay(h.store, bus, logger, { name: 'contract', intervalMs: 50 });
      try {
        const got: DeliveredEvent[] = [];
        await bus.subscribe({ group: 'g', topics: ['cards.card.v1'], handler: async (e) => void got.push(e) });
        relay.start();
        for (let i = 0; i < 5; i++) await h.append([ev('card-1', `v${i}`)]);
        relay.kick();
        await relay.flush();
        for (let i = 0; i < 200 && got.length < 5; i++) await new Promise((r) => setTimeout(r, 20));
        expect(got.map(read)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
        expect(await h.store.pending(10)).toEqual([]);
      } finally {
        await relay.stop();
        await bus.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
