// Mixed-workload load test through the gateway of the all-in-one: search (semantic and full-text), card
// reads, votes and card creation from many signed-in users at once, with autocannon.
// Usage: pnpm exec tsx bench/load-mixed.ts [seconds=60] [connections=100] [users=20] [seedCards=300]
import autocannon from 'autocannon';
import { createCardsClient } from '@cards/client';
import { Mailbox } from '../test/support/mailbox';
import { startSystem } from '../test/support/service';
import { signUp, type TestUser } from '../test/support/accounts';
import { html, uniqueText } from '../test/e2e/cards-support';

const seconds = Number(process.argv[2] ?? 60);
const connections = Number(process.argv[3] ?? 100);
const userCount = Number(process.argv[4] ?? 20);
const seedCards = Number(process.argv[5] ?? 300);

/** Share of each kind of request in the mix (cumulative thresholds below). */
const MIX = { search: 0.4, read: 0.3, vote: 0.2, create: 0.1 };
const QUERIES = ['river mountain library', 'harbor lantern', 'granite velvet compass', 'thunder willow', 'crystal ember falcon', 'glacier horizon island', 'rivr mountan', 'lagoon mosaic'];

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;

async function main() {
  const mailbox = new Mailbox();
  await mailbox.start();
  const system = await startSystem({ env: { SMTP_URL: mailbox.url, LOG_LEVEL: 'warn' } });
  try {
    const users: TestUser[] = [];
    for (let i = 0; i < userCount; i += 10) users.push(...(await Promise.all(Array.from({ length: Math.min(10, userCount - i) }, () => signUp(system.baseUrl, mailbox, 'load')))));
    const cardIds: string[] = [];
    for (let i = 0; i < seedCards; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, seedCards - i) }, async (_, j) => {
          const api = createCardsClient(system.baseUrl, { cookie: users[(i + j) % users.length]!.client.cookie });
          const res = await api.POST('/api/card', { body: { card_html: html(uniqueText()), link: '', private: false, tag_set: [pick(['news', 'science', 'history'])] } });
          return res.data!.card_metadata.id;
        }),
      );
      cardIds.push(...batch);
    }
    // Let the index catch up with the seed before measuring.
    const probe = createCardsClient(system.baseUrl);
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
      const last = await probe.GET('/api/card/{card_id}', { params: { path: { card_id: cardIds[cardIds.length - 1]! } } });
      if (last.data?.vector_point_id) break;
      await new Promise((r) => setTimeout(r, 500));
    }

    const kinds = { search: 0, read: 0, vote: 0, create: 0 };
    type Kind = keyof typeof kinds;
    const latencies: Record<Kind, number[]> = { search: [], read: [], vote: [], create: [] };
    // One request at a time per connection: the context remembers what was sent and when.
    const mark = (context: Record<string, unknown>, kind: Kind) => {
      kinds[kind]++;
      context.kind = kind;
      context.sentAt = performance.now();
    };
    const statuses = new Map<string, number>();
    const result = await autocannon({
      url: system.baseUrl,
      connections,
      duration: seconds,
      timeout: 30,
      requests: [
        {
          setupRequest(req, ctx: object) {
            const context = ctx as Record<string, unknown>;
            const user = pick(users);
            const roll = Math.random();
            const headers = { 'content-type': 'application/json', cookie: user.client.cookie! };
            if (roll < MIX.search) {
              mark(context, 'search');
              const path = Math.random() < 0.5 ? '/api/card/search/1' : '/api/card/fulltextsearch/1';
              return { ...req, method: 'POST', path, headers, body: JSON.stringify({ content: pick(QUERIES) }) };
            }
            if (roll < MIX.search + MIX.read) {
              mark(context, 'read');
              return { ...req, method: 'GET', path: `/api/card/${pick(cardIds)}`, headers, body: undefined };
            }
            if (roll < MIX.search + MIX.read + MIX.vote) {
              mark(context, 'vote');
              return { ...req, method: 'POST', path: '/api/vote', headers, body: JSON.stringify({ card_metadata_id: pick(cardIds), vote: Math.random() < 0.7 }) };
            }
            mark(context, 'create');
            return { ...req, method: 'POST', path: '/api/card', headers, body: JSON.stringify({ card_html: html(uniqueText()), link: '', private: false }) };
          },
          onResponse(status, _body, ctx: object) {
            const context = ctx as Record<string, unknown>;
            const kind = context.kind as Kind | undefined;
            if (kind) latencies[kind].push(performance.now() - (context.sentAt as number));
            const key = String(status);
            statuses.set(key, (statuses.get(key) ?? 0) + 1);
          },
        },
      ],
    });
    const count = (await probe.GET('/api/card/count')).data!.total_count;
    const health = await fetch(`${system.baseUrl}/healthz`);
    console.log(`\nmixed load: ${seconds} s, ${connections} connections, ${users.length} users, ${seedCards} seed cards`);
    console.log(`mix sent: search ${kinds.search}, read ${kinds.read}, vote ${kinds.vote}, create ${kinds.create}`);
    console.log(`requests: ${result.requests.total} (${result.requests.average.toFixed(0)} req/s average, ${result.requests.max} max)`);
    console.log(`latency ms: p50 ${result.latency.p50}, p90 ${result.latency.p90}, p99 ${result.latency.p99}, max ${result.latency.max}`);
    const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ?? NaN;
    for (const kind of Object.keys(latencies) as Kind[]) {
      const v = latencies[kind];
      console.log(`  ${kind}: ${v.length} answers, p50 ${pct(v, 50).toFixed(0)} ms, p90 ${pct(v, 90).toFixed(0)} ms, p99 ${pct(v, 99).toFixed(0)} ms`);
    }
    console.log(`statuses: ${[...statuses.entries()].sort().map(([s, n]) => `${s}x${n}`).join(' ')}`);
    console.log(`errors ${result.errors}, timeouts ${result.timeouts}, non-2xx ${result.non2xx}`);
    console.log(`cards after: ${count}; /healthz ${health.status}`);
  } finally {
    await system.stop();
    await mailbox.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
