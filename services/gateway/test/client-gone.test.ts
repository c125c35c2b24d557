import { enableInProcessCalls } from '@cards/platform';
import type { CallContext } from 'nice-grpc';
import { until } from './app-without-services';
import { gatewayInFrontOf, stubPeersForSuite, tokenIsUser, type GatewayInFront } from './fake-peer';

/**
 * Work for clients that have gone away stops: a read's or a search's gRPC calls are cancelled when its client goes
 * away before the answer (the services see a cancelled call, context.signal aborted), while a write's calls run to
 * their end. Over the network and in process (the all-in-one), as both paths carry the request's signal. The peers
 * hold each call until the test lets it go or the call is cancelled, so nothing here depends on timing.
 */

interface Held {
  context: CallContext;
  /** Settles with 'cancelled' when the call's signal is aborted, 'released' when the test lets the call answer. */
  outcome: Promise<'cancelled' | 'released'>;
  release(): void;
}

/** Calls the peer holds, in order of arrival. */
let held: Held[] = [];
let onHeld: () => void = () => undefined;

function hold(context: CallContext): Held {
  let release!: () => void;
  const released = new Promise<'released'>((resolve) => (release = () => resolve('released')));
  const cancelled = new Promise<'cancelled'>((resolve) => {
    if (context.signal.aborted) resolve('cancelled');
    context.signal.addEventListener('abort', () => resolve('cancelled'));
  });
  const call = { context, outcome: Promise.race([cancelled, released]), release };
  held.push(call);
  onHeld();
  return call;
}

function untilHeld(n: number): Promise<Held> {
  return new Promise((resolve) => {
    const check = () => {
      if (held.length >= n) resolve(held[n - 1]!);
    };
    onHeld = check;
    check();
  });
}

const CARD = { id: '0b7a3c3e-9d5e-4c51-8f0a-2a7e2f1d9e01', authorId: 'u1', html: '<p>x</p>', link: '', tags: [], private: false };

const peers = stubPeersForSuite({
  identity: tokenIsUser,
  search: {
    async semanticSearch(_req, context) {
      await hold(context).outcome;
      return { hits: [], totalPages: 0 };
    },
  },
  cards: {
    async countCards(_req, context) {
      await hold(context).outcome;
      return { totalCount: 7 };
    },
    async createCard(_req, context) {
      await hold(context).outcome;
      return { card: CARD as never, duplicate: false };
    },
  },
});

describe.each([
  ['over the network', false],
  ['in process', true],
])('work for a client that has gone away, %s', (_transport, inProcess) => {
  let gateway: GatewayInFront;
  let base: string;

  beforeEach(async () => {
    enableInProcessCalls(inProcess);
    held = [];
    // The access log on: its line for a client that left (499) tells the test the gateway has seen the client go.
    gateway = await gatewayInFrontOf(peers.address, { deadlineMs: 60_000, app: { accessLogLevel: 'info' } });
    base = gateway.base;
  });
  afterEach(async () => {
    held.forEach((call) => call.release());
    enableInProcessCalls(false);
    await gateway.close();
  });

  const as = (init: RequestInit) => ({ ...init, headers: { ...(init.headers as Record<string, string>), cookie: 'ai-editor=u1', 'content-type': 'application/json' } });

  test("a search's call is cancelled in the service once its client goes away, and no failure is logged", async () => {
    const client = new AbortController();
    const answer = fetch(`${base}/api/card/search/1`, as({ method: 'POST', body: JSON.stringify({ content: 'river' }), signal: client.signal })).catch((err: unknown) => err);
    const call = await untilHeld(1);
    client.abort();
    // Before, the service's handler went on (here: held until released) for a client that had gone.
    expect(await call.outcome).toBe('cancelled');
    expect(await answer).toMatchObject({ name: 'AbortError' });
    // The gateway's own answer to the cut call ends quietly: no 'request failed' error line for a client that left.
    const second = fetch(`${base}/api/card/count`, as({}));
    (await untilHeld(2)).release();
    expect((await second).status).toBe(200);
    expect(gateway.logged.join('')).not.toMatch(/request failed|unexpected error/);
  });

  test('a read answered in full is not cancelled, and the next read of the same client is served', async () => {
    const first = fetch(`${base}/api/card/count`, as({}));
    const call = await untilHeld(1);
    call.release();
    expect(await (await first).json()).toEqual({ total_count: 7 });
    expect(call.context.signal.aborted).toBe(false);
  });

  test("a card create's call runs to its end though its client went away: a write is never cut half-way", async () => {
    const client = new AbortController();
    const answer = fetch(`${base}/api/card`, as({ method: 'POST', body: JSON.stringify({ card_html: '<p>x</p>', link: '', private: false }), signal: client.signal })).catch((err: unknown) => err);
    const call = await untilHeld(1);
    client.abort();
    expect(await answer).toMatchObject({ name: 'AbortError' });
    await until(async () => gateway.logged.some((line) => line.includes('"status":499')));
    expect(call.context.signal.aborted).toBe(false);
    // The create's work goes on, so it keeps its heavy slot until it ends (request-admission's whenWorkEnds).
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^http_requests_in_flight\{line="heavy"\} 1$/m);
    call.release();
    expect(await call.outcome).toBe('released');
    expect(call.context.signal.aborted).toBe(false);
    await until(async () => /^http_requests_in_flight\{line="heavy"\} 0$/m.test(await (await fetch(`${base}/metrics`)).text()));
  });
});
