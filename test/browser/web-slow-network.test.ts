/**
 * The web app on a slow network (what bench/web-load-bench.ts measured), in headless Chromium against the all-in-one:
 * the page says it is loading before its script has arrived, the app's script comes compressed, and the card form's
 * editor chunk is asked for while the edited card is still on its way rather than after it. No timing is asserted:
 * answers are held with page.route to see what the page does meanwhile.
 */
import type { Page, Request, Route } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import { chromiumForSuite } from './support/chromium';
import { startBrowserSystem, type BrowserSystem } from './support/browser-system';

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(120_000);

let running: BrowserSystem | undefined;
let page: Page;
let user: TestUser;
const mailbox = new Mailbox();

/** Holds the answers to requests matching `pattern` until the returned release() is called. */
async function hold(pattern: string | RegExp): Promise<{ held: Promise<Route>; release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let heldRoute!: (route: Route) => void;
  const held = new Promise<Route>((r) => (heldRoute = r));
  let continued: Promise<void> = Promise.resolve();
  await page.route(pattern, (route) => {
    heldRoute(route);
    continued = released.then(() => route.continue());
    return continued;
  }, { times: 1 });
  return {
    held,
    release: async () => {
      release();
      await continued;
    },
  };
}

describeInBrowser('the web app on a slow network, in headless Chromium', () => {
  beforeAll(async () => {
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-slow-network' });
    ({ page } = running);
    user = await signUp(running.system.baseUrl, mailbox, 'web-slow');
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('says it is loading while its script is on the way, not a blank page; the script comes compressed', async () => {
    const script = await hold(/\/assets\/index-[^/]*\.js$/);
    await page.goto('/', { waitUntil: 'commit' });
    await script.held;
    const status = page.locator('#app').getByRole('status');
    await status.waitFor();
    expect(await status.textContent()).toBe('Loading the Card Library…');
    const answered = page.waitForResponse(/\/assets\/index-[^/]*\.js$/);
    await script.release();
    const response = await answered;
    expect(response.headers()['content-encoding']).toMatch(/^(br|gzip)$/);
    await page.getByRole('heading', { level: 1, name: 'Search the card library' }).waitFor();
    expect(await page.getByText('Loading the Card Library…').count()).toBe(0);
  });

  it('aborts a search the page no longer wants: a newer search sent while the older answer is on its way', async () => {
    await page.goto('/?mode=fulltext');
    const box = page.getByRole('searchbox', { name: 'Search cards' });
    await box.waitFor();
    const older = await hold(/\/api\/card\/fulltextsearch\/1$/);
    const failed: string[] = [];
    const onFailed = (r: Request) => {
      if (r.url().includes('/api/card/fulltextsearch/')) failed.push(`${r.postData() ?? ''} ${r.failure()?.errorText ?? ''}`);
    };
    page.on('requestfailed', onFailed);
    try {
      await box.fill('an older question');
      await box.press('Enter');
      await older.held;
      await box.fill('a newer question');
      await box.press('Enter');
      await page.getByTestId('search-status').filter({ hasText: 'No results.' }).waitFor();
      await older.release().catch(() => undefined);
      // The older request was aborted by the page (it only took up the link), not answered late.
      expect(failed).toEqual([expect.stringMatching(/an older question.*ERR_ABORTED/)]);
      expect(await box.inputValue()).toBe('a newer question');
    } finally {
      page.off('requestfailed', onFailed);
    }
  });

  it('says the server did not answer in time when a connection stalls, instead of loading for ever', async () => {
    // Its own page: the fake clock must be in place before the app's script runs, and must not touch the other tests.
    const stalled = await running!.context.newPage();
    try {
      await stalled.clock.install();
      await stalled.route(/\/api\/card\/fulltextsearch\/1$/, () => undefined); // never answered, never failed
      await stalled.goto('/?mode=fulltext');
      const box = stalled.getByRole('searchbox', { name: 'Search cards' });
      await box.fill('a question on a train in a tunnel');
      const asked = stalled.waitForRequest(/\/api\/card\/fulltextsearch\/1$/);
      await box.press('Enter');
      await asked;
      await stalled.clock.fastForward(31_000);
      await stalled.getByText(/did not answer within 30 seconds/).waitFor();
    } finally {
      await stalled.close();
    }
  });

  it('asks for the editor chunk while the edited card is still loading, not after it', async () => {
    const words = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
    const created = await user.client.post('/api/card', { card_html: `<p>A card to edit on a train ${words}</p>`, link: '', private: false, tag_set: ['train'] });
    expect(created.status).toBe(200);
    const cardId = created.json.card_metadata.id as string;
    const [name, value] = user.client.cookie!.split('=') as [string, string];
    await running!.context.addCookies([{ name, value, url: running!.system.baseUrl }]);
    // A fresh page of a fresh origin state: the chunk must not be in memory from an earlier page.
    await page.goto('about:blank');
    const card = await hold(new RegExp(`/api/card/${cardId}$`));
    const editorAsked: Promise<Request> = page.waitForRequest(/\/assets\/card-text-editor-[^/]*\.js$/, { timeout: 30_000 });
    await page.goto(`/card/${cardId}/edit`, { waitUntil: 'commit' });
    await card.held;
    // The card's answer is still held here: before, the form asked for the editor only once the card had arrived.
    await editorAsked;
    await card.release();
    await page.locator('.ProseMirror').filter({ hasText: 'A card to edit on a train' }).waitFor();
  });
});
