// How long cleaning one large card's HTML holds the cards service's event loop: the longest gap between two turns of
// a 1 ms timer while a 300 KB card of nested markup is cleaned, on the calling thread (cardTextFromHtml, as before
// WorkerCardHtmlCleaner) and through WorkerCardHtmlCleaner (a worker thread), 20 rounds each after a warm-up; then an
// idle wait of the same length, the machine's own noise. Usage: pnpm exec tsx bench/card-html-hold.ts
import { performance } from 'node:perf_hooks';
import { WorkerCardHtmlCleaner } from '../services/cards/src/adapters/worker-threads/worker-card-html-cleaner';
import { cardTextFromHtml } from '../services/cards/src/domain/rules';
import { longestEventLoopGap } from './support/event-loop-gap';

/** ~300 KB: 3,400 paragraphs of eight nested inline elements around one word (a valid card). */
function nestedCard(): string {
  let out = '';
  for (let i = 0; out.length < 300_000; i++) out += `<p><span><b><i><em><strong><u><mark>w${i % 100}</mark></u></strong></em></i></b></span></p>`;
  return out;
}

async function longestGaps(run: () => Promise<unknown>, rounds: number): Promise<number[]> {
  const gaps: number[] = [];
  for (let r = 0; r < rounds; r++) gaps.push((await longestEventLoopGap(run)).gap);
  return gaps.sort((a, b) => a - b);
}

const summary = (gaps: number[]) => `median ${gaps[Math.floor(gaps.length / 2)]!.toFixed(1)} ms, max ${gaps.at(-1)!.toFixed(1)} ms`;

async function main(): Promise<void> {
  const html = nestedCard();
  console.log(`card HTML: ${html.length} characters`);
  for (let i = 0; i < 5; i++) cardTextFromHtml(html);
  console.log(`on the calling thread: longest event-loop gap ${summary(await longestGaps(async () => cardTextFromHtml(html), 20))}`);
  const cleaner = new WorkerCardHtmlCleaner();
  for (let i = 0; i < 5; i++) await cleaner.clean(html);
  const started = performance.now();
  const gaps = await longestGaps(() => cleaner.clean(html), 20);
  console.log(`on a worker thread: longest event-loop gap ${summary(gaps)} (${((performance.now() - started) / 20).toFixed(0)} ms a round)`);
  console.log(`idle 80 ms (noise): longest event-loop gap ${summary(await longestGaps(() => new Promise((resolve) => setTimeout(resolve, 80)), 20))}`);
  if (JSON.stringify(await cleaner.clean(html)) !== JSON.stringify(cardTextFromHtml(html))) throw new Error('the worker cleaned the card differently');
  await cleaner.close();
}

void main();
