// The web app as a person on a train sees it: Chromium with the DevTools protocol's network throttling (150 ms round
// trip, 1.6 Mbit/s down, 750 kbit/s up: Lighthouse's "slow 4G") and 4x CPU throttling, against an all-in-one on
// loopback. Prints the bytes each visit transfers (per file: encoding, Cache-Control, from cache or not), first
// contentful paint, time to a list of 25 search results, opening a card, opening the editor on a card at the word limit
// and the delay between a key press and the next frame while typing in it, and what the page shows while it waits and
// when the network drops mid-action.
// Usage: pnpm exec tsx bench/web-load-bench.ts [runs=5]   (BENCH_PORT=4616 to choose the gateway's port;
// WEB_DIST_DIR=<dir> to serve another build of the app)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import { Mailbox } from '../test/support/mailbox';
import { startSystem } from '../test/support/service';
import { signUp } from '../test/support/accounts';
import { CHROMIUM_ARGS, findOrInstallChromium } from '../test/browser/support/chromium';

const runs = Number(process.argv[2] ?? 5);
const ROOT = join(__dirname, '..');
const SLOW_4G = { offline: false, latency: 150, downloadThroughput: (1.6 * 1_000_000) / 8, uploadThroughput: (750 * 1000) / 8 };
const CPU_SLOWDOWN = 4;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

interface Transfer {
  url: string;
  status: number;
  encoded: number;
  body: number;
  encoding: string;
  cacheControl: string;
  fromCache: boolean;
}

/** A throttled page whose network answers are recorded through the DevTools protocol. */
async function throttledPage(context: BrowserContext): Promise<{ page: Page; cdp: CDPSession; transfers: Transfer[] }> {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', SLOW_4G);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: CPU_SLOWDOWN });
  const transfers: Transfer[] = [];
  const pending = new Map<string, Omit<Transfer, 'encoded' | 'body'>>();
  cdp.on('Network.responseReceived', (e) => {
    const h = Object.fromEntries(Object.entries(e.response.headers as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    pending.set(e.requestId, { url: e.response.url, status: e.response.status, encoding: h['content-encoding'] ?? '-', cacheControl: h['cache-control'] ?? '-', fromCache: Boolean(e.response.fromDiskCache || e.response.fromPrefetchCache || e.response.fromServiceWorker) });
  });
  cdp.on('Network.requestServedFromCache', (e) => {
    const p = pending.get(e.requestId);
    if (p) p.fromCache = true;
  });
  cdp.on('Network.dataReceived', (e) => {
    const p = pending.get(e.requestId) as (Omit<Transfer, 'encoded' | 'body'> & { bodyBytes?: number }) | undefined;
    if (p) p.bodyBytes = (p.bodyBytes ?? 0) + e.dataLength;
  });
  cdp.on('Network.loadingFinished', (e) => {
    const p = pending.get(e.requestId) as (Omit<Transfer, 'encoded' | 'body'> & { bodyBytes?: number }) | undefined;
    if (!p) return;
    pending.delete(e.requestId);
    transfers.push({ ...p, encoded: e.encodedDataLength, body: p.bodyBytes ?? 0 });
  });
  return { page, cdp, transfers };
}

const shortUrl = (u: string, base: string) => u.replace(base, '').replace(/\?.*$/, (q) => (q.length > 30 ? `${q.slice(0, 30)}…` : q));

function printTransfers(title: string, transfers: Transfer[], base: string): void {
  const total = transfers.reduce((s, t) => s + t.encoded, 0);
  console.log(`\n${title}: ${transfers.length} requests, ${kib(total)} transferred`);
  for (const t of transfers) {
    console.log(`  ${t.status} ${shortUrl(t.url, base)}: ${t.fromCache ? 'from cache' : `${kib(t.encoded)} on the wire`}, ${kib(t.body)} body, encoding ${t.encoding}, cache-control ${t.cacheControl}`);
  }
}

async function paints(page: Page): Promise<{ fcp: number | null }> {
  return page.evaluate(() => ({ fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null }));
}

/** At least `count` elements match `selector` (a function, not a string: the page's CSP refuses eval). */
type Ready = { selector: string; count: number };
async function waitFor(page: Page, ready: Ready): Promise<void> {
  try {
    await page.waitForFunction(({ selector, count }) => (globalThis as any).document.querySelectorAll(selector).length >= count, ready, { polling: 'raf', timeout: 120_000 });
  } catch (err) {
    const shown = await page.evaluate(() => ((globalThis as any).document.body.innerText as string).replace(/\s+/g, ' ').slice(0, 300)).catch(() => '?');
    throw new Error(`${ready.selector} x${ready.count} not shown on ${page.url()}; the page says ${JSON.stringify(shown)}: ${String(err)}`);
  }
}

/** Navigation start -> `ready` true in the page (polled on each frame), ms, from the page's own clock. */
async function timeUntil(page: Page, url: string, ready: Ready): Promise<{ ready: number; fcp: number | null }> {
  await page.goto(url, { waitUntil: 'commit' });
  await waitFor(page, ready);
  const readyAt = await page.evaluate(() => performance.now());
  return { ready: readyAt, fcp: (await paints(page)).fcp };
}

async function main() {
  const found = findOrInstallChromium();
  if (!('path' in found)) {
    console.log(`skipped: ${found.reason}`);
    return;
  }
  if (!process.env.WEB_DIST_DIR && spawnSync(process.execPath, [join(ROOT, 'web/scripts/ensure-build.mjs')], { stdio: 'inherit' }).status !== 0) throw new Error('web build failed');

  const mailbox = new Mailbox();
  await mailbox.start();
  const env: Record<string, string> = { SMTP_URL: mailbox.url, LOG_LEVEL: 'warn' };
  if (process.env.BENCH_PORT) env.PORT = process.env.BENCH_PORT;
  if (process.env.WEB_DIST_DIR) env.WEB_DIST_DIR = process.env.WEB_DIST_DIR;
  const system = await startSystem({ env });
  const base = system.baseUrl;
  const browser: Browser = await chromium.launch({ executablePath: found.path, args: CHROMIUM_ARGS });
  try {
    // 30 cards about harbour tides (a full first page of 25 results) and one card at the limits (5000 words, under
    // 29,000 characters: a card of 20,000 words is refused by the server, so this is the longest a person can edit).
    const user = await signUp(base, mailbox, 'webload');
    // Each card about its own subject (alike cards would be kept as collisions of one root, folded under it).
    const topics = [
      'violin orchestra symphony concert melody composer rehearsal chord', 'volcano lava eruption magma crater ash basalt tremor',
      'football stadium goalkeeper referee league penalty striker trophy', 'bakery bread flour dough oven yeast crust pastry',
      'satellite orbit rocket launch astronaut telescope galaxy comet', 'election parliament senator ballot campaign vote minister policy',
      'hospital surgeon nurse patient vaccine clinic diagnosis therapy', 'forest oak pine moss fern woodland canopy squirrel',
      'bitcoin bank loan interest mortgage inflation currency dividend', 'painting canvas museum sculpture gallery portrait artist brush',
      'chess knight bishop rook pawn checkmate gambit tournament', 'desert camel dune oasis sand cactus mirage nomad',
      'railway locomotive carriage station platform timetable track conductor', 'kitchen recipe garlic onion pepper sauce simmer spoon',
      'software compiler database server network algorithm keyboard debugging', 'wedding bride groom ceremony ring bouquet veil reception',
      'glacier iceberg arctic polar penguin snowfall frost blizzard', 'theatre actor stage curtain audience playwright rehearsal costume',
      'vineyard grape wine cellar barrel harvest vintage cork', 'mountain summit climber rope glacier altitude peak avalanche',
      'dinosaur fossil skeleton paleontology jurassic bones excavation extinct', 'poetry verse rhyme sonnet stanza poet metaphor ballad',
      'coffee espresso bean roast barista latte mug caffeine', 'tennis racket serve volley umpire wimbledon court backhand',
      'pharmacy medicine tablet dose prescription pill chemist syrup', 'jungle parrot monkey tiger rainforest vine jaguar swamp',
      'library librarian shelf novel catalogue archive manuscript reading', 'aircraft pilot runway cockpit airline jet hangar turbulence',
      'garden tulip rose soil compost seed hedge lawn', 'piano keyboard pianist sonata scales pedal concerto nocturne',
    ];
    const filler = (i: number) => Array.from({ length: 15 }, (_, k) => topics[i]!.split(' ').slice(k % 8).concat(topics[i]!.split(' ').slice(0, k % 8)).join(' ')).join('. ');
    const cardIds: string[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await user.client.post('/api/card', { card_html: `<p>Harbour tides. ${filler(i)}</p>`, link: '', private: false, tag_set: ['tides', `t${i}`] });
      if (r.status !== 200) throw new Error(`card: ${r.status} ${r.text}`);
      cardIds.push(r.json.card_metadata.id as string);
    }
    const words = ['sea', 'tide', 'moon', 'wave', 'salt', 'reef', 'gull', 'port'];
    const paragraphs = Array.from({ length: 100 }, (_, p) => `<p>${Array.from({ length: 50 }, (_, k) => words[(p + k) % words.length]).join(' ')}</p>`).join('');
    const long = await user.client.post('/api/card', { card_html: paragraphs, link: '', private: false, tag_set: ['long'] });
    if (long.status !== 200) throw new Error(`long card: ${long.status} ${long.text}`);
    const longId = long.json.card_metadata.id as string;
    const searchUrl = `${base}/?q=harbour%20tides&mode=fulltext`;
    for (let i = 0; i < 300; i++) {
      const r = await user.client.post('/api/card/fulltextsearch/1', { content: 'harbour tides' });
      if ((r.json?.score_cards?.length ?? 0) >= 25) break;
      if (i === 299) throw new Error(`the cards are not found: ${r.status} ${r.text.slice(0, 300)}`);
      await new Promise((res) => setTimeout(res, 200));
    }
    const [name, value] = user.client.cookie!.split('=') as [string, string];
    const cookie = { name, value, url: base };
    const resultsReady: Ready = { selector: 'ol.results > li', count: 25 };
    const cardReady: Ready = { selector: '.card-body', count: 1 };

    console.log(`Throttling: ${SLOW_4G.latency} ms latency, ${(SLOW_4G.downloadThroughput * 8) / 1e6} Mbit/s down, ${(SLOW_4G.uploadThroughput * 8) / 1e3} kbit/s up, CPU ${CPU_SLOWDOWN}x slower; ${runs} runs each (median, p90 where shown)`);

    // First and repeat visit of the search page with 25 results, anonymous.
    const first: { fcp: number[]; ready: number[] } = { fcp: [], ready: [] };
    const repeat: { fcp: number[]; ready: number[] } = { fcp: [], ready: [] };
    let firstTransfers: Transfer[] = [];
    let repeatTransfers: Transfer[] = [];
    let blankBeforeScript: string | undefined;
    for (let i = 0; i < runs; i++) {
      const context = await browser.newContext();
      const { page, transfers } = await throttledPage(context);
      const a = await timeUntil(page, searchUrl, resultsReady);
      first.ready.push(a.ready);
      if (a.fcp !== null) first.fcp.push(a.fcp);
      if (i === 0) firstTransfers = [...transfers];
      transfers.length = 0;
      // A new page of the same context: the HTTP cache is the browser's, the page's memory is new.
      const second = await throttledPage(context);
      const b = await timeUntil(second.page, searchUrl, resultsReady);
      repeat.ready.push(b.ready);
      if (b.fcp !== null) repeat.fcp.push(b.fcp);
      if (i === 0) repeatTransfers = [...second.transfers];
      await context.close();
    }
    {
      // What the page shows before its script has run: the HTML's own body text.
      const context = await browser.newContext({ javaScriptEnabled: false });
      const page = await context.newPage();
      await page.goto(searchUrl);
      blankBeforeScript = ((await page.evaluate(() => (globalThis as any).document.getElementById('app')?.textContent ?? '')) as string).trim();
      await context.close();
    }
    printTransfers('First visit, search page with 25 results (anonymous)', firstTransfers, base);
    printTransfers('Repeat visit (same browser, new tab)', repeatTransfers, base);
    console.log(`\n#app before the script runs: ${blankBeforeScript ? JSON.stringify(blankBeforeScript.slice(0, 80)) : '(empty: a blank page until the script has loaded and run)'}`);
    console.log('\n| search page, 25 results | FCP median | FCP p90 | 25 results median | 25 results p90 |');
    console.log('|---|---|---|---|---|');
    console.log(`| first visit | ${median(first.fcp).toFixed(0)} | ${percentile(first.fcp, 90).toFixed(0)} | ${median(first.ready).toFixed(0)} | ${percentile(first.ready, 90).toFixed(0)} |`);
    console.log(`| repeat visit | ${median(repeat.fcp).toFixed(0)} | ${percentile(repeat.fcp, 90).toFixed(0)} | ${median(repeat.ready).toFixed(0)} | ${percentile(repeat.ready, 90).toFixed(0)} |`);

    // Opening a card from the results (in-app navigation, assets cached) and as a deep link (first visit).
    const open: number[] = [];
    const deep: number[] = [];
    let cardTransfers: Transfer[] = [];
    for (let i = 0; i < runs; i++) {
      const context = await browser.newContext();
      const { page, transfers } = await throttledPage(context);
      await timeUntil(page, searchUrl, resultsReady);
      transfers.length = 0;
      const started = await page.evaluate(() => performance.now());
      await page.locator('ol.results > li a[href^="/card/"]').first().click();
      await waitFor(page, cardReady);
      open.push((await page.evaluate(() => performance.now())) - started);
      await context.close();
      const context2 = await browser.newContext();
      const p2 = await throttledPage(context2);
      const d = await timeUntil(p2.page, `${base}/card/${cardIds[i % cardIds.length]}`, cardReady);
      deep.push(d.ready);
      if (i === 0) cardTransfers = [...p2.transfers];
      await context2.close();
    }
    printTransfers('Card page as a deep link (first visit, anonymous)', cardTransfers, base);
    const editorOnReadPage = cardTransfers.some((t) => /card-text-editor/.test(t.url));
    console.log(`  editor chunk loaded on the read-only card page: ${editorOnReadPage ? 'YES' : 'no'}`);
    console.log(`\nopening a card from the results (assets cached): median ${median(open).toFixed(0)} ms, p90 ${percentile(open, 90).toFixed(0)} ms`);
    console.log(`card page as a deep link (first visit): median ${median(deep).toFixed(0)} ms, p90 ${percentile(deep, 90).toFixed(0)} ms`);

    // The editor on the long card: time to the editable text, then key -> next frame while typing at its end.
    const editorReady: number[] = [];
    const keyDelays: number[] = [];
    let editTransfers: Transfer[] = [];
    for (let i = 0; i < runs; i++) {
      const context = await browser.newContext();
      await context.addCookies([cookie]);
      const { page, transfers } = await throttledPage(context);
      const e = await timeUntil(page, `${base}/card/${longId}/edit`, { selector: '.ProseMirror', count: 1 });
      editorReady.push(e.ready);
      if (i === 0) editTransfers = [...transfers];
      await page.evaluate(() => {
        const w = (globalThis as any) as { keyDelays: number[]; document: any; requestAnimationFrame(f: () => void): void };
        w.keyDelays = [];
        let down = 0;
        w.document.addEventListener('keydown', () => (down = performance.now()), true);
        w.document.addEventListener('input', () => {
          const t0 = down;
          w.requestAnimationFrame(() => setTimeout(() => w.keyDelays.push(performance.now() - t0), 0));
        }, true);
      });
      const editor = page.locator('.ProseMirror');
      await editor.click();
      await page.keyboard.press('Control+End');
      await page.keyboard.type(' the tide turns at dusk', { delay: 60 });
      await page.waitForTimeout(500);
      keyDelays.push(...((await page.evaluate(() => (globalThis as any).keyDelays)) as number[]));
      await context.close();
    }
    printTransfers('Edit page of the long card (first visit, signed in)', editTransfers, base);
    console.log(`\neditor on a 5000-word card ready: median ${median(editorReady).toFixed(0)} ms, p90 ${percentile(editorReady, 90).toFixed(0)} ms`);
    console.log(`typing at its end, key press -> next frame (${keyDelays.length} keys): median ${median(keyDelays).toFixed(1)} ms, p90 ${percentile(keyDelays, 90).toFixed(1)} ms, max ${Math.max(...keyDelays).toFixed(1)} ms`);

    // Searching twice in a row, the first answer slowed: which results stay on the page?
    {
      const context = await browser.newContext();
      const { page } = await throttledPage(context);
      await timeUntil(page, `${base}/?mode=fulltext`, { selector: 'input[type=search]', count: 1 });
      let first = true;
      await page.route('**/api/card/fulltextsearch/**', async (route) => {
        if (first) {
          first = false;
          await new Promise((r) => setTimeout(r, 4000));
        }
        await route.continue();
      });
      const box = page.locator('input[type=search]');
      await box.fill('harbour tides');
      await box.press('Enter');
      await page.waitForTimeout(300);
      await box.fill('zzqx unmatched words');
      await box.press('Enter');
      await page.waitForTimeout(6000);
      const shown = await page.locator('ol.results > li').count();
      const aborted = await page.evaluate(() => performance.getEntriesByType('resource').filter((r) => r.name.includes('fulltextsearch')).length);
      console.log(`\nstale answer: a slow search then a newer one; the page shows ${shown} results (the newer search matches none: ${shown === 0 ? 'correct' : 'WRONG, the older answer replaced it'}); ${aborted} search requests completed`);
      await context.close();
    }

    // The network drops mid-action: a search and a vote sent offline; what does the page say?
    {
      const context = await browser.newContext();
      await context.addCookies([cookie]);
      const { page, cdp } = await throttledPage(context);
      await timeUntil(page, `${base}/card/${cardIds[0]}`, cardReady);
      await cdp.send('Network.emulateNetworkConditions', { ...SLOW_4G, offline: true });
      await page.getByRole('button', { name: /^Upvote/ }).click();
      await page.waitForTimeout(1500);
      const voteMessage = (await page.locator('.votes').innerText()).replace(/\s+/g, ' ');
      console.log(`\noffline vote: the page says ${JSON.stringify(voteMessage)}`);
      await page.getByRole('link', { name: 'Search' }).click();
      const box = page.locator('input[type=search]');
      await box.fill('harbour');
      await box.press('Enter');
      await page.waitForTimeout(1500);
      const searchMessage = (await page.locator('main').innerText()).replace(/\s+/g, ' ').slice(0, 400);
      console.log(`offline search: the page says ${JSON.stringify(searchMessage)}`);
      await context.close();
    }
  } finally {
    await browser.close();
    await system.stop();
    await mailbox.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
