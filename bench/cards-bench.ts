// Cards through the gateway (HTTP -> gateway -> cards gRPC + identity for authors) versus the same operations
// done directly on the cards store (SQLite repositories, in this process), measured in one run.
// Usage: pnpm exec tsx bench/cards-bench.ts [cards=10000] [viaGateway=cards] [concurrency=16] [samples=2000]
// viaGateway < cards: that many are created through the gateway (and timed); the rest are written straight
// into the cards store (no events, so search does not index them) so that reads are measured at `cards` cards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { cardTextFromHtml, fingerprintOf, openCardsDatabase, SqliteCardRepository, SqliteVoteRepository, type Card } from '@cards/cards';
import { Mailbox } from '../test/support/mailbox';
import { startSystem } from '../test/support/service';
import { signUp } from '../test/support/accounts';
import { html, uniqueText } from '../test/e2e/cards-support';

const total = Number(process.argv[2] ?? 10_000);
const viaGateway = Math.min(total, Number(process.argv[3] ?? total));
const concurrency = Number(process.argv[4] ?? 16);
const samples = Number(process.argv[5] ?? 2000);

/** A keep-alive socket closed by the server at the moment it is reused fails the fetch: retry those (never HTTP errors). */
async function retrying<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= 3 || !(err instanceof TypeError)) throw err;
    }
  }
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const fmt = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(2)} ms`);

async function timed(count: number, op: (i: number) => Promise<unknown> | unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = nowMs();
    await op(i);
    out.push(nowMs() - t);
  }
  return out;
}

async function main() {
  const mailbox = new Mailbox();
  await mailbox.start();
  const system = await startSystem({ env: { SMTP_URL: mailbox.url, LOG_LEVEL: 'warn' } });
  const scratch = mkdtempSync(join(tmpdir(), 'cards-bench-'));
  try {
    const author = await signUp(system.baseUrl, mailbox, 'bench');
    const bodies = Array.from({ length: total }, () => ({ card_html: html(uniqueText(80)), link: 'https://example.com/article', private: false, tag_set: ['bench'] }));

    // 1. Create through the gateway.
    const ids: string[] = [];
    let next = 0;
    let failures = 0;
    const started = nowMs();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < viaGateway) {
          const body = bodies[next++]!;
          const res = await retrying(() => author.client.post('/api/card', body));
          if (res.status === 200) ids.push(res.json.card_metadata.id);
          else failures++;
        }
      }),
    );
    const gatewayCreateSeconds = (nowMs() - started) / 1000;
    const createdViaGateway = ids.length;

    // 1'. The same creations directly on a fresh store: sanitize + derive, duplicate lookups, insert.
    const scratchDb = openCardsDatabase(join(scratch, 'cards.db'));
    const scratchCards = new SqliteCardRepository(scratchDb);
    const directStarted = nowMs();
    for (const body of bodies) {
      const { cardHtml, content } = cardTextFromHtml(body.card_html);
      const fp = fingerprintOf(content);
      await scratchCards.findByContentHash(fp.contentHash, 20);
      await scratchCards.findBySketch(fp.sketch, 4, 20);
      const at = new Date();
      const card: Card = {
        id: randomUUID(), authorId: author.id, content, cardHtml, link: body.link, private: false, tags: body.tag_set, fileId: null, fileName: null, ocFilePath: null,
        vectorPointId: null, verificationScore: null, verifiedAt: null, collisionOf: null, totalUpvotes: 0, totalDownvotes: 0, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at,
      };
      await scratchCards.insert(card, fp, []);
    }
    const directCreateSeconds = (nowMs() - directStarted) / 1000;
    scratchDb.close();

    // 1''. Top the live store up to `total` cards of the same author (straight into SQLite, no events).
    const liveDb = openCardsDatabase(join(system.dataDir, 'cards', 'cards.db'));
    const cards = new SqliteCardRepository(liveDb);
    const votes = new SqliteVoteRepository(liveDb);
    for (const body of bodies.slice(viaGateway)) {
      const { cardHtml, content } = cardTextFromHtml(body.card_html);
      const at = new Date();
      const card: Card = {
        id: randomUUID(), authorId: author.id, content, cardHtml, link: body.link, private: false, tags: body.tag_set, fileId: null, fileName: null, ocFilePath: null,
        vectorPointId: null, verificationScore: null, verifiedAt: null, collisionOf: null, totalUpvotes: 0, totalDownvotes: 0, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at,
      };
      await cards.insert(card, fingerprintOf(content), []);
      ids.push(card.id);
    }
    console.error(`created ${createdViaGateway} cards through the gateway in ${gatewayCreateSeconds.toFixed(0)} s, ${ids.length} in the store; reading them back`);
    // 2. Read every card back through the gateway (concurrently), then time `samples` single reads for latency.
    let cursor = 0;
    let readOk = 0;
    const readStarted = nowMs();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (cursor < ids.length) {
          const id = ids[cursor++]!;
          const res = await retrying(() => author.client.get(`/api/card/${id}`));
          if (res.status === 200) readOk++;
          else failures++;
        }
      }),
    );
    const readBackSeconds = (nowMs() - readStarted) / 1000;
    const sampleId = (i: number) => ids[(i * 7919) % ids.length]!;
    const readBack = await timed(samples, async (i) => {
      const res = await retrying(() => author.client.get(`/api/card/${sampleId(i)}`));
      if (res.status !== 200) failures++;
    });

    // 2'. The same reads directly on the live store (card + the viewer's vote).
    const directRead = await timed(samples, async (i) => {
      const card = await cards.findById(sampleId(i));
      await votes.votesOf(author.id, [card!.id]);
    });

    // 3. User pages at 10,000 cards: random pages through the gateway, then directly.
    const pages = Math.ceil(ids.length / 25);
    const pageOf = (i: number) => 1 + ((i * 7919) % pages);
    const gatewayPages = await timed(samples, async (i) => {
      const res = await retrying(() => author.client.get(`/api/user/${author.id}/${pageOf(i)}`));
      if (res.status !== 200 || res.json.cards.length === 0) failures++;
    });
    const directPages = await timed(samples, async (i) => {
      const list = await cards.listByAuthor(author.id, true, (pageOf(i) - 1) * 25, 25);
      await Promise.all([cards.countByAuthor(author.id, true), votes.received(author.id), votes.countCastBy(author.id), votes.votesOf(author.id, list.map((c) => c.id))]);
    });
    liveDb.close();

    const row = (name: string, g: number[], d: number[]) =>
      `${name}: gateway p50 ${fmt(percentile(g, 50))}, p99 ${fmt(percentile(g, 99))} | store p50 ${fmt(percentile(d, 50))}, p99 ${fmt(percentile(d, 99))} | p50 ratio ${(percentile(g, 50) / percentile(d, 50)).toFixed(0)}x`;
    const gatewayRate = createdViaGateway / gatewayCreateSeconds;
    console.log(`cards bench: ${ids.length} cards in the store, ${createdViaGateway} of them created through the gateway (${failures} failures), ${concurrency} concurrent clients, node ${process.version}`);
    console.log(`create: gateway ${gatewayRate.toFixed(1)} cards/s | store ${(total / directCreateSeconds).toFixed(0)} cards/s | ratio ${(total / directCreateSeconds / gatewayRate).toFixed(1)}x`);
    console.log(`read back: ${readOk} of ${ids.length} cards answered 200 at ${(readOk / readBackSeconds).toFixed(0)} reads/s (${concurrency} concurrent)`);
    console.log(row(`GET /api/card/:id (${samples} reads, sequential)`, readBack, directRead));
    console.log(row(`GET /api/user/:id/:page (${samples} random pages of ${pages}, sequential)`, gatewayPages, directPages));
  } finally {
    await system.stop();
    await mailbox.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
