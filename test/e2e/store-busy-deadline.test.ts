import { holdWriteLockHere } from '../support/sqlite-lock-holder';
import { join } from 'node:path';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';

// A store held by another process answers 503 "Service busy" with Retry-After whatever the caller's deadline: the
// service's waits for the lock end within the time its caller gives the call (four fifths of it, sent with the call),
// not after busy_timeout (5 s) per write. With the gateway's GRPC_DEADLINE_MS below that (here 4 s), or several writes
// of one call each waiting, the client got a 504 "took too long", which says nothing of the cause and is not to be
// retried as such. store-busy.test.ts has the default deadline. One process per service: in the all-in-one the cards
// service's wait inside SQLite also stopped the gateway's deadline timer, which then fired after the busy answer.

const mailbox = new Mailbox();
let system: RunningSystem;
let user: TestUser;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, GRPC_DEADLINE_MS: '4000', SYSTEM_TOPOLOGY: 'distributed' } });
  user = await signUp(system.baseUrl, mailbox, 'store-busy-deadline');
}, 180_000);

afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

/** A connection of this test process holding `store`'s write lock (BEGIN IMMEDIATE) until `release()`. */
function holdWriteLock(store: string): { release(): void } {
  return holdWriteLockHere(join(system.dataDir, store));
}

it("a card created while the cards store is held past the gateway's deadline answers 503 Service busy with Retry-After, not 504", async () => {
  const text = uniqueText();
  // Held until the answer arrives: the cards service gives up waiting before the gateway gives up on it.
  const lock = holdWriteLock('cards/cards.db');
  let held;
  try {
    held = await user.client.post('/api/card', { card_html: html(text), link: '', private: false });
  } finally {
    lock.release();
  }
  expect({ status: held.status, retryAfter: held.headers.get('retry-after'), message: held.json?.message }).toEqual({
    status: 503,
    retryAfter: expect.stringMatching(/^\d+$/),
    message: expect.stringMatching(/^Service busy/),
  });
  // Nothing was written: the same card is created once let go, and only once.
  const created = await user.client.post('/api/card', { card_html: html(text), link: '', private: false });
  expect(created.status).toBe(200);
  const mine = await user.client.get(`/api/user/${user.id}/1`);
  expect((mine.json.cards as { id: string }[]).length).toBe(1);
}, 60_000);
