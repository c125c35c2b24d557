// The web app: bundle size, and how long headless Chromium takes to show the main pages served by the
// all-in-one gateway (cold = new browser context, nothing cached; warm = assets cached).
// Usage: pnpm exec tsx bench/web-bench.ts [runs=20]
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Mailbox } from '../test/support/mailbox';
import { startSystem } from '../test/support/service';
import { signUp } from '../test/support/accounts';
import { CHROMIUM_ARGS, findOrInstallChromium } from '../test/browser/support/chromium';

const runs = Number(process.argv[2] ?? 20);
const ROOT = join(__dirname, '..');

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function bundleSizes() {
  const dir = join(ROOT, 'web/dist/assets');
  return readdirSync(dir).map((name) => {
    const bytes = readFileSync(join(dir, name));
    return { name, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
  });
}

/** Milliseconds from navigation start until `selector` is visible, measured `runs` times. */
async function timeLoads(browser: Browser, url: string, selector: string, cold: boolean, cookie?: { name: string; value: string; url: string }): Promise<number[]> {
  const times: number[] = [];
  let warmPage: Page | undefined;
  if (!cold) {
    const ctx = await browser.newContext();
    if (cookie) await ctx.addCookies([cookie]);
    warmPage = await ctx.newPage();
    await warmPage.goto(url);
    await warmPage.locator(selector).first().waitFor();
  }
  for (let i = 0; i < runs; i++) {
    let page = warmPage;
    if (cold) {
      const ctx = await browser.newContext();
      if (cookie) await ctx.addCookies([cookie]);
      page = await ctx.newPage();
    }
    const started = performance.now();
    await page!.goto(url, { waitUntil: 'commit' });
    await page!.locator(selector).first().waitFor();
    times.push(performance.now() - started);
    if (cold) await page!.context().close();
  }
  if (warmPage) await warmPage.context().close();
  return times;
}

async function main() {
  const found = findOrInstallChromium();
  if (!('path' in found)) {
    console.log(`skipped: ${found.reason}`);
    return;
  }
  if (spawnSync(process.execPath, [join(ROOT, 'web/scripts/ensure-build.mjs')], { stdio: 'inherit' }).status !== 0) throw new Error('web build failed');
  console.log('bundle (web/dist/assets):');
  for (const f of bundleSizes()) console.log(`  ${f.name}: ${(f.raw / 1024).toFixed(1)} KiB raw, ${(f.gzip / 1024).toFixed(1)} KiB gzip`);

  const mailbox = new Mailbox();
  await mailbox.start();
  const system = await startSystem({ env: { SMTP_URL: mailbox.url, LOG_LEVEL: 'warn' } });
  const browser = await chromium.launch({ executablePath: found.path, args: CHROMIUM_ARGS });
  try {
    const user = await signUp(system.baseUrl, mailbox, 'bench');
    const words = Array.from({ length: 90 }, (_, i) => `word${i}`).join(' ');
    const created = await user.client.post('/api/card', { card_html: `<p>Benchmark card about lunar tides ${words}</p>`, link: '', private: false, tag_set: ['bench'] });
    if (created.status !== 200) throw new Error(`card: ${created.status} ${created.text}`);
    const cardId = created.json.card_metadata.id as string;
    const [name, value] = user.client.cookie!.split('=') as [string, string];
    const cookie = { name, value, url: system.baseUrl };

    const cases: { label: string; url: string; selector: string; cookie?: typeof cookie }[] = [
      { label: 'search page, anonymous', url: `${system.baseUrl}/`, selector: 'h1:has-text("Search the card library")' },
      { label: 'card page (deep link), anonymous', url: `${system.baseUrl}/card/${cardId}`, selector: '.card-body' },
      { label: 'full-text search results, signed in', url: `${system.baseUrl}/?q=lunar%20tides&mode=fulltext`, selector: `.results a[href="/card/${cardId}"]`, cookie },
      { label: 'notifications, signed in', url: `${system.baseUrl}/notifications`, selector: '[data-testid="unread-count"]', cookie },
    ];
    // Full-text indexing is asynchronous: wait until the card is findable before timing the search.
    for (let i = 0; i < 100; i++) {
      const r = await user.client.post('/api/card/fulltextsearch/1', { content: 'lunar tides' });
      if (JSON.stringify(r.json ?? {}).includes(cardId)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    console.log(`\npage ready (navigation -> content visible), ${runs} runs each, ms:`);
    console.log('| page | cold p50 | cold p90 | warm p50 | warm p90 |');
    console.log('|---|---|---|---|---|');
    for (const c of cases) {
      const cold = await timeLoads(browser, c.url, c.selector, true, c.cookie);
      const warm = await timeLoads(browser, c.url, c.selector, false, c.cookie);
      console.log(`| ${c.label} | ${percentile(cold, 50).toFixed(0)} | ${percentile(cold, 90).toFixed(0)} | ${percentile(warm, 50).toFixed(0)} | ${percentile(warm, 90).toFixed(0)} |`);
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
