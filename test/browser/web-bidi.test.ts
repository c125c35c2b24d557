/**
 * Right-to-left and mixed scripts in the web app, in headless Chromium against the all-in-one system (the setup of
 * web-app-audit.test.ts): user text (card text, titles, excerpts, tags, usernames, collection and file names,
 * notifications) shows in its own direction (dir="auto" on its blocks, <bdi> inside the app's sentences, each paragraph
 * of card text by its first letter, a stored dir="rtl" kept), the editor types an Arabic paragraph right to left and
 * stores it without a dir, and long unbroken words and CJK text wrap at 320 px.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import type { RunningSystem } from '../support/service';
import { buildDocx } from './support/docx';
import { chromiumForSuite } from './support/chromium';
import { eventually, signInBrowser, startBrowserSystem, type BrowserSystem } from './support/browser-system';

const signIn = () => signInBrowser(context, system.baseUrl, user);

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(120_000);

/** About 80 words of Arabic with English words, numbers and a link written in (a mixed paragraph). */
const ARABIC = Array.from({ length: 10 }, (_, i) => `الجملة ${i + 1} عن المد والجزر وجاذبية Moon في عام 2024 حسب NASA.`).join(' ');
const ENGLISH = 'The tides follow the Moon, as the English paragraph of this card says plainly.';
/** A right-to-left paragraph starting with a Latin word: only its dir="rtl" (Word, Google Docs) makes it read right to left. */
const RTL_LED_BY_LATIN = 'NASA تقول إن القمر يبتعد ببطء كل عام.';
const USERNAME = 'مريم_الحسن';
const COLLECTION = 'مجموعة المد والجزر 2024';
const FILE_NAME = 'تقرير المد.docx';
const LONG_WORD = `https://example.org/${'a'.repeat(190)}`;
const CJK = '潮汐是由月球和太阳的引力引起的海平面周期性涨落现象'.repeat(12);
const LONG_TAG = 'x'.repeat(200);

let system: RunningSystem;
let running: BrowserSystem | undefined;
let context: BrowserContext;
let page: Page;
let user: TestUser;
let cardId = '';
let layoutCardId = '';
let collectionId = '';
let longCollectionId = '';
const mailbox = new Mailbox();
/** Script errors and Content-Security-Policy refusals seen on the page during the whole run. */
const pageProblems: string[] = [];

async function createCard(html: string, tags: string[] = []): Promise<string> {
  const created = await user.client.post('/api/card', { card_html: html, link: '', private: false, tag_set: tags });
  if (created.status !== 200) throw new Error(`card not created: ${created.status} ${created.text}`);
  return (created.json as { card_metadata: { id: string } }).card_metadata.id;
}

async function createCollection(name: string): Promise<string> {
  const created = await user.client.post('/api/card_collection', { name, description: `وصف ${name}`, is_public: true });
  if (created.status >= 300) throw new Error(`collection not created: ${created.status} ${created.text}`);
  return /([0-9a-f-]{36})$/.exec(created.headers.get('location') ?? '')![1]!;
}

/**
 * Where the last line of a block's text stands in the block: the room left of it and right of it (px, inside the
 * block's padding). The last line of right-to-left text in an English page stands at the right (left > 0, right ~ 0).
 */
async function placement(selector: string): Promise<{ left: number; right: number }> {
  return page.evaluate<{ left: number; right: number }>(`(() => {
    const el = document.querySelector(${JSON.stringify(selector)});
    const range = document.createRange();
    range.selectNodeContents(el);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0);
    const bottom = Math.max(...rects.map((r) => r.bottom));
    const line = rects.filter((r) => r.bottom > bottom - 4);
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    return {
      left: Math.round(Math.min(...line.map((r) => r.left)) - box.left - parseFloat(style.paddingLeft)),
      right: Math.round(box.right - parseFloat(style.paddingRight) - Math.max(...line.map((r) => r.right))),
    };
  })()`);
}

const readsRightToLeft = (p: { left: number; right: number }) => p.right <= 2 && p.left > 20;
const readsLeftToRight = (p: { left: number; right: number }) => p.left <= 2 && p.right > 20;

describeInBrowser('right-to-left and mixed scripts in the web app, in headless Chromium', () => {
  beforeAll(async () => {
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-bidi', pageProblems });
    ({ system, context, page } = running);
    user = await signUp(system.baseUrl, mailbox, 'web-bidi');
    const named = await user.client.put('/api/user', { username: USERNAME, website: null, visible_email: false });
    if (named.status >= 300) throw new Error(`username not set: ${named.status} ${named.text}`);
    cardId = await createCard(`<p>${ARABIC}</p><p>${ENGLISH}</p><p dir="rtl">${RTL_LED_BY_LATIN}</p>`, ['المد والجزر', 'tides']);
    layoutCardId = await createCard(`<p>${LONG_WORD}</p><p>${CJK}</p><p>${Array.from({ length: 75 }, (_, i) => `word${i}`).join(' ')}</p>`, [LONG_TAG]);
    collectionId = await createCollection(COLLECTION);
    longCollectionId = await createCollection('b'.repeat(200));
    for (const [collection, card] of [
      [collectionId, cardId],
      [longCollectionId, layoutCardId],
    ]) {
      const added = await user.client.post(`/api/card_collection/${collection}`, { card_metadata_id: card });
      if (added.status >= 300) throw new Error(`card not added: ${added.status} ${added.text}`);
    }
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
  });

  afterEach(() => {
    expect(pageProblems).toEqual([]);
  });

  it('shows each paragraph of a card in its own direction, a stored dir="rtl" kept, and the title, tags and author isolated', async () => {
    await signIn();
    await page.goto(`/card/${cardId}`);
    await page.locator('.card-body p').first().waitFor();
    // The server keeps the pasted paragraph's direction (rtl, ltr or auto only: services/cards rules.ts).
    expect(await page.locator('.card-body p').nth(2).getAttribute('dir')).toBe('rtl');
    expect(readsRightToLeft(await placement('.card-body p:nth-child(1)'))).toBe(true);
    expect(readsLeftToRight(await placement('.card-body p:nth-child(2)'))).toBe(true);
    expect(readsRightToLeft(await placement('.card-body p:nth-child(3)'))).toBe(true);
    expect(await page.locator('h1').getAttribute('dir')).toBe('auto');
    expect(readsRightToLeft(await placement('h1'))).toBe(true);
    expect(await page.locator('ul.tags li').first().getAttribute('dir')).toBe('auto');
    // "by <name> · updated …": the name is isolated, so the sentence's "·" and date stay where English puts them.
    expect(await page.locator('.card-page > .meta bdi').first().textContent()).toBe(USERNAME);
  });

  it("titles a Chinese card by its first words, not its whole passage, and cuts no emoji in half in a list's excerpt", async () => {
    const chinese = await createCard(`<p>${CJK}</p>`);
    const emoji = await createCard(`<p>${'x'.repeat(319)}\u{1F30A} ${Array.from({ length: 75 }, (_, i) => `wave${i}`).join(' ')}</p>`);
    await signIn();
    await page.goto(`/card/${chinese}`);
    await page.locator('.card-body p').first().waitFor();
    const title = (await page.locator('h1').textContent())!;
    // Ten of the words its readers see, then "…": the whole 300-character passage was the title.
    expect([title.startsWith('潮汐'), title.endsWith('…'), title.length < 40]).toEqual([true, true, true]);
    await page.goto(`/user/${user.id}`);
    const heading = page.locator(`#card-${chinese}`);
    await heading.waitFor();
    expect(((await heading.textContent()) ?? '').length).toBeLessThan(50);
    const excerpt = (await page.locator(`article:has(#card-${emoji}) .excerpt`).textContent())!;
    expect([excerpt.includes('\uFFFD'), /[\uD800-\uDFFF]$/u.test(excerpt.replace(/…$/u, '')), excerpt.endsWith('\u{1F30A}…')]).toEqual([false, false, true]);
  });

  it('isolates names in lists, notices and the header, and gives search results and collection titles their own direction', async () => {
    await signIn();
    await page.goto(`/collection/${collectionId}`);
    await page.getByRole('heading', { level: 1, name: COLLECTION }).waitFor();
    expect(await page.locator('h1').getAttribute('dir')).toBe('auto');
    expect(await page.locator('p.description').getAttribute('dir')).toBe('auto');
    const summary = page.locator('.card-summary').first();
    expect(await summary.locator('h3').getAttribute('dir')).toBe('auto');
    expect(await summary.locator('.excerpt').getAttribute('dir')).toBe('auto');
    expect(readsRightToLeft(await placement('.card-summary .excerpt'))).toBe(true);
    expect(await summary.locator('.meta bdi').first().textContent()).toBe(USERNAME);
    // The header's profile link is the username.
    expect(await page.locator('header nav bdi').textContent()).toBe(USERNAME);
    // The search box and filters, and the collection's name fields, take the direction of what is typed.
    for (const id of ['#collection-search-q', '#collection-search-tags', '#collection-rename', '#collection-edit-description']) expect(await page.locator(id).getAttribute('dir')).toBe('auto');
    await summary.getByRole('button', { name: 'Remove from collection' }).click();
    const removed = page.locator('p.notice', { hasText: 'from this collection.' });
    await removed.waitFor();
    expect(await removed.locator('bdi').textContent()).toMatch(/^الجملة 1 /);

    // Put back, through the card page's "Add to collection": "Added to “<name>”."
    await page.goto(`/card/${cardId}`);
    await page.getByLabel('Collection', { exact: true }).selectOption({ label: COLLECTION });
    await page.getByRole('button', { name: 'Add to collection' }).click();
    await eventually(async () => (await page.locator('p.notice bdi').count()) > 0, 10_000, 'the added notice');
    expect(await page.locator('p.notice bdi').first().textContent()).toBe(COLLECTION);
    await page.locator('.panel p:not(.notice) bdi', { hasText: COLLECTION }).waitFor();

    await page.goto('/collections');
    await page.locator('.plain-list li bdi', { hasText: COLLECTION }).waitFor();
    expect(await page.locator('#collection-name').getAttribute('dir')).toBe('auto');
    await page.goto(`/user/${user.id}`);
    await page.getByRole('heading', { level: 1, name: USERNAME }).waitFor();
    expect(await page.locator('h1').getAttribute('dir')).toBe('auto');
    await page.locator('.plain-list li bdi', { hasText: COLLECTION }).waitFor();
    await page.goto('/?q=القمر&mode=fulltext');
    expect(await page.locator('#search-q').getAttribute('dir')).toBe('auto');
    expect(await page.locator('#search-q').inputValue()).toBe('القمر');
  });

  it('isolates a right-to-left file name on the upload page and a collection name in its notification', async () => {
    await signIn();
    const upload = await user.client.post('/api/file', {
      base64_docx_file: Buffer.from(buildDocx([{ heading: 'المد والجزر', paragraphs: [ARABIC] }])).toString('base64url'),
      file_name: FILE_NAME,
      file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      tag_set: [],
      private: false,
    });
    expect(upload.status).toBe(200);
    await page.goto('/upload');
    await page.locator('.plain-list li strong bdi', { hasText: FILE_NAME }).waitFor();
    expect(await page.locator('#upload-tags').getAttribute('dir')).toBe('auto');
    const fileId = (upload.json as { id: string }).id;
    await eventually(async () => {
      const collections = (await user.client.get(`/api/user/collections/${user.id}`)).json as { id: string; file_id?: string | null }[];
      const made = collections.find((c) => c.file_id === fileId)?.id;
      if (!made) return false;
      const list = (await user.client.get('/api/notifications')).json as { type: string; collection_uuid?: string }[];
      return list.some((n) => n.type === 'collection_created' && n.collection_uuid === made);
    }, 90_000, 'the Collection Created notification');
    await page.goto('/notifications');
    await page.locator('.notifications li').first().waitFor();
    await eventually(async () => (await page.locator('.notifications li bdi', { hasText: FILE_NAME }).count()) > 0, 20_000, `the collection's name: ${await page.locator('.notifications').innerHTML()}`);
  });

  it('isolates user text inside the messages written as strings: a taken username, a refused tag, a file to delete', async () => {
    // Between U+2068 FIRST STRONG ISOLATE and U+2069 POP DIRECTIONAL ISOLATE (src/bidi.ts), which do what <bdi> does:
    // without them the sentence's quotes, digits and Latin letters took part in the name's ordering.
    const other = await signUp(system.baseUrl, mailbox, 'web-bidi-other');
    const taken = 'سارة_2024';
    const named = await other.client.put('/api/user', { username: taken, website: null, visible_email: false });
    expect(named.status).toBeLessThan(300);
    await signIn();
    await page.goto('/profile');
    await page.getByLabel('Username').fill(taken);
    await page.getByRole('button', { name: 'Save profile' }).click();
    const problem = page.locator('#profile-username-problem');
    await problem.getByText('is already taken', { exact: false }).waitFor();
    expect(await problem.textContent()).toMatch(/^The username “\u2068سارة_2024\u2069” is already taken by someone else /);

    await page.goto('/card/new');
    await page.getByLabel('Tags (comma-separated)').fill('tides, وسم\u200Fعربي');
    const tagProblem = page.locator('#card-tags-problem');
    await tagProblem.getByText('right-to-left mark', { exact: false }).waitFor();
    expect(await tagProblem.textContent()).toBe('Tags: the 2nd tag ("\u2068وسم<U+200F>عربي\u2069") must not contain U+200F (right-to-left mark).');

    // The file uploaded in the test before: its delete confirmation, answered No.
    await page.goto('/upload');
    const row = page.locator('.plain-list li', { hasText: FILE_NAME });
    await row.waitFor();
    const asked = new Promise<string>((resolve) => page.once('dialog', (d) => void d.dismiss().then(() => resolve(d.message()))));
    await row.getByRole('button', { name: 'Delete' }).click();
    expect(await asked).toBe(`Delete \u2068${FILE_NAME}\u2069? Its cards and collection stay.`);
    expect(await row.count()).toBe(1);
  });

  it('types an Arabic paragraph right to left in the editor and stores it without a dir; a pasted dir="rtl" is kept', async () => {
    await signIn();
    await page.goto('/card/new');
    const editor = page.getByRole('textbox', { name: 'Card text', exact: true });
    await editor.click();
    await page.keyboard.type('مرحبا بالعالم، هذه فقرة عربية');
    await page.keyboard.press('Enter');
    await page.keyboard.type('An English paragraph after it.');
    expect(readsRightToLeft(await placement('.rich-text p:nth-child(1)'))).toBe(true);
    expect(readsLeftToRight(await placement('.rich-text p:nth-child(2)'))).toBe(true);
    await page.evaluate(`(() => {
      const data = new DataTransfer();
      data.setData('text/html', '<p>y</p><p dir="RTL" style="direction:rtl">Word ${RTL_LED_BY_LATIN}</p><p>x</p>');
      data.setData('text/plain', 'Word');
      document.querySelector('.rich-text').dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    })()`);
    const toggle = page.getByRole('button', { name: 'Edit as HTML' });
    await toggle.click();
    const html = await page.getByLabel('Card text (HTML)').inputValue();
    expect(html).toContain('<p>مرحبا بالعالم، هذه فقرة عربية</p>');
    expect(html).toContain(`<p dir="rtl">Word ${RTL_LED_BY_LATIN}</p>`);
    await toggle.click();
    expect(readsRightToLeft(await placement('.rich-text p[dir="rtl"]'))).toBe(true);
    expect(await page.locator('#card-tags').getAttribute('dir')).toBe('auto');
    page.once('dialog', (d) => void d.accept());
    await page.goto('/');
  });

  it('wraps a 200-character word, a long tag, a long collection name and CJK text at 320 px', async () => {
    await signIn();
    await page.setViewportSize({ width: 320, height: 640 });
    try {
      const wide: string[] = [];
      for (const path of [`/card/${layoutCardId}`, `/collection/${longCollectionId}`, '/collections', `/user/${user.id}`, '/?q=word1&mode=fulltext', '/notifications']) {
        await page.goto(path);
        await page.locator('h1').waitFor();
        await page.waitForLoadState('networkidle');
        const [scroll, client] = await page.evaluate<[number, number]>('[document.documentElement.scrollWidth, document.documentElement.clientWidth]');
        if (scroll > client) {
          const widest = await page.evaluate<string[]>(
            `[...document.querySelectorAll('main *')].filter((el) => el.getBoundingClientRect().right > ${client} + 1).slice(-3).map((el) => el.tagName.toLowerCase() + (el.className ? '.' + el.className : ''))`,
          );
          wide.push(`${path}: ${scroll} px wide (${widest.join(', ')})`);
        }
      }
      expect(wide).toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1200, height: 900 });
    }
  });
});
