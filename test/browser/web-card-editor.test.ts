/**
 * The card form's rich-text editor and what the app says about a card's verification, in headless Chromium against
 * the all-in-one system (the setup of web-app-audit.test.ts): the form edits the formatted text (a contenteditable
 * limited to the card allow-list, with a toolbar and shortcuts, one tab stop for the toolbar), cleans a paste to the
 * allow-list without a CSP refusal, sends an edit's HTML only when the text changed; a score of 0 (the source page
 * could not be read) is not shown as "Verified 0/100".
 */
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import type { RunningSystem } from '../support/service';
import { wordCount } from '../../packages/card-rules/src';
import { chromiumForSuite } from './support/chromium';
import { caretToEnd, eventually, signInBrowser, startBrowserSystem, type BrowserSystem } from './support/browser-system';

const signIn = () => signInBrowser(context, system.baseUrl, user);

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(120_000);

const CARD_TEXT = Array.from({ length: 8 }, (_, i) => `Sentence ${i} about the tides of the sea, the pull of the Moon and the slow lengthening of our days.`).join(' ');
/** The card written in the form: other words, so it is not kept as a duplicate of the cards made through the API. */
const FORM_TEXT = Array.from({ length: 8 }, (_, i) => `Point ${i}: volcanic islands rise from hot spots in the mantle while the plate above them drifts slowly away.`).join(' ');

let system: RunningSystem;
let running: BrowserSystem | undefined;
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

/** Pastes into the focused editor as a browser does (a ClipboardEvent with the clipboard's kinds of data). */
async function paste(html: string | null, text: string): Promise<void> {
  // A string, as the other page scripts here: the tests type-check without the DOM library.
  // The editor learns of a selection moved by a key (Control+End) from the page's selectionchange event, a task of its own:
  // let it run first, or the paste goes where the selection was before the key on a busy machine.
  await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)))');
  await page.evaluate(`(() => {
    const data = new DataTransfer();
    const html = ${JSON.stringify(html)};
    if (html !== null) data.setData('text/html', html);
    data.setData('text/plain', ${JSON.stringify(text)});
    document.activeElement.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  })()`);
  await page.waitForTimeout(200);
}

/** A new card's empty editor, focused. */
async function freshEditor(): Promise<void> {
  await page.goto('/card/new');
  const text = page.getByRole('textbox', { name: 'Card text', exact: true });
  await text.click();
  await page.waitForTimeout(100);
}

describeInBrowser('the card form’s rich-text editor and the verification display', () => {
  beforeAll(async () => {
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
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-editor', env: { VERIFY_ALLOW_HOSTS: `127.0.0.1:${articlePort}` }, pageProblems });
    ({ system, context, page } = running);
    user = await signUp(system.baseUrl, mailbox, 'web-editor');
    await signIn();
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
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
    await caretToEnd(page, text);
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
    // One tab stop for the whole toolbar, the Text style select included (the WAI-ARIA toolbar pattern).
    expect(await page.locator('[role="toolbar"] :is(select, button):not([tabindex="-1"])').count()).toBe(1);
    await style.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    expect(await style.inputValue()).toBe('h3');
    expect(await focused()).toBe('card-text-block');
    await page.keyboard.press('ArrowRight');
    expect(await focused()).toBe('Bold');
    await page.keyboard.press('ArrowRight');
    expect(await focused()).toBe('Italic');
    await page.keyboard.press('Home');
    expect(await focused()).toBe('card-text-block');
    await page.keyboard.press('ArrowLeft');
    expect(await focused()).toBe('Redo');
    await page.keyboard.press('Home');
    expect(await focused()).toBe('card-text-block');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('End');
    expect(await focused()).toBe('Redo');
    expect(await style.inputValue()).toBe('h3');
    expect(await page.locator('[role="toolbar"] :is(select, button):not([tabindex="-1"])').count()).toBe(1);
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
      await text.locator('strong').getByText('Bold ending.').waitFor();
      await caretToEnd(page, text);
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
  it('keeps a pasted table’s cells and rows apart: a row per paragraph, its cells separated by " | " (Google Sheets, Word, the HTML view)', async () => {
    await freshEditor();
    await paste(
      '<meta charset="utf-8"><google-sheets-html-origin><style type="text/css"><!--td {border: 1px solid #cccccc;}--></style><table xmlns="http://www.w3.org/1999/xhtml" cellspacing="0" cellpadding="0" dir="ltr" border="1" style="table-layout:fixed;font-size:10pt"><tbody><tr style="height:21px;"><td style="overflow:hidden;padding:2px 3px">Year</td><td style="padding:2px 3px">Rate</td></tr><tr style="height:21px;"><td>2019</td><td>4.5%</td></tr><tr><td>2020</td><td>7.9%</td></tr></tbody></table>',
      'Year\tRate\n2019\t4.5%\n2020\t7.9%',
    );
    expect(await editorHtml()).toBe('<p>Year | Rate</p><p>2019 | 4.5%</p><p>2020 | 7.9%</p>');

    // Word: paragraphs in the cells become lines of the row, their formatting kept; an empty row is left out.
    await freshEditor();
    await paste(
      "<html xmlns:o=\"urn:schemas-microsoft-com:office:office\"><head><style>p.MsoNormal {margin:0cm}</style></head><body lang=EN-US><!--StartFragment--><table class=MsoTableGrid border=1 cellspacing=0 style='border-collapse:collapse'><tr><td width=100 valign=top style='border:solid windowtext 1.0pt'><p class=MsoNormal>Name<o:p></o:p></p></td><td><p class=MsoNormal><b>Value</b><o:p></o:p></p><p class=MsoNormal>second line</p></td></tr><tr><td><p class=MsoNormal><o:p>&nbsp;</o:p></p></td><td></td></tr></table><!--EndFragment--></body></html>",
      'Name\tValue\nsecond line',
    );
    expect(await editorHtml()).toBe('<p>Name | <strong>Value</strong><br>second line</p>');

    // A table written in the HTML view reads the same when the formatted view comes back.
    await page.goto('/card/new');
    await page.getByRole('textbox', { name: 'Card text', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    await page.getByLabel('Card text (HTML)').fill('<table><caption>Rates</caption><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>');
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    expect(await editorHtml()).toBe('<p>Rates</p><p>A | B</p><p>1 | 2</p>');
    // Text after a block in a cell, and a rule, start a line of the row (the cards service's sanitizer makes the same rows).
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    await page.getByLabel('Card text (HTML)').fill('<table><tr><td>\n<p>one</p>after\n</td><td>x<hr>y</td></tr></table>');
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    expect(await editorHtml()).toBe('<p>one<br>after | x<br>y</p>');
    expect(pageProblems).toEqual([]);
  });

  it('keeps the text of the other blocks a card drops apart, as the cards service does: details/summary, nav, main, dt, form (a paragraph each; in a heading or paragraph a line), a pre’s lines', async () => {
    // ProseMirror reads these as inline: "HomeSummaryHidden textTermMeaning", where the server keeps lines.
    const dropped = '<nav>Home</nav><main><details><summary>Summary</summary>Hidden text</details><dl><dt>Term</dt><dd>Meaning</dd></dl></main><form>Form text</form>';
    await freshEditor();
    await paste(dropped, 'Home Summary Hidden text Term Meaning Form text');
    expect(await editorHtml()).toBe('<p>Home</p><p>Summary</p><p>Hidden text</p><p>Term</p><p>Meaning</p><p>Form text</p>');
    // The cards service's text of the same HTML has the same lines.
    const words = Array.from({ length: 8 }, (_, i) => `Clause ${i}: glaciers carve deep valleys as they creep downhill under their own great weight each winter.`).join(' ');
    const created = await user.client.post('/api/card', { card_html: `${dropped}<p>${words}</p>`, link: '', private: true, tag_set: [] });
    expect(created.status).toBe(200);
    expect((created.json as { card_metadata: { content: string } }).card_metadata.content).toBe(`Home\nSummary\nHidden text\nTerm\nMeaning\nForm text\n${words}`);

    // Typed in the HTML view: a dt in a heading is a line of it (the parser leaves it there), a pre's lines stay lines, its empty lines
    // between lines of text too (two line breaks, as the cards service keeps them; before, one).
    await page.goto('/card/new');
    await page.getByRole('textbox', { name: 'Card text', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    await page.getByLabel('Card text (HTML)').fill('<h2>Title<dt>term</dt>more<summary> </summary></h2><pre>line one\nline two\n\nline three\n\n</pre>');
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    expect(await editorHtml()).toBe('<h2>Title<br>term<br>more</h2><p>line one<br>line two<br><br>line three</p>');
    expect(pageProblems).toEqual([]);
  });

  it('keeps td/tr/caption outside a table and an xmp apart as the cards service does (the browser’s parser drops those tags and glued the text; an xmp was dropped)', async () => {
    // Outside a table the browser's parser ignores td, tr and caption tags ("YearRate20194.5%"); it reads an xmp's content
    // as raw text, which the editor dropped. The cards service keeps each a block of its own and reads the xmp's HTML.
    const outside = '<td>Year</td><td>Rate</td><tr><td>2019</td><td>4.5%</td></tr><caption>Rates</caption>Text<xmp>Raw <b>bold</b></xmp>After';
    await freshEditor();
    await paste(outside, 'Year Rate 2019 4.5% Rates Text Raw bold After');
    expect(await editorHtml()).toBe('<p>Year</p><p>Rate</p><p>2019</p><p>4.5%</p><p>Rates</p><p>Text</p><p>Raw <strong>bold</strong></p><p>After</p>');
    // In a paragraph, each is a line of it (the HTML view), as the service makes it.
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    await page.getByLabel('Card text (HTML)').fill('<p>Intro<td>cell</td>more<xmp>x</xmp>end</p>');
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    expect(await editorHtml()).toBe('<p>Intro<br>cell<br>more<br>x<br>end</p>');
    // The cards service's text of the same HTML has the same lines.
    const words = Array.from({ length: 8 }, (_, i) => `Remark ${i}: rivers carry silt down to the delta where it settles into wide fans of fertile new land.`).join(' ');
    const created = await user.client.post('/api/card', { card_html: `${outside}<p>Intro<td>cell</td>more<xmp>x</xmp>end</p><p>${words}</p>`, link: '', private: true, tag_set: [] });
    expect(created.status).toBe(200);
    expect((created.json as { card_metadata: { content: string } }).card_metadata.content).toBe(`Year\nRate\n2019\n4.5%\nRates\nText\nRaw bold\nAfter\nIntro\ncell\nmore\nx\nend\n${words}`);
    expect(pageProblems).toEqual([]);
  });

  it('counts in the HTML view the words the cards service will count: split at dropped blocks, a table’s " | " separators, a ruby’s annotation', async () => {
    const words = Array.from({ length: 8 }, (_, i) => `Note ${i}: dunes wander across the desert as the steady wind lifts sand grains over their crests.`).join(' ');
    const samples = [
      '<div>one</div><div>two</div><p>three</p>',
      '<p>a<dt>b</dt>c<hr>d</p><details><summary>Sum</summary>Body</details>',
      '<table><caption>Cap</caption><tr><td>Year</td><td>Rate<p>low</p>high</td></tr><tr><td> </td></tr></table>',
      '<td>Year</td><td>Rate</td><tr><td>2019</td></tr>text<xmp>Raw <b>bold</b></xmp>after',
      '<pre>line one\nline two</pre>x<ruby>漢字<rp>(</rp><rt>kanji</rt><rp>)</rp></ruby>',
    ];
    await page.goto('/card/new');
    await page.getByRole('textbox', { name: 'Card text', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    const shown: number[] = [];
    const counted: number[] = [];
    for (const sample of samples) {
      const html = `${sample}<p>${words}</p>`;
      await page.getByLabel('Card text (HTML)').fill(html);
      shown.push(Number(await page.getByTestId('word-count').textContent()));
      const created = await user.client.post('/api/card', { card_html: html, link: '', private: true, tag_set: [] });
      expect(created.status).toBe(200);
      counted.push(wordCount((created.json as { card_metadata: { content: string } }).card_metadata.content));
    }
    expect(shown).toEqual(counted);
    expect(pageProblems).toEqual([]);
  });

  it('reads an option’s text and a ruby’s annotation as the cards service does, in a paste and in the HTML view’s count', async () => {
    const words = Array.from({ length: 8 }, (_, i) => `Fact ${i}: glaciers grind the rock beneath them into fine flour that turns the meltwater milky.`).join(' ');
    // Options: left out with their text, also where htmlparser2 ends one whose end tag is missing (the paragraph's end).
    // A ruby: its annotation in parentheses after the base, rp left out.
    const sample =
      '<p>Pick<select><option>First choice<option>Second choice</select> one</p><p>Say <ruby>漢字<rp>(</rp><rt>kanji</rt><rp>)</rp></ruby> and <ruby>東<rt>とう</ruby></p>' +
      '<p>Open<option>hidden words <b>too</b></p><p>After</p>';
    await freshEditor();
    await paste(sample, 'x');
    expect(await editorHtml()).toBe('<p>Pick one</p><p>Say 漢字(kanji) and 東(とう)</p><p>Open</p><p>After</p>');
    // The HTML view counts the words the service counts.
    const html = `${sample}<p>${words}</p>`;
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    await page.getByLabel('Card text (HTML)').fill(html);
    const shown = Number(await page.getByTestId('word-count').textContent());
    const created = await user.client.post('/api/card', { card_html: html, link: '', private: true, tag_set: [] });
    expect(created.status).toBe(200);
    const content = (created.json as { card_metadata: { content: string } }).card_metadata.content;
    expect(content).toBe(`Pick one\nSay 漢字(kanji) and 東(とう)\nOpen\nAfter\n${words}`);
    expect(shown).toBe(wordCount(content));
    expect(pageProblems).toEqual([]);
  });

  it('opens a list item holding a heading and a paragraph as it is stored, and a list item can be made a heading', async () => {
    const listCard = await cardWithLink(`<ul><li><h3>heading in li</h3><p>para in li</p></li></ul><p>${CARD_TEXT} A list with a heading.</p>`, '');
    await page.goto(`/card/${listCard}/edit`);
    const text = page.getByRole('textbox', { name: 'Card text', exact: true });
    await text.locator('li h3').getByText('heading in li').waitFor();
    expect(await editorHtml()).toBe(`<ul><li><h3>heading in li</h3><p>para in li</p></li></ul><p>${CARD_TEXT} A list with a heading.</p>`);

    await freshEditor();
    await page.keyboard.press('Control+Shift+8');
    await page.keyboard.type('list item text');
    const style = page.getByLabel('Text style');
    await style.selectOption('h2');
    expect(await page.locator('#card-text li h2').textContent()).toBe('list item text');
    expect(await style.inputValue()).toBe('h2');
    // The select shows the text's real style: no option is offered that cannot apply (here each can).
    expect(await style.locator('option[disabled]').count()).toBe(0);
  });

  it('pastes plain text as the HTML view reads it: a blank line starts a paragraph, a single line break is a line break', async () => {
    await freshEditor();
    await paste(null, 'Line one\nLine two\r\n\r\nSecond paragraph\n\n\nThird');
    expect(await editorHtml()).toBe('<p>Line one<br>Line two</p><p>Second paragraph</p><p>Third</p>');
    // Inside a paragraph, one line goes in where the cursor is.
    await page.getByRole('textbox', { name: 'Card text', exact: true }).click();
    await page.keyboard.press('Control+End');
    await paste(null, ' and more');
    expect(await editorHtml()).toBe('<p>Line one<br>Line two</p><p>Second paragraph</p><p>Third and more</p>');
  });

  it('pastes several blocks inside a paragraph as blocks: a heading, list or quote stays whole, a paragraph at either end joins the text at the cursor', async () => {
    const text = page.getByRole('textbox', { name: 'Card text', exact: true });
    /** A paragraph "LeftRight" with the cursor between the two words, then the paste. */
    const pasteInto = async (html: string, plain: string) => {
      await freshEditor();
      await page.keyboard.type('LeftRight');
      for (let i = 0; i < 'Right'.length; i++) await page.keyboard.press('ArrowLeft');
      await paste(html, plain);
      return editorHtml();
    };
    // A heading and a list: they stay a heading and a list, the paragraph split around them (before, "LeftTitle" and "twoRight").
    expect(await pasteInto('<h2>Title</h2><ul><li>one</li><li>two</li></ul>', 'Title\none\ntwo')).toBe('<p>Left</p><h2>Title</h2><ul><li><p>one</p></li><li><p>two</p></li></ul><p>Right</p>');
    expect(await pasteInto('<blockquote><p>Quoted</p></blockquote><p>Plain</p>', 'Quoted\nPlain')).toBe('<p>Left</p><blockquote><p>Quoted</p></blockquote><p>PlainRight</p>');
    // Paragraphs: the first one's text joins the text before the cursor, the last one's the text after it (as word processors do).
    expect(await pasteInto('<p>One</p><p>Two</p>', 'One\n\nTwo')).toBe('<p>LeftOne</p><p>TwoRight</p>');
    expect(await pasteInto('<p>One</p><h3>Sub</h3>', 'One\nSub')).toBe('<p>LeftOne</p><h3>Sub</h3><p>Right</p>');
    // At the paragraph's end the list follows it; part of one list item copied in the editor is inline text and goes in at the cursor.
    await freshEditor();
    await page.keyboard.type('Intro');
    await paste('<ul><li>one</li><li>two</li></ul>', 'one\ntwo');
    expect(await editorHtml()).toBe('<p>Intro</p><ul><li><p>one</p></li><li><p>two</p></li></ul>');
    expect(await pasteInto('<ul data-pm-slice="3 3 []"><li><p>inner</p></li></ul>', 'inner')).toBe('<p>LeftinnerRight</p>');
    expect(await text.count()).toBe(1);
    expect(pageProblems).toEqual([]);
  });

  it('switching to the HTML view and back keeps the undo history and a space at a paragraph’s end; a change there can be undone', async () => {
    await freshEditor();
    await page.keyboard.type('First line');
    await page.keyboard.press('Enter');
    await page.keyboard.type('Some words ');
    const toggle = page.getByRole('button', { name: 'Edit as HTML' });
    await toggle.click();
    expect(await page.getByLabel('Card text (HTML)').inputValue()).toBe('<p>First line</p><p>Some words </p>');
    await toggle.click();
    const undoButton = page.getByRole('button', { name: 'Undo' });
    expect(await undoButton.getAttribute('aria-disabled')).toBeNull();
    const text = page.getByRole('textbox', { name: 'Card text', exact: true });
    await text.click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('again');
    expect(await page.locator('#card-text').innerHTML()).toBe('<p>First line</p><p>Some words again</p>');

    // A change made in the HTML view is one more step to undo.
    await toggle.click();
    await page.getByLabel('Card text (HTML)').fill('<p>Replaced</p>');
    await toggle.click();
    expect(await page.locator('#card-text').innerHTML()).toBe('<p>Replaced</p>');
    await undoButton.click();
    expect(await page.locator('#card-text').innerHTML()).toBe('<p>First line</p><p>Some words again</p>');
  });

  it('keeps a space at a paragraph’s or heading’s end when the HTML view really changed', async () => {
    await freshEditor();
    await page.keyboard.type('First line');
    await page.keyboard.press('Enter');
    await page.keyboard.type('Some words ');
    const toggle = page.getByRole('button', { name: 'Edit as HTML' });
    await toggle.click();
    const area = page.getByLabel('Card text (HTML)');
    expect(await area.inputValue()).toBe('<p>First line</p><p>Some words </p>');
    // A change elsewhere: the document is read again from the HTML, and the space typed last stays.
    await area.fill('<h2>Changed title </h2><p>Some words </p>');
    await toggle.click();
    const text = page.getByRole('textbox', { name: 'Card text', exact: true });
    await text.click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('again');
    expect(await page.locator('#card-text').innerHTML()).toBe('<h2>Changed title </h2><p>Some words again</p>');
    // Whitespace written to lay out the HTML (a line break before an end tag) is no space typed: it goes, as before.
    await toggle.click();
    await area.fill('<p>\n  Laid out\n</p>\n<p>Two  spaces  </p>');
    await toggle.click();
    expect(await page.locator('#card-text').innerHTML()).toBe('<p>Laid out</p><p>Two spaces </p>');
  });

  it('reads pasted and typed HTML without a CSP refusal: a quoted ">" or a "/" before a style attribute, handlers in the HTML view', async () => {
    const before = pageProblems.length;
    await freshEditor();
    await page.evaluate('window.pastedScriptRan = false');
    await paste('<p><span title="a>b" style="color:red">tricky attr</span> <span/style="color:red">slash</span> <span\nonclick="window.pastedScriptRan = true" style="font-weight:bold">bold</span></p>', 'x');
    expect(await editorHtml()).toBe('<p>tricky attr slash <strong>bold</strong></p>');
    // The HTML view's word count and checks read what is typed there as it is typed.
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    await page.getByLabel('Card text (HTML)').fill('<p style="color:red" onclick="x()">styled <img src="/nothing.png" onerror="window.pastedScriptRan = true"> words</p>');
    await page.waitForFunction(`document.querySelector('[data-testid="word-count"]')?.textContent === '2'`);
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    expect(await editorHtml()).toBe('<p>styled words</p>');
    await page.waitForTimeout(300);
    expect(await page.evaluate('window.pastedScriptRan')).toBe(false);
    expect(pageProblems.slice(before)).toEqual([]);
  });

  it('reads a Word paste: bullet paragraphs as a list, a yellow highlight as highlight, note and relative links as their text', async () => {
    await freshEditor();
    const bullet = (text: string, last = false) =>
      `<p class=${last ? 'MsoListParagraphCxSpLast' : 'MsoListParagraphCxSpFirst'} style='text-indent:-18.0pt;mso-list:l0 level1 lfo1'><![if !supportLists]><span style='font-family:Symbol'>·<span style='font:7.0pt "Times New Roman"'>&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp; </span></span><![endif]>${text}<o:p></o:p></p>\n`;
    await paste(
      "<html xmlns:o=\"urn:schemas-microsoft-com:office:office\"><head><style>p.MsoListParagraph {margin-left:36pt}</style></head><body lang=EN-US><!--StartFragment-->" +
        bullet('First bullet') +
        bullet('Second bullet', true) +
        "<p class=MsoNormal><span style='background:yellow;mso-highlight:yellow'>highlighted</span> text with a note<a href=\"#_ftn1\" name=\"_ftnref1\"><span class=MsoFootnoteReference>[1]</span></a>, <a href=\"other.docx\">a relative link</a> and <a href=\"https://example.com/kept\">a web link</a>.</p><!--EndFragment--></body></html>",
      'First bullet\nSecond bullet',
    );
    expect(await editorHtml()).toBe(
      '<ul><li><p>First bullet</p></li><li><p>Second bullet</p></li></ul><p><mark>highlighted</mark> text with a note[1], a relative link and <a href="https://example.com/kept">a web link</a>.</p>',
    );

    // A stored card's relative links (the server keeps them) open as their text too.
    const linked = await cardWithLink(`<p>${CARD_TEXT} See <a href="/relative/page">the page</a> and <a href="#frag">the note</a>.</p>`, '');
    await page.goto(`/card/${linked}/edit`);
    await page.getByRole('textbox', { name: 'Card text', exact: true }).getByText('the note', { exact: false }).waitFor();
    expect(await page.locator('#card-text a').count()).toBe(0);
    expect(pageProblems).toEqual([]);
  });

  it('says what is wrong with an address in the link field', async () => {
    await freshEditor();
    await page.keyboard.type('linked words');
    await page.keyboard.press('Shift+Home');
    await page.keyboard.press('Control+k');
    const address = page.getByLabel('Link address');
    await address.fill('https://example.com/a b');
    await address.press('Enter');
    await page.getByText('The address has a space in it (after "https://example.com/a"): write it without spaces, or a space as %20.').waitFor();
    await address.fill('https:\\\\example.com\\page');
    await address.press('Enter');
    await page.getByText('The address has a backslash (\\) in it: web addresses use / instead.').waitFor();
    await address.fill('https://example.com/\u200bpage');
    await address.press('Enter');
    await page.getByText('The address holds an invisible character (U+200B), probably pasted in: type the address again or remove it.').waitFor();
    expect(await address.getAttribute('aria-invalid')).toBe('true');
  });

  it('an edit whose text ends as it began sends no card_html (a letter typed and deleted again)', async () => {
    const cardId = await cardWithLink(`<h2>Unchanged</h2><p>${CARD_TEXT} <b>Bold ending again.</b></p>`, '');
    const sent: Record<string, unknown>[] = [];
    const onRequest = (r: { method(): string; url(): string; postData(): string | null }) => {
      if (r.method() === 'PUT' && r.url().endsWith('/api/card/update')) sent.push(JSON.parse(r.postData() ?? '{}') as Record<string, unknown>);
    };
    page.on('request', onRequest);
    try {
      await page.goto(`/card/${cardId}/edit`);
      const text = page.getByRole('textbox', { name: 'Card text', exact: true });
      await text.locator('strong').getByText('Bold ending again.').waitFor();
      await caretToEnd(page, text);
      await page.keyboard.type('x');
      await page.keyboard.press('Backspace');
      // The HTML view and back, unchanged, is no change either.
      await page.getByRole('button', { name: 'Edit as HTML' }).click();
      await page.getByRole('button', { name: 'Edit as HTML' }).click();
      await page.getByLabel('Private (only you can see it)').check();
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.waitForURL(new RegExp(`/card/${cardId}$`));
      expect(sent).toEqual([{ card_uuid: cardId, private: true }]);
    } finally {
      page.off('request', onRequest);
    }
  });
});
