/**
 * The card form's rich-text editor and what the app says about a card's verification, in headless Chromium against
 * the all-in-one system (the setup of web-app-audit.test.ts): the form edits the formatted text (a contenteditable
 * limited to the card allow-list, with a toolbar and shortcuts, one tab stop for the toolbar), cleans a paste to the
 * allow-list without a CSP refusal, sends an edit's HTML only when the text changed; a score of 0 (the source page
 * could not be read) is not shown as "Verified 0/100".
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import { freePort, startSystem, type RunningSystem } from '../support/service';
import { CHROMIUM_ARGS, findOrInstallChromium } from './support/chromium';

const ROOT = resolve(__dirname, '../..');
const browserFound = findOrInstallChromium();
const describeInBrowser = 'path' in browserFound ? describe : describe.skip;
if ('reason' in browserFound) console.warn(`SKIPPED browser tests: ${browserFound.reason}`);

jest.setTimeout(120_000);

const CARD_TEXT = Array.from({ length: 8 }, (_, i) => `Sentence ${i} about the tides of the sea, the pull of the Moon and the slow lengthening of our days.`).join(' ');
/** The card written in the form: other words, so it is not kept as a duplicate of the cards made through the API. */
const FORM_TEXT = Array.from({ length: 8 }, (_, i) => `Point ${i}: volcanic islands rise from hot spots in the mantle while the plate above them drifts slowly away.`).join(' ');

let system: RunningSystem;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let user: TestUser;
let article: Server;
let articleBase = '';
const mailbox = new Mailbox();
/** Script errors and Content-Security-Policy refusals seen on the page during the whole run. */
const pageProblems: string[] = [];

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** WCAG 2 A/AA rules of axe-core on the page as it is now (as web-app.test.ts runs them). */
async function accessibilityProblems(): Promise<string[]> {
  if (!(await page.evaluate<boolean>('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate<{ id: string; help: string; nodes: { target: string[] }[] }[]>(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }).then((r) => r.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))`,
  );
  return violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

async function eventually(attempt: () => Promise<boolean>, timeoutMs = 60_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await attempt()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 750));
  }
}

async function signIn(): Promise<void> {
  const login = await fetch(`${system.baseUrl}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: user.email, password: user.password }) });
  const pair = login.headers.getSetCookie().map((c) => c.split(';')[0]!).find((c) => c.startsWith('ai-editor='))!;
  await context.clearCookies();
  await context.addCookies([{ name: 'ai-editor', value: pair.slice('ai-editor='.length), url: system.baseUrl }]);
}

/** A card made through the API, and its verification score once verification has run (null: wait for none). */
async function cardWithLink(html: string, link: string): Promise<string> {
  const created = await user.client.post('/api/card', { card_html: html, link, private: false, tag_set: [] });
  if (created.status !== 200) throw new Error(`card not created: ${created.status} ${created.text}`);
  return (created.json as { card_metadata: { id: string } }).card_metadata.id;
}

async function scoreOf(cardId: string): Promise<number | null> {
  return ((await user.client.get(`/api/card/${cardId}`)).json as { verification_score: number | null }).verification_score;
}

/** The editor's HTML as the HTML view shows it (and back to the formatted view). */
async function editorHtml(): Promise<string> {
  const toggle = page.getByRole('button', { name: 'Edit as HTML' });
  await toggle.click();
  const html = await page.getByLabel('Card text (HTML)').inputValue();
  await toggle.click();
  await page.getByRole('textbox', { name: 'Card text', exact: true }).waitFor();
  return html;
}

describeInBrowser('the card form’s rich-text editor and the verification display', () => {
  beforeAll(async () => {
    const build = spawnSync(process.execPath, [join(ROOT, 'web/scripts/ensure-build.mjs')], { stdio: 'inherit' });
    if (build.status !== 0) throw new Error('web app build failed');
    // /tides holds the card's text (a strong match); /gone answers 404, a page that cannot be read (score 0).
    article = createServer((req, res) => {
      if (req.url === '/tides') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><html><head><title>Tides</title></head><body><p>${CARD_TEXT}</p></body></html>`);
      } else {
        res.writeHead(404, { 'content-type': 'text/html' });
        res.end('<!doctype html><title>Not found</title>');
      }
    });
    await new Promise<void>((r) => article.listen(0, '127.0.0.1', () => r()));
    const articlePort = (article.address() as { port: number }).port;
    articleBase = `http://127.0.0.1:${articlePort}`;
    await mailbox.start();
    const port = await freePort();
    system = await startSystem({
      env: {
        PORT: String(port),
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        COOKIE_SECURE: 'false',
        SMTP_URL: mailbox.url,
        VERIFY_ALLOW_HOSTS: `127.0.0.1:${articlePort}`,
        DATA_DIR: join(tmpdir(), `cards-web-editor-${Date.now()}`),
      },
    });
    user = await signUp(system.baseUrl, mailbox, 'web-editor');
    browser = await chromium.launch({ executablePath: (browserFound as { path: string }).path, args: CHROMIUM_ARGS });
    context = await browser.newContext({ baseURL: system.baseUrl, viewport: { width: 1200, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (err) => pageProblems.push(`script error: ${err.message}`));
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) pageProblems.push(`CSP: ${msg.text()}`);
    });
    await signIn();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await mailbox.stop();
    await new Promise<void>((r) => (article ? article.close(() => r()) : r()));
  });

  it('says what a verification score means: 0 is a page that could not be read, not "Verified 0/100"', async () => {
    const unreadable = await cardWithLink(`<p>${CARD_TEXT} Unreadable source.</p>`, `${articleBase}/gone`);
    const matching = await cardWithLink(`<p>${CARD_TEXT} Matching source.</p>`, `${articleBase}/tides`);
    await eventually(async () => (await scoreOf(unreadable)) !== null && (await scoreOf(matching)) !== null, 60_000, 'both verifications');
    expect(await scoreOf(unreadable)).toBe(0);
    expect(await scoreOf(matching)).toBeGreaterThanOrEqual(70);

    await page.goto(`/card/${unreadable}`);
    const facts = page.locator('.facts');
    await facts.getByText('Source not confirmed (0/100)').waitFor();
    await facts.getByText('the source page could not be read (unreachable, not a web page, or too large), or it shares no text with the card.').waitFor();
    expect(await page.locator('main').textContent()).not.toContain('Verified');

    await page.goto(`/card/${matching}`);
    await facts.getByText(/^Strong match with source \(\d+\/100\)$/).waitFor();
    await facts.getByText('most of the card’s words are on its source page.').waitFor();
    expect(await accessibilityProblems()).toEqual([]);

    // Not verified yet: a card whose link is still waiting (the answer as the API gives it before the check ends).
    await page.route(`**/api/card/${matching}`, async (route) => {
      const answer = (await (await route.fetch()).json()) as Record<string, unknown>;
      await route.fulfill({ json: { ...answer, verification_score: null } });
    });
    await page.goto(`/card/${matching}`);
    await facts.getByText('Not verified yet').waitFor();
    await facts.getByText('the source page is waiting to be checked.').waitFor();
    await page.unroute(`**/api/card/${matching}`);

    // The user's list of cards shows the same words in its badges.
    await page.goto(`/user/${user.id}`);
    await page.locator(`.card-summary:has(a[href="/card/${unreadable}"]) [data-testid="verification"]`).getByText('Source not confirmed (0/100)').waitFor();

    // The notifications say it too.
    await page.goto('/notifications');
    await page.getByText('was checked, but its source page could not be read or shares no text with it (score 0/100).').waitFor();
    await page.getByText(/was checked against its source page: strong match, score \d+\/100\./).waitFor();
    expect(pageProblems).toEqual([]);
  });

  it('writes a card with the toolbar and shortcuts; the saved card holds that formatting', async () => {
    await page.goto('/card/new');
    const text = page.getByRole('textbox', { name: 'Card text', exact: true });
    await text.waitFor();
    expect(await text.getAttribute('contenteditable')).toBe('true');
    await text.click();
    await page.waitForTimeout(100);
    await page.keyboard.type('Why the Moon keeps one face');
    await page.getByLabel('Text style').selectOption({ label: 'Heading' });
    await text.click();
    await page.waitForTimeout(100);
    await page.keyboard.press('Control+End');
    await page.keyboard.press('Enter');
    await page.keyboard.type(FORM_TEXT.slice(0, 60));
    // Shortcut: bold on, a few words, bold off.
    await page.keyboard.press('Control+b');
    await page.keyboard.type(' tidal locking');
    const bold = page.getByRole('button', { name: 'Bold' });
    expect(await bold.getAttribute('aria-pressed')).toBe('true');
    await page.keyboard.press('Control+b');
    expect(await bold.getAttribute('aria-pressed')).toBe('false');
    await page.keyboard.type(`${FORM_TEXT.slice(60)} `);
    // A link by Ctrl+K: an address that is not http(s) is refused in the field, a good one applied.
    await page.keyboard.press('Control+k');
    const address = page.getByLabel('Link address');
    await address.fill('javascript:alert(1)');
    await address.press('Enter');
    await page.getByText('Enter a full http:// or https:// address, such as https://example.com/page.').waitFor();
    await address.fill('https://example.com/tides');
    await address.press('Enter');
    // Toolbar buttons: a bulleted list of two items, the second italic (the button keeps the editor's selection).
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Bulleted list' }).click();
    await page.keyboard.type('first point');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Italic' }).click();
    await page.keyboard.type('second point');
    expect(await page.getByRole('button', { name: 'Bulleted list' }).getAttribute('aria-pressed')).toBe('true');

    const html = await editorHtml();
    expect(html).toBe(
      `<h2>Why the Moon keeps one face</h2><p>${FORM_TEXT.slice(0, 60)}<strong> tidal locking</strong>${FORM_TEXT.slice(60)} <a href="https://example.com/tides">https://example.com/tides</a></p><ul><li><p>first point</p></li><li><p><em>second point</em></p></li></ul>`,
    );
    expect(Number(await page.getByTestId('word-count').textContent())).toBeGreaterThan(70);
    expect(await accessibilityProblems()).toEqual([]);

    await page.getByRole('button', { name: 'Create card' }).click();
    await page.waitForURL(/\/card\/[0-9a-f-]{36}$/);
    const body = page.locator('.card-body');
    await body.locator('h2').getByText('Why the Moon keeps one face').waitFor();
    expect((await body.locator('strong').textContent())?.trim()).toBe('tidal locking');
    expect(await body.locator('a').getAttribute('href')).toBe('https://example.com/tides');
    expect(await body.locator('ul li').allTextContents()).toEqual(['first point', 'second point']);
    expect(pageProblems).toEqual([]);
  });

  it('keeps the toolbar to one tab stop, moves in it with the arrow keys, and Tab leaves the text', async () => {
    await page.goto('/card/new');
    await page.getByRole('textbox', { name: 'Card text', exact: true }).waitFor();
    const focused = () => page.evaluate<string>('document.activeElement.getAttribute("aria-label") || document.activeElement.id');
    // The text style changes with the arrow keys, one option at a time: focus stays on the select.
    const style = page.getByLabel('Text style');
    await style.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    expect(await style.inputValue()).toBe('h3');
    expect(await focused()).toBe('card-text-block');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Bold');
    await page.keyboard.press('ArrowRight');
    expect(await focused()).toBe('Italic');
    await page.keyboard.press('End');
    expect(await focused()).toBe('Redo');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('card-text');
    await page.keyboard.type('Typed by keyboard alone.');
    expect(await page.locator('#card-text h3').textContent()).toBe('Typed by keyboard alone.');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('card-link');
    // Back into the toolbar: the button used last is its tab stop.
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    expect(await focused()).toBe('Redo');
  });

  it('cleans a paste to what a card keeps: no script, style or handler, bold and italic written as styles kept', async () => {
    await page.goto('/card/new');
    const text = page.getByRole('textbox', { name: 'Card text', exact: true });
    await text.click();
    await page.evaluate(`(() => {
      window.pastedScriptRan = false;
      const data = new DataTransfer();
      data.setData('text/html', '<meta charset="utf-8"><b style="font-weight:normal" id="docs-internal-guid-1"><div style="color:red" onclick="window.pastedScriptRan = true">' +
        '<h3 onmouseover="window.pastedScriptRan = true">Pasted heading</h3>' +
        '<p><span style="font-weight:700">bold by style</span> <span style="font-style:italic">italic by style</span> <font color="red">font</font>' +
        ' <a href="javascript:window.pastedScriptRan=true">bad link</a> <a href="https://example.com/ok" target="_blank" rel="x">good link</a>' +
        '<img src="/nothing.png" onerror="window.pastedScriptRan = true"></p>' +
        '<script>window.pastedScriptRan = true</script><style>p { color: red }</style>' +
        '<table><tr><td>cell text</td></tr></table><ol start="3"><li>third</li></ol></div></b>');
      data.setData('text/plain', 'Pasted heading');
      document.activeElement.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    })()`);
    await text.getByText('cell text').waitFor();
    expect(await editorHtml()).toBe(
      '<h3>Pasted heading</h3><p><strong>bold by style</strong> <em>italic by style</em> font bad link <a href="https://example.com/ok">good link</a></p><p>cell text</p><ol start="3"><li><p>third</p></li></ol>',
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(await page.evaluate('window.pastedScriptRan')).toBe(false);
    expect(pageProblems).toEqual([]);
  });

  it('edits the formatted text of a card, not its HTML, and sends card_html only when the text changed', async () => {
    const cardId = await cardWithLink(`<h2>Tides</h2><p>${CARD_TEXT} <b>Bold ending.</b></p>`, '');
    const sent: Record<string, unknown>[] = [];
    const onRequest = (r: { method(): string; url(): string; postData(): string | null }) => {
      if (r.method() === 'PUT' && r.url().endsWith('/api/card/update')) sent.push(JSON.parse(r.postData() ?? '{}') as Record<string, unknown>);
    };
    page.on('request', onRequest);
    try {
      await page.goto(`/card/${cardId}/edit`);
      const text = page.getByRole('textbox', { name: 'Card text', exact: true });
      await text.locator('h2').getByText('Tides').waitFor();
      // The excerpt as it reads: no tag is shown as text.
      expect(await text.textContent()).not.toContain('<');
      expect(await text.locator('strong').textContent()).toBe('Bold ending.');

      // Saving without touching the text changes only what changed (the privacy).
      await page.getByLabel('Private (only you can see it)').check();
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.waitForURL(new RegExp(`/card/${cardId}$`));
      expect(sent).toEqual([{ card_uuid: cardId, private: true }]);

      await page.goto(`/card/${cardId}/edit`);
      await text.locator('strong').getByText('Bold ending.').click();
      // ProseMirror settles the selection of a click just after the mouse is released.
      await page.waitForTimeout(100);
      await page.keyboard.press('Control+End');
      await page.keyboard.press('Enter');
      await page.keyboard.type('Edited as formatted text.');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.waitForURL(new RegExp(`/card/${cardId}$`));
      expect(sent[1]).toEqual({ card_uuid: cardId, card_html: `<h2>Tides</h2><p>${CARD_TEXT} <strong>Bold ending.</strong></p><p>Edited as formatted text.</p>` });
      await page.locator('.card-body p').getByText('Edited as formatted text.').waitFor();
    } finally {
      page.off('request', onRequest);
    }
    expect(pageProblems).toEqual([]);
  });
});
