/**
 * The web app on a phone, in headless Chromium emulating one (isMobile, hasTouch) against the all-in-one system: the
 * card editor in a view as short as a phone's with its keyboard up. See docs/web.md "Phones".
 */
import type { BrowserContext, Page } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import { chromiumForSuite } from './support/chromium';
import { signInBrowser, startBrowserSystem, type BrowserSystem } from './support/browser-system';

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(120_000);

const PARAGRAPHS = Array.from({ length: 30 }, (_, i) => `<p>Paragraph ${i} about the tides of the sea, the pull of the Moon and the slow lengthening of our days.</p>`).join('');

let running: BrowserSystem | undefined;
let user: TestUser;
let phone: BrowserContext;
let page: Page;
let cardId: string;
const mailbox = new Mailbox();

/** Where an element of the page is on the screen, in CSS px. */
async function rectOf(selector: string): Promise<{ top: number; bottom: number }> {
  return page.locator(selector).first().evaluate((el) => {
    const r = el.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom };
  });
}

describeInBrowser('the web app on a phone, in headless Chromium', () => {
  beforeAll(async () => {
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-phone' });
    user = await signUp(running.system.baseUrl, mailbox, 'web-phone');
    const created = await user.client.post('/api/card', { card_html: PARAGRAPHS, link: 'https://example.com/tides', private: false, tag_set: [] });
    expect(created.status).toBe(200);
    cardId = (created.json as { card_metadata: { id: string } }).card_metadata.id;
    // A 360 px phone with its keyboard up leaves about 300 px of page.
    phone = await running.browser.newContext({ baseURL: running.system.baseUrl, viewport: { width: 360, height: 300 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true });
    await signInBrowser(phone, running.system.baseUrl, user);
    page = await phone.newPage();
  }, 240_000);

  afterAll(async () => {
    await phone?.close();
    await running?.stop();
  });

  it('sizes the page to the phone, and asks for the page to shrink above the keyboard rather than under it', async () => {
    await page.goto('/');
    // resizes-content: Chrome and Firefox on Android shrink the page (and dvh) for the keyboard, so the editor below fits
    // above it; by default they shrink only what is seen, and 100dvh stays the screen's height behind the keyboard.
    expect(await page.locator('meta[name="viewport"]').getAttribute('content')).toBe('width=device-width, initial-scale=1, interactive-widget=resizes-content');
    expect(await page.evaluate<number>('window.innerWidth')).toBe(360);
  });

  it('keeps the whole toolbar on the screen while typing at the end of a long text, in a keyboard-high view', async () => {
    await page.goto(`/card/${cardId}/edit`);
    const text = page.locator('.rich-text');
    await text.getByText('Paragraph 29').waitFor();
    // Scrolled to where the editor starts at the screen's top, as one does to write, and a tap on the text seen there
    // (a locator's tap would first scroll the text to the screen's middle).
    await page.locator('.rich-editor').evaluate((el) => el.scrollIntoView({ block: 'start' }));
    const seen = (await text.boundingBox())!;
    await page.touchscreen.tap(seen.x + seen.width / 2, seen.y + 20);
    await page.keyboard.press('Control+End');
    await page.keyboard.type(' Ebb');
    await text.getByText('days. Ebb').waitFor();
    const caret = await page.evaluate<{ top: number; bottom: number }>('(({ top, bottom }) => ({ top, bottom }))(getSelection().getRangeAt(0).getBoundingClientRect())');
    // The caret is in view, below the toolbar; the toolbar's every row is in view too. Before, the text's 14 rem and the
    // toolbar's three rows were taller than the view: the select and the first row of buttons were above the screen.
    const toolbar = await rectOf('.toolbar');
    const height = await page.evaluate<number>('window.innerHeight');
    expect(toolbar.top).toBeGreaterThanOrEqual(0);
    expect(caret.top).toBeGreaterThanOrEqual(toolbar.bottom);
    expect(caret.bottom).toBeLessThanOrEqual(height);
    // Reachable means usable: a tap on Bold, the first button, then typing, makes the new word bold.
    await page.getByRole('button', { name: 'Bold' }).tap();
    await page.keyboard.type('Flow');
    await text.locator('strong', { hasText: 'Flow' }).waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth')).toBeLessThanOrEqual(0);
  });

  it('keeps the editor from spilling over the hint below it at 200% text, where its toolbar alone is taller than the view', async () => {
    await page.goto(`/card/${cardId}/edit`);
    await page.locator('.rich-text').getByText('Paragraph 0').waitFor();
    // As a phone's largest text setting does: every rem doubles, the toolbar wraps to more rows than 300 px hold.
    await page.evaluate("document.documentElement.style.fontSize = '200%'");
    const toolbar = await rectOf('.toolbar');
    const textBox = await rectOf('.rich-text');
    const editor = await rectOf('.rich-editor');
    const hint = await rectOf('#card-text-hint');
    expect(toolbar.bottom - toolbar.top).toBeGreaterThan(300);
    expect(hint.top).toBeGreaterThanOrEqual(editor.bottom - 0.5);
    // Nothing of the editor is drawn below it, over the hint: just under its bottom edge is the page, not its text.
    const under = await page.evaluate<string>(`(() => {
      const editor = document.querySelector('.rich-editor');
      window.scrollBy(0, editor.getBoundingClientRect().bottom - 150);
      const r = editor.getBoundingClientRect();
      return document.elementFromPoint(r.left + 20, r.bottom + 3)?.closest('.rich-editor') ? 'the editor' : 'the page';
    })()`);
    expect(under).toBe('the page');
    // The text is still there to scroll to and type in: inside the editor, not squeezed to nothing.
    expect(textBox.top).toBeGreaterThanOrEqual(toolbar.bottom - 0.5);
    expect(textBox.bottom - textBox.top).toBeGreaterThan(50);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth')).toBeLessThanOrEqual(0);
  });

  it('lets the open link field push the text down rather than over the hint below the editor', async () => {
    await page.goto(`/card/${cardId}/edit`);
    const text = page.locator('.rich-text');
    await text.getByText('Paragraph 0').waitFor();
    await text.tap();
    await page.getByRole('button', { name: 'Link' }).tap();
    await page.getByLabel('Link address').waitFor();
    // Each part of the editor ends before the next begins, and the editor before the hint under it.
    const toolbar = await rectOf('.toolbar');
    const field = await rectOf('.link-field');
    const textBox = await rectOf('.rich-text');
    const editor = await rectOf('.rich-editor');
    const hint = await rectOf('#card-text-hint');
    expect(field.top).toBeGreaterThanOrEqual(toolbar.bottom - 0.5);
    expect(textBox.top).toBeGreaterThanOrEqual(field.bottom - 0.5);
    expect(textBox.bottom).toBeLessThanOrEqual(editor.bottom + 0.5);
    expect(hint.top).toBeGreaterThanOrEqual(editor.bottom - 0.5);
  });
});
