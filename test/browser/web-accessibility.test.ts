/**
 * The web app's accessibility audit, in headless Chromium against the all-in-one system (the same setup as
 * web-app.test.ts): axe-core on every screen and state (serious and critical findings of all its rules, best practices
 * included), a keyboard-only journey, the focus indicator's contrast, focus and a spoken message after a row is
 * deleted, search results said in a status rather than by reading the whole list out, vote totals in words, Escape on
 * the phone menu, reflow at 320 px and notices whose live region comes before their words. See docs/web.md
 * "Accessibility audit".
 */
import { readFileSync } from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import type { RunningSystem } from '../support/service';
import { buildDocx } from './support/docx';
import { chromiumForSuite } from './support/chromium';
import { eventually, signInBrowser, startBrowserSystem, type BrowserSystem } from './support/browser-system';

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(180_000);

const CARD_TEXT = Array.from({ length: 8 }, (_, i) => `Sentence ${i} about the glaciers of the north, their slow flow down the valleys and the meltwater lakes.`).join(' ');
const DOCX_MIME = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

let system: RunningSystem;
let running: BrowserSystem | undefined;
let context: BrowserContext;
let page: Page;
let user: TestUser;
let other: TestUser;
const mailbox = new Mailbox();
const pageProblems: string[] = [];
/** Cards of `other`, public, tagged "glacier". */
const otherCards: string[] = [];
let collectionId = '';

const signIn = (who: TestUser = user) => signInBrowser(context, system.baseUrl, who);

// Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** Every axe-core rule (WCAG A/AA and best practices) on the page as it is now: the serious and critical findings. */
async function seriousAxeFindings(target: Page = page): Promise<string[]> {
  if (!(await target.evaluate<boolean>('typeof window.axe === "object"'))) await target.evaluate(AXE_SOURCE);
  const violations = await target.evaluate<{ id: string; impact: string; help: string; nodes: { target: string[] }[] }[]>(
    `axe.run(document).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))`,
  );
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

/** The screen `name` has no serious or critical axe finding (named in the failure). */
async function expectNoSeriousFindings(name: string): Promise<void> {
  expect({ screen: name, findings: await seriousAxeFindings() }).toEqual({ screen: name, findings: [] });
}

/** What has the keyboard focus: tag, id and text, or "body" when it was dropped. */
const focused = () =>
  page.evaluate<string>(`(() => {
    const e = document.activeElement;
    if (!e || e === document.body) return 'body';
    return e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' ' + (e.getAttribute('aria-label') || e.textContent || '').trim().slice(0, 60);
  })()`);

/**
 * The focused element's focus indicator: its outline (style, width) and the contrast of the outline's colour with the
 * colour around the element (the nearest opaque background of its parents), as WCAG 1.4.11 asks of a focus indicator.
 */
const focusIndicator = () =>
  page.evaluate<{ what: string; style: string; width: number; contrast: number }>(`(() => {
    const e = document.activeElement;
    const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
    const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    const lum = ([r, g, b]) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    let around = [255, 255, 255];
    for (let p = e.parentElement; p; p = p.parentElement) {
      const c = rgb(getComputedStyle(p).backgroundColor);
      if (c.length === 3 || c[3] === 1) { around = c.slice(0, 3); break; }
    }
    const cs = getComputedStyle(e);
    const [a, b] = [lum(rgb(cs.outlineColor)), lum(around)].sort((x, y) => y - x);
    const what = e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' ' + (e.getAttribute('aria-label') || e.textContent || '').trim().slice(0, 30);
    return { what, style: cs.outlineStyle, width: parseFloat(cs.outlineWidth), contrast: Math.round(((a + 0.05) / (b + 0.05)) * 100) / 100 };
  })()`);

async function createCard(who: TestUser, text: string, tags: string[] = [], link = ''): Promise<string> {
  const res = await who.client.post('/api/card', { card_html: `<p>${text}</p>`, link, private: false, tag_set: tags });
  expect(res.status).toBe(200);
  return (res.json as { card_metadata: { id: string } }).card_metadata.id;
}

async function createCollection(who: TestUser, name: string, cardIds: string[]): Promise<string> {
  const res = await who.client.post('/api/card_collection', { name, description: 'Glaciers and their lakes', is_public: true });
  expect(res.status).toBe(204);
  const id = /([0-9a-f-]{36})$/.exec(res.headers.get('location') ?? '')![1]!;
  for (const card of cardIds) expect((await who.client.post(`/api/card_collection/${id}`, { card_metadata_id: card })).status).toBe(204);
  return id;
}

async function uploadFile(who: TestUser, name: string): Promise<void> {
  const res = await who.client.post('/api/file', {
    base64_docx_file: Buffer.from(buildDocx([{ heading: 'Glaciers', paragraphs: [CARD_TEXT] }])).toString('base64url'),
    file_name: name,
    file_mime_type: DOCX_MIME,
    tag_set: [],
    private: false,
  });
  expect(res.status).toBe(200);
}

describeInBrowser('web app accessibility in headless Chromium', () => {
  beforeAll(async () => {
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-a11y', pageProblems });
    ({ system, context, page } = running);
    user = await signUp(system.baseUrl, mailbox, 'web-a11y');
    other = await signUp(system.baseUrl, mailbox, 'web-a11y-other');
    for (let i = 0; i < 3; i++) otherCards.push(await createCard(other, `${CARD_TEXT} Glacier card ${i}.`, ['glacier']));
    collectionId = await createCollection(user, 'Glacier reading', otherCards.slice(0, 2));
    await uploadFile(user, 'glaciers.docx');
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('has no serious or critical axe-core finding on any screen, signed out or in', async () => {
    await context.clearCookies();
    const signedOut: [string, string][] = [
      ['/', 'Search the card library'],
      ['/auth/login', 'Sign in'],
      ['/auth/invite', 'Get an invitation'],
      ['/auth/forgot', 'Reset your password'],
      ['/auth/register/00000000-0000-4000-8000-000000000000?email=a%40example.com', 'Create your account'],
      ['/auth/password/00000000-0000-4000-8000-000000000000', 'Choose a new password'],
      ['/top', 'Top users'],
      ['/no/such/page', 'Page not found'],
      ['/card/00000000-0000-4000-8000-000000000000', 'Card not found'],
      ['/notifications', 'Notifications'],
      [`/collection/${collectionId}`, 'Glacier reading'],
      [`/user/${other.id}`, ''],
    ];
    for (const [path, heading] of signedOut) {
      await page.goto(path);
      await page.locator('h1').first().waitFor();
      if (heading) await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      await page.waitForLoadState('networkidle');
      await expectNoSeriousFindings(`signed out ${path}`);
    }
    // Error states: a refused sign-in, an empty invitation.
    await page.goto('/auth/login');
    await page.getByLabel('E-mail').fill('nobody@example.com');
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await expectNoSeriousFindings('refused sign-in');

    await signIn();
    const signedIn = ['/', '/card/new', '/upload', '/collections', `/collection/${collectionId}`, '/notifications', '/profile', `/user/${user.id}`, `/card/${otherCards[0]}`, '/top'];
    for (const path of signedIn) {
      await page.goto(path);
      await page.locator('h1').first().waitFor();
      await page.waitForLoadState('networkidle');
      await expectNoSeriousFindings(`signed in ${path}`);
    }
    // The card form's states: rule errors, the link field, the HTML view.
    await page.goto('/card/new');
    await page.locator('#card-text[contenteditable]').waitFor();
    await page.getByRole('button', { name: 'Create card' }).click();
    await page.locator('#card-text-problem:not(:empty)').waitFor();
    await expectNoSeriousFindings('card form with rule errors');
    await page.locator('#card-text').click();
    await page.keyboard.type('Ice ');
    await page.keyboard.press('Control+a');
    await page.keyboard.press('Control+k');
    await page.getByLabel('Link address').waitFor();
    await expectNoSeriousFindings('card form link field');
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Edit as HTML' }).click();
    await expectNoSeriousFindings('card form HTML view');
    // Search results (with tags and paging parts), a collection searched, the phone menu open.
    await page.goto('/?q=glaciers+valleys&mode=fulltext');
    await page.locator('.results').waitFor();
    await expectNoSeriousFindings('search results');
    await page.goto(`/collection/${collectionId}?q=glaciers&mode=fulltext`);
    await page.locator('.results').waitFor();
    await expectNoSeriousFindings('collection search results');
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      await page.goto('/notifications');
      await page.getByRole('button', { name: /Menu/ }).click();
      await expectNoSeriousFindings('phone width, menu open');
    } finally {
      await page.setViewportSize({ width: 1200, height: 900 });
    }
    expect(pageProblems).toEqual([]);
  });

  it('shows keyboard focus with an outline of at least 3:1 contrast on every control it reaches', async () => {
    await signIn();
    const weak: string[] = [];
    for (const path of ['/', '/card/new', '/upload', `/collection/${collectionId}`, `/card/${otherCards[0]}`, '/notifications']) {
      await page.goto(path);
      await page.locator('h1').first().waitFor();
      await page.waitForLoadState('networkidle');
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab');
        if ((await focused()) === 'body') break;
        const f = await focusIndicator();
        if (f.style === 'none' || f.width < 2 || f.contrast < 3) weak.push(`${path}: ${f.what} (${f.style} ${f.width}px, ${f.contrast}:1)`);
      }
    }
    expect(weak).toEqual([]);
  });

  it('says what a delete did, with the focus, where the row was pressed: a deleted file, a card taken out of a collection', async () => {
    await signIn();
    await uploadFile(user, 'moraines.docx');
    await page.goto('/upload');
    const row = page.locator('li', { hasText: 'moraines.docx' });
    await row.getByRole('button', { name: 'Delete' }).focus();
    page.once('dialog', (dialog) => void dialog.accept());
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Deleted moraines.docx.' }).waitFor();
    await eventually(async () => (await row.count()) === 0, 10_000, 'the file row gone');
    // The focus is on the message (not dropped to <body>), and Tab goes on into the files left.
    expect(await focused()).toBe('p Deleted moraines.docx.');
    await page.keyboard.press('Tab');
    expect(await focused()).toMatch(/^button Make (private|public)$/);

    // Two cards far apart (not collisions of each other, which would make one entry).
    const deserts = CARD_TEXT.replace(/glaciers/g, 'deserts').replace(/meltwater lakes/g, 'dry salt pans').replace(/slow flow down the valleys/g, 'dunes moving with the wind');
    const sorted = [await createCard(user, deserts), await createCard(user, `Reefs: ${CARD_TEXT.replace(/glaciers of the north/g, 'coral reefs of the south seas')}`)];
    const removable = await createCollection(user, 'To sort', sorted);
    await page.goto(`/collection/${removable}`);
    const remove = page.getByRole('button', { name: 'Remove from collection' });
    await remove.first().waitFor();
    await remove.first().focus();
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: /^Removed “(Sentence 0 about the deserts|Reefs: Sentence 0 about the coral) [^”]*” from this collection\.$/ }).waitFor();
    await eventually(async () => (await remove.count()) === 1, 10_000, 'one card left');
    expect(await focused()).toMatch(/^p Removed “/);
    // A second one is said and focused again.
    await remove.first().focus();
    await page.keyboard.press('Enter');
    await page.getByText('This collection holds no cards yet.').waitFor();
    expect(await focused()).toMatch(/^p Removed “/);
    expect(await page.getByRole('status').filter({ hasText: /^Removed/ }).count()).toBe(1);
    await expectNoSeriousFindings('a collection emptied');
  });

  it("says a search's outcome in one status sentence, on the search page and inside a collection, and reads no list out", async () => {
    await signIn();
    const status = page.getByTestId('search-status');
    /** Searches by keyboard (type, Enter) and waits for the status to say `said`, in the live region that was there before. */
    const searchFor = async (field: string, words: string, said: RegExp): Promise<void> => {
      await status.evaluate((e) => e.setAttribute('data-was-here', 'yes'));
      await page.getByLabel(field, { exact: true }).fill(words);
      await page.getByLabel(field, { exact: true }).press('Enter');
      await eventually(async () => said.test((await status.textContent()) ?? ''), 30_000, `the status saying ${said}`);
      expect(await status.getAttribute('role')).toBe('status');
      expect(await status.getAttribute('data-was-here')).toBe('yes');
    };
    await page.goto('/');
    await page.getByRole('heading', { name: 'Search the card library' }).waitFor();
    await page.waitForLoadState('networkidle');
    expect(await status.textContent()).toBe('');
    await page.getByLabel('Full text (by words, typo-tolerant)').check();
    await searchFor('Search cards', 'glaciers meltwater', /^[1-9]\d* results?\.$/);
    await page.locator('.results').waitFor();
    // No live region holds the results: a screen reader would read every card out.
    expect(await page.locator('[aria-live] .results, [role="status"] .results, [role="alert"] .results').count()).toBe(0);
    await searchFor('Search cards', 'zzqxv wvxqz', /^No results\.$/);
    await page.getByText('No card matches').waitFor();

    await page.goto(`/collection/${collectionId}`);
    await page.getByRole('heading', { name: 'Glacier reading' }).waitFor();
    await page.waitForLoadState('networkidle');
    expect(await status.textContent()).toBe('');
    await page.getByLabel('Full text (by words, typo-tolerant)').check();
    await searchFor('Search this collection', 'glaciers valleys', /^[12] results?\.$/);
    await searchFor('Search this collection', 'zzqxv wvxqz', /^No results\.$/);
    expect(pageProblems).toEqual([]);
  });

  it('says vote totals in words, not as the arrows that show them', async () => {
    expect((await user.client.post('/api/vote', { card_metadata_id: otherCards[2], vote: true })).status).toBe(200);
    await signIn();
    await page.goto(`/collection/${collectionId}?q=glaciers&mode=fulltext`);
    await page.locator('.results').waitFor();
    // A listed card: "▲ 0 ▼ 0" read as "black up-pointing triangle 0…" (its aria-label on a <span> was ignored).
    const listed = await page.locator('.results .meta').first().ariaSnapshot();
    expect(listed).toMatch(/\b0 upvotes, 0 downvotes\b/);
    expect(listed).not.toMatch(/[▲▼]/);
    await page.goto(`/card/${otherCards[2]}`);
    const votes = page.getByRole('group', { name: 'Votes' });
    await votes.getByRole('button', { name: 'Upvote 1', exact: true }).waitFor();
    await votes.getByRole('button', { name: 'Downvote 0', exact: true }).waitFor();
    expect(await votes.ariaSnapshot()).not.toMatch(/[▲▼]/);
    await page.goto(`/user/${other.id}`);
    const received = page.locator('dt:has-text("Votes received") + dd');
    await received.waitFor();
    expect(await received.ariaSnapshot()).toMatch(/^- definition: 1 upvote, 0 downvotes$/);
  });

  it('folds the open phone menu with Escape, from any of its links, and gives the focus back to the Menu button', async () => {
    await signIn();
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      await page.goto('/');
      const menu = page.getByRole('button', { name: /^Menu/ });
      await menu.focus();
      await page.keyboard.press('Enter');
      expect(await menu.getAttribute('aria-expanded')).toBe('true');
      await page.keyboard.press('Tab');
      await page.keyboard.press('Tab');
      expect(await focused()).toBe('a Top users');
      await page.keyboard.press('Escape');
      expect(await menu.getAttribute('aria-expanded')).toBe('false');
      expect(await page.getByRole('link', { name: 'Top users' }).isVisible()).toBe(false);
      expect(await focused()).toMatch(/^button Menu/);
      // Escape elsewhere (the search field) leaves a folded menu as it is.
      await page.getByLabel('Search cards').focus();
      await page.keyboard.press('Escape');
      expect(await menu.getAttribute('aria-expanded')).toBe('false');
      expect(await focused()).toBe('input#search-q ');
    } finally {
      await page.setViewportSize({ width: 1200, height: 900 });
    }
  });

  it('reflows every page at 320 px with nothing scrolling sideways, the top users named by long e-mail addresses too', async () => {
    // The vote test's upvote put `other` (no username: shown by its e-mail address) on the top users' page.
    await signIn();
    await page.setViewportSize({ width: 320, height: 640 });
    try {
      const wide: string[] = [];
      for (const path of ['/top', '/', '/?q=glaciers&mode=fulltext', '/card/new', '/upload', '/collections', `/collection/${collectionId}`, '/notifications', '/profile', `/user/${other.id}`, `/card/${otherCards[2]}`]) {
        await page.goto(path);
        await page.locator('h1').first().waitFor();
        await page.waitForLoadState('networkidle');
        if (path === '/top') await page.getByRole('link', { name: other.email }).waitFor();
        const [scroll, client] = await page.evaluate<number[]>('[document.documentElement.scrollWidth, document.documentElement.clientWidth]');
        if (scroll! > client!) wide.push(`${path}: ${scroll} px wide`);
      }
      expect(wide).toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1200, height: 900 });
    }
  });

  it('puts a notice\'s live region in the page before its words, so a screen reader says them (Add to collection)', async () => {
    await createCollection(user, 'Fresh shelf', []);
    await signIn();
    await page.goto(`/card/${otherCards[2]}`);
    const chooser = page.getByLabel('Collection', { exact: true });
    await chooser.locator('option', { hasText: 'Fresh shelf' }).waitFor({ state: 'attached' });
    // Each status element the page gains, with the words it had when it came in.
    await page.evaluate(`(() => {
      window.__statusesAdded = [];
      new MutationObserver((records) => {
        for (const r of records) for (const n of r.addedNodes) {
          if (!(n instanceof Element)) continue;
          for (const e of [n, ...n.querySelectorAll('[role="status"]')]) if (e.getAttribute('role') === 'status') window.__statusesAdded.push(e.textContent);
        }
      }).observe(document.body, { childList: true, subtree: true });
    })()`);
    await chooser.selectOption({ label: 'Fresh shelf' });
    await page.getByRole('button', { name: 'Add to collection' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Added to “Fresh shelf”.' }).waitFor();
    expect(await page.evaluate<string[]>('window.__statusesAdded')).toEqual(['']);
    expect(await focused()).toBe('button Add to collection');
  });

  it('takes a keyboard-only journey: sign in, create a card, vote, search, open a collection, upload, read notifications', async () => {
    /** Presses Tab (Shift+Tab with `back`) until the focus is on what `target` matches; fails naming where it got stuck. */
    const tabTo = async (target: RegExp, back = false): Promise<void> => {
      const seen: string[] = [];
      for (let i = 0; i < 60; i++) {
        await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
        const now = await focused();
        if (target.test(now)) return;
        seen.push(now);
      }
      throw new Error(`Tab never reached ${target}: ${seen.join(' | ')}`);
    };
    const headingFocused = async (name: string) => eventually(async () => (await focused()) === `h1 ${name}`, 10_000, `focus on the heading "${name}"`);

    await context.clearCookies();
    await page.goto('/');
    await page.getByRole('heading', { name: 'Search the card library' }).waitFor();
    await tabTo(/^a Sign in$/);
    await page.keyboard.press('Enter');
    await headingFocused('Sign in');
    await tabTo(/^input#login-email/);
    await page.keyboard.type(user.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(user.password);
    await page.keyboard.press('Enter');
    await headingFocused('Search the card library');

    // A card: the text by keyboard in the editor, Tab out of it to the link and tags, Enter on "Create card".
    await tabTo(/^a New card$/);
    await page.keyboard.press('Enter');
    await headingFocused('New card');
    await tabTo(/^div#card-text/);
    // Far from the other cards' text (a near copy is kept as a collision, and the form stays to say so).
    await page.keyboard.insertText(Array.from({ length: 8 }, (_, i) => `Line ${i}: lighthouse keepers logged every passing ship, storm and broken lamp in ledgers kept for ${i + 2} decades.`).join(' '));
    await page.keyboard.press('Tab');
    expect(await focused()).toMatch(/^input#card-link/);
    await page.keyboard.press('Tab');
    await page.keyboard.type('ice, sea');
    await tabTo(/^button Create card$/);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/card\/[0-9a-f-]{36}$/);
    await headingFocused((await page.locator('h1').textContent())!.trim().slice(0, 60));

    // A vote on another person's card, twice (on, then off): the focus stays on the button.
    await page.goto(`/card/${otherCards[1]}`);
    await tabTo(/^button (▲ )?Upvote \d+$/);
    await page.keyboard.press('Enter');
    await eventually(async () => (await page.getByRole('button', { name: /^Upvote/ }).getAttribute('aria-pressed')) === 'true', 10_000, 'the upvote pressed');
    expect(await focused()).toMatch(/^button (▲ )?Upvote \d+$/);
    await page.keyboard.press('Enter');
    await eventually(async () => (await page.getByRole('button', { name: /^Upvote/ }).getAttribute('aria-pressed')) === 'false', 10_000, 'the upvote taken back');

    // Search: type, Enter, the status says it, Tab reaches the results.
    await tabTo(/^a Search$/, true);
    await page.keyboard.press('Enter');
    await headingFocused('Search the card library');
    await tabTo(/^input#search-q/);
    await page.keyboard.type('glaciers meltwater');
    await page.keyboard.press('Enter');
    await eventually(async () => /results?/.test((await page.getByTestId('search-status').textContent()) ?? ''), 30_000, 'the search said');
    await tabTo(/^a Sentence \d about the/);

    // A collection, opened from the list.
    await tabTo(/^a Collections$/, true);
    await page.keyboard.press('Enter');
    await headingFocused('Your collections');
    await tabTo(/^a Glacier reading$/);
    await page.keyboard.press('Enter');
    await headingFocused('Glacier reading');

    // An upload: the file chosen from the keyboard (Space on the file field), sent with Enter.
    const collectionNotifications = async () =>
      ((await (await page.request.get('/api/notifications')).json()) as { collection_uuid?: string }[]).filter((n) => n.collection_uuid).length;
    const collectionNotificationsBefore = await collectionNotifications();
    await tabTo(/^a Upload$/, true);
    await page.keyboard.press('Enter');
    await headingFocused('Upload a document');
    await tabTo(/^input#upload-file/);
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.keyboard.press('Space')]);
    await chooser.setFiles({ name: 'crevasses.docx', mimeType: DOCX_MIME, buffer: buildDocx([{ heading: 'Crevasses', paragraphs: [CARD_TEXT.replace(/glaciers/g, 'crevasses')] }]) });
    await tabTo(/^button Upload$/);
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Uploaded crevasses.docx' }).waitFor({ timeout: 30_000 });
    expect(await focused()).toBe('button Upload');

    // Notifications: read, all marked read from the keyboard, once the upload's "collection created" has come (it
    // comes asynchronously; one arriving after "Mark all as read" would be unread again).
    await eventually(async () => (await collectionNotifications()) > collectionNotificationsBefore, 60_000, 'the upload\'s collection notification');
    await tabTo(/^a Notifications, \d+ unread$/, true);
    await page.keyboard.press('Enter');
    await headingFocused('Notifications');
    await tabTo(/^button Mark all as read$/);
    await page.keyboard.press('Enter');
    await eventually(async () => (await page.getByRole('link', { name: /^Notifications, / }).getAttribute('aria-label')) === 'Notifications, 0 unread', 10_000, 'no unread');
    expect(await focused()).toBe('button Mark all as read');
    expect(pageProblems).toEqual([]);
  });
});
