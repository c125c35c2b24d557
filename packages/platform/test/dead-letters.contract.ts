import { randomBytes } from 'node:crypto';
import { events } from '@cards/proto';
import type { DeliveredEvent, EventBus, Subscription } from '../src/events/event-bus';
import { Topics } from '../src/events/event-bus';
import type { DeadLetter, DeadLetters } from '../src/events/dead-letters';
import { contractTests, describeOnEngine } from '../../../test/engines/suite';

/** One adapter under test: a bus of its own (fresh log file or Kafka namespace) and its dead letters opened apart, as the operator's tool opens them. */
export interface DeadLettersHarness {
  bus: EventBus;
  /** Dead letters of the bus's storage, opened apart from it; closed by close(). */
  deadLetters: DeadLetters;
  close(): Promise<void>;
}

export type DeadLettersHarnessFactory = () => Promise<DeadLettersHarness>;

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A card-indexed event (a real topic, so the listed letter shows its event id). */
function indexedEvent(cardId: string): { eventId: string; payload: Uint8Array } {
  const eventId = `evt-${randomBytes(6).toString('hex')}`;
  return { eventId, payload: events.CardIndexed.encode({ eventId, occurredAt: new Date(), cardId, vectorPointId: cardId }).finish() };
}

const cardOf = (e: DeliveredEvent) => events.CardIndexed.decode(e.payload).cardId;

/**
 * The DeadLetters port's behaviour, run against every adapter: the embedded log always, Kafka when a broker is
 * available. The consumers are real subscriptions of the harness's bus; the dead letters are read and replayed apart.
 */
export function describeDeadLettersContract(name: string, factory: DeadLettersHarnessFactory, skipReason?: string): void {
  describeOnEngine(`DeadLetters contract: ${name}`, skipReason, () => {
    const test = contractTests(`dead-letters on ${name}`);
    const topic = Topics.index;
    let h: DeadLettersHarness;
    const opened: Subscription[] = [];
    const subscribe = async (options: Parameters<EventBus['subscribe']>[0]) => {
      opened.push(await h.bus.subscribe(options));
    };
    const lettersOf = async (group: string, state?: DeadLetter['state']) =>
      (await h.deadLetters.list({ group, topic })).filter((l) => state === undefined || l.state === state);

    beforeEach(async () => {
      h = await factory();
    });
    afterEach(async () => {
      await Promise.allSettled(opened.splice(0).map((s) => s.close()));
      await h.close();
    });

    test('a handler that fails on every attempt: its event is dead-lettered, replay delivers it to that group only, a second replay does nothing', async () => {
      const id = randomBytes(4).toString('hex');
      const failing = `indexer-${id}`;
      const other = `notifier-${id}`;
      const { eventId, payload } = indexedEvent('card-1');
      let failuresLeft = 2;
      const handledByFailing: string[] = [];
      const handledByOther: string[] = [];
      await subscribe({
        group: failing,
        topics: [topic],
        maxAttempts: 2,
        handler: async (e) => {
          if (cardOf(e) === 'card-1' && failuresLeft > 0) {
            failuresLeft--;
            throw new Error('index unavailable: mapping missing');
          }
          handledByFailing.push(cardOf(e));
        },
      });
      await subscribe({ group: other, topics: [topic], handler: async (e) => void handledByOther.push(cardOf(e)) });
      await h.bus.publish([{ topic, key: 'card-1', payload }]);

      const [letter] = await waitFor('the dead letter', async () => ((await lettersOf(failing)).length > 0 ? lettersOf(failing) : undefined));
      expect(letter).toMatchObject({ topic, group: failing, key: 'card-1', eventId, error: 'index unavailable: mapping missing', attempts: 2, state: 'dead' });
      expect([...letter!.payload]).toEqual([...payload]);
      expect(await lettersOf(other)).toEqual([]);

      const replayed = await h.deadLetters.replay({ group: failing, topic });
      expect(replayed.map((l) => [l.id, l.state])).toEqual([[letter!.id, 'replay-requested']]);
      await waitFor('the replayed event handled', () => (handledByFailing.includes('card-1') ? true : undefined));
      await waitFor('the letter marked replayed', async () => ((await lettersOf(failing, 'replayed')).length === 1 ? true : undefined));
      expect(await lettersOf(failing, 'dead')).toEqual([]);

      // The other group handled the event the first time and must not get it again: a later event of the same key
      // (same partition, so after any copy of the first) reaches it right after the original.
      await h.bus.publish([{ topic, key: 'card-1', payload: indexedEvent('card-1-later').payload }]);
      await waitFor('the later event at the other group', () => (handledByOther.includes('card-1-later') ? true : undefined));
      expect(handledByOther).toEqual(['card-1', 'card-1-later']);

      expect(await h.deadLetters.replay({ group: failing, topic })).toEqual([]);
      expect(await h.deadLetters.replay({ ids: [letter!.id] })).toEqual([]);
      await waitFor('the later event at the failing group', () => (handledByFailing.includes('card-1-later') ? true : undefined));
      expect(handledByFailing.filter((c) => c === 'card-1')).toEqual(['card-1']);
      expect((await lettersOf(failing)).map((l) => [l.id, l.state])).toEqual([[letter!.id, 'replayed']]);
    }, 120_000);

    test('replay by id hands back only that letter; one that fails again is dead again with its new error and can be replayed again', async () => {
      const id = randomBytes(4).toString('hex');
      const groupA = `a-${id}`;
      const groupB = `b-${id}`;
      const { eventId, payload } = indexedEvent('card-2');
      let round = 1;
      const triedByA: number[] = [];
      await subscribe({
        group: groupA,
        topics: [topic],
        maxAttempts: 2,
        handler: async () => {
          triedByA.push(round);
          throw new Error(`broken in round ${round}`);
        },
      });
      await subscribe({ group: groupB, topics: [topic], maxAttempts: 1, handler: async () => Promise.reject(new Error('broken for B')) });
      await h.bus.publish([{ topic, key: 'card-2', payload }]);
      const [letterA] = await waitFor('A dead letter', async () => ((await lettersOf(groupA)).length > 0 ? lettersOf(groupA) : undefined));
      await waitFor('B dead letter', async () => ((await lettersOf(groupB)).length > 0 ? true : undefined));

      // Nothing is chosen by an id that is not listed, nor by a topic without letters.
      expect(await h.deadLetters.replay({ ids: ['no-such-letter'] })).toEqual([]);
      expect(await h.deadLetters.replay({ topic: Topics.file })).toEqual([]);

      round = 2;
      expect((await h.deadLetters.replay({ ids: [letterA!.id] })).map((l) => l.group)).toEqual([groupA]);
      const [again] = await waitFor('A dead again', async () => {
        const dead = await lettersOf(groupA, 'dead');
        return dead.length === 1 && dead[0]!.error === 'broken in round 2' ? dead : undefined;
      });
      expect(again).toMatchObject({ key: 'card-2', eventId, attempts: 2 });
      expect(triedByA).toEqual([1, 1, 2, 2]);
      expect((await lettersOf(groupB)).map((l) => [l.error, l.state])).toEqual([['broken for B', 'dead']]);

      round = 3;
      expect((await h.deadLetters.replay({ group: groupA })).map((l) => l.id)).toEqual([again!.id]);
      await waitFor('A dead a third time', async () => ((await lettersOf(groupA, 'dead'))[0]?.error === 'broken in round 3' ? true : undefined));
      expect(triedByA).toEqual([1, 1, 2, 2, 3, 3]);
    }, 120_000);
  });
}
