/**
 * Findings of a browser journey audit of the web app, in headless Chromium against the all-in-one system (the same
 * setup as web-app-audit.test.ts): a card draft kept through an ended session and guarded against leaving, keyboard
 * focus after actions, one unread count, named "Mark as read" buttons, the forms' wording of the API's field names, the
 * top users' paging, a 429's real wait, a deleted collection asked about once, the sign-in page while signed in and a
 * signed-out deep link's heading.
 */
import { randomUUID } from 'node:crypto';
import type { BrowserContext, Dialog, Locator, Page } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import type { RunningSystem } from '../support/service';
import { chromiumForSuite } from './support/chromium';
import { eventually as eventuallyTrue, signInBrowser, startBrowserSystem, type BrowserSystem } from './support/browser-system';

/** Signs the browser in as `who` with a fresh session (another test's sign-out does not matter). */
const signIn = (who: TestUser = user) => signInBrowser(context, system.baseUrl, who);
const eventually = (attempt: () => Promise<boolean>, timeoutMs = 60_000, what = 'condition') => eventuallyTrue(attempt, timeoutMs, what, 300);

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(120_000);

const CARD_TEXT = Array.from({ length: 8 }, (_, i) => `Sentence ${i} about the tides of the sea, the pull of the Moon and the slow lengthening of our days.`).join(' ');

let system: RunningSystem;
let running: BrowserSystem | undefined;
let context: BrowserContext;
let page: Page;
let user: TestUser;
let other: TestUser;
const mailbox = new Mailbox();

const activeTag = (p: Page = page) => p.evaluate<string>('document.activeElement?.tagName ?? ""');
const activeText = (p: Page = page) => p.evaluate<string>('document.activeElement?.textContent?.trim() ?? ""');

/**
 * Opens `path` signed in and waits until the page has settled as signed in: `button` enabled (the session read) and the
 * page's own first requests answered (the unread poll, the collections menus). A request of the page's sent after a
 * test clears the cookies would meet the ended session first and sign the page out, so the button a test presses
 * next would be disabled (CI, load 20+: the downvote waited 30 s for an enabled button).
 */
async function openSignedIn(path: string, button: Locator): Promise<void> {
  const polled = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/notifications');
  await page.goto(path);
  await button.waitFor();
  await polled;
  await eventually(() => button.isEnabled(), 30_000, 'the button enabled');
  await page.waitForLoadState('networkidle');
}

/** The next dialog's kind and message, answered with `accept`. */
function nextDialog(p: Page, accept: boolean): Promise<{ type: string; message: string }> {
  return new Promise((done) => {
    p.once('dialog', (dialog: Dialog) => {
      const seen = { type: dialog.type(), message: dialog.message() };
      void (accept ? dialog.accept() : dialog.dismiss()).then(() => done(seen));
    });
  });
}

async function createCollection(who: TestUser, name: string, isPublic = true): Promise<string> {
  const res = await who.client.post('/api/card_collection', { name, description: '', is_public: isPublic });
  expect(res.status).toBe(204);
  return /([0-9a-f-]{36})$/.exec(res.headers.get('location') ?? '')![1]!;
}

/**
 * A collection created, once its Collection Created notification is listed (through the API): the notification comes
 * through the event log after the 204, so a notifications page opened or refreshed at once could list it not, and
 * the page asks again only on Refresh.
 */
async function createNotifiedCollection(who: TestUser, name: string): Promise<string> {
  const id = await createCollection(who, name);
  await eventually(async () => ((await who.client.get('/api/notifications')).json as { collection_uuid?: string }[]).some((n) => n.collection_uuid === id), 30_000, `the notification of ${name}`);
  return id;
}

describeInBrowser('web app journey audit fixes in headless Chromium', () => {
  beforeAll(async () => {
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-journey' });
    ({ system, context, page } = running);
    user = await signUp(system.baseUrl, mailbox, 'web-journey');
    other = await signUp(system.baseUrl, mailbox, 'web-journey-other');
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('keeps a card draft through an ended session, for its writer only, until it is sent', async () => {
    await signIn();
    await page.goto('/card/new');
    const text = page.getByLabel('Card text');
    await text.fill(CARD_TEXT);
    await page.getByLabel('Source link').fill('https://example.com/draft-kept');
    await page.getByLabel('Private (only you can see it)').check();
    // Signed out in another tab: this tab hears of it at once (web-tabs.test.ts) and keeps the draft as the form goes.
    const tabB = await context.newPage();
    await tabB.goto('/profile');
    await tabB.getByRole('button', { name: 'Sign out' }).click();
    await tabB.getByRole('link', { name: 'Sign in', exact: true }).waitFor();
    await tabB.close();
    await page.getByText('Your session has ended').waitFor();

    // Another person signing in on this browser (same tab) does not see it.
    await signIn(other);
    await page.goto('/card/new');
    await page.getByRole('heading', { name: 'New card' }).waitFor();
    await page.locator('#card-text[contenteditable]').waitFor();
    expect((await text.textContent())?.trim()).toBe('');
    expect(await page.getByLabel('Source link').inputValue()).toBe('');

    // Its writer, signing in again through ?next=, finds it as it was.
    await context.clearCookies();
    await page.goto(`/auth/login?next=${encodeURIComponent('/card/new')}`);
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/card\/new$/);
    await page.locator('#card-text[contenteditable]').waitFor();
    await eventually(async () => (await text.textContent())?.includes('Sentence 7 about the tides') ?? false, 10_000, 'the draft text');
    expect(await page.getByLabel('Source link').inputValue()).toBe('https://example.com/draft-kept');
    expect(await page.getByLabel('Private (only you can see it)').isChecked()).toBe(true);

    // Sent: the draft is gone.
    await page.getByRole('button', { name: 'Create card' }).click();
    await page.waitForURL(/\/card\/[0-9a-f-]{36}$/);
    await page.goto('/card/new');
    await page.locator('#card-text[contenteditable]').waitFor();
    expect((await text.textContent())?.trim()).toBe('');
  });

  it('keeps a vote pressed after the session ended and counts it once its voter signs in again', async () => {
    const created = await other.client.post('/api/card', { card_html: `<p>${CARD_TEXT} A card to vote on.</p>`, link: '', private: false, tag_set: [] });
    expect(created.status).toBe(200);
    const cardId = (created.json as { card_metadata: { id: string } }).card_metadata.id;
    await signIn();
    const upvote = page.getByRole('button', { name: /Upvote/ });
    await openSignedIn(`/card/${cardId}`, upvote);
    // The session's cookie expires (the browser drops it; no other tab signed out, so no tab hears of it): this tab's
    // upvote meets the ended session, and says it is not counted yet.
    await context.clearCookies();
    await upvote.click();
    await page.getByText('Your session has ended, so your upvote is not counted yet: sign in again and it will be.').waitFor();
    const voteOf = async () => ((await user.client.get(`/api/card/${cardId}`)).json as { vote_by_current_user: boolean | null; total_upvotes: number });
    expect(await voteOf()).toMatchObject({ vote_by_current_user: null, total_upvotes: 0 });

    // Signing in again from the notice comes back to the card, where the kept vote is cast.
    await page.getByRole('link', { name: 'Sign in again' }).click();
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(new RegExp(`/card/${cardId}$`));
    await page.getByText('Your upvote, made when your session had ended, is counted now.').waitFor();
    await eventually(async () => (await upvote.getAttribute('aria-pressed')) === 'true', 10_000, 'the upvote pressed');
    expect(await voteOf()).toMatchObject({ vote_by_current_user: true, total_upvotes: 1 });
    // Once: opened again, the card is as voted, with nothing cast again.
    await page.reload();
    await upvote.waitFor();
    expect(await page.getByText('is counted now').count()).toBe(0);
    expect(await voteOf()).toMatchObject({ vote_by_current_user: true, total_upvotes: 1 });
  });

  it('drops a vote kept across an ended session, saying it was not counted, when its card was deleted or made private since', async () => {
    const draftsOf = (cardId: string) => page.evaluate<string[]>(`Object.keys(sessionStorage).filter((key) => key.includes(${JSON.stringify(cardId)}))`);
    for (const [change, button, words] of [
      ['deleted', 'Upvote', 'upvote'],
      ['made private', 'Downvote', 'downvote'],
    ] as const) {
      const created = await other.client.post('/api/card', { card_html: `<p>${CARD_TEXT} A card ${change} later.</p>`, link: '', private: false, tag_set: [] });
      expect(created.status).toBe(200);
      const cardId = (created.json as { card_metadata: { id: string } }).card_metadata.id;
      await signIn();
      const vote = page.getByRole('button', { name: new RegExp(button) });
      await openSignedIn(`/card/${cardId}`, vote);
      // The session's cookie expires (dropped by the browser): the vote meets the ended session.
      await context.clearCookies();
      await vote.click();
      await page.getByText(`Your session has ended, so your ${words} is not counted yet: sign in again and it will be.`).waitFor();
      expect(await draftsOf(cardId)).toHaveLength(1);

      // Meanwhile its author deletes it or makes it private: the voter, signed in again, cannot open it.
      if (change === 'deleted') expect((await other.client.delete(`/api/card/${cardId}`)).status).toBe(204);
      else expect((await other.client.put('/api/card/update', { card_uuid: cardId, private: true })).status).toBe(204);
      await page.getByRole('link', { name: 'Sign in again' }).click();
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(new RegExp(`/card/${cardId}$`));
      await page.getByRole('heading', { name: 'Card not found' }).waitFor();
      await page
        .getByText(`Your ${words}, made when your session had ended, was not counted: this card can no longer be voted on (it was deleted or made private).`)
        .waitFor();
      expect({ change, kept: await draftsOf(cardId) }).toEqual({ change, kept: [] });
      // Said once: opened again, the page is only not found.
      await page.reload();
      await page.getByRole('heading', { name: 'Card not found' }).waitFor();
      expect(await page.getByText('was not counted').count()).toBe(0);
    }
  });

  it('loads a signed-out page without asking GET /api/auth (no 401 logged), and a signed-in one as before', async () => {
    // Away from the last test's signed-in page first: its own requests still under way would meet the cleared cookie and
    // log their 401 here (1 run in 6).
    await page.goto('about:blank');
    await context.clearCookies();
    const asked: number[] = [];
    const errors: string[] = [];
    const onResponse = (r: { url(): string; status(): number; request(): { method(): string } }) => {
      if (new URL(r.url()).pathname === '/api/auth' && r.request().method() === 'GET') asked.push(r.status());
    };
    const onConsole = (m: { type(): string; text(): string }) => {
      if (m.type() === 'error') errors.push(m.text());
    };
    page.on('response', onResponse);
    page.on('console', onConsole);
    try {
      for (const path of ['/top', '/', `/user/${user.id}`]) {
        await page.goto(path);
        await page.getByRole('link', { name: 'Sign in', exact: true }).waitFor();
      }
      expect(asked).toEqual([]);
      expect(errors).toEqual([]);
      await signIn();
      await page.goto('/top');
      await page.getByRole('link', { name: 'New card' }).waitFor();
      expect(asked).toEqual([200]);
    } finally {
      page.off('response', onResponse);
      page.off('console', onConsole);
    }
  });

  it('asks before leaving a card form with unsaved changes (link, Back, tab close), and not without changes', async () => {
    await signIn();
    await page.goto('/');
    await page.getByRole('link', { name: 'New card' }).click();
    await page.locator('#card-text[contenteditable]').waitFor();
    // Nothing written: the way out is free.
    await page.getByRole('link', { name: 'Top users' }).click();
    await page.getByRole('heading', { name: 'Top users' }).waitFor();
    await page.goBack();
    await page.locator('#card-text[contenteditable]').waitFor();

    await page.getByLabel('Card text').fill(CARD_TEXT);
    // A link: refused, the text stays.
    let dialog = nextDialog(page, false);
    await page.getByRole('link', { name: 'Top users' }).click();
    expect(await dialog).toEqual({ type: 'confirm', message: 'Discard this card? What you wrote is not saved.' });
    expect(new URL(page.url()).pathname).toBe('/card/new');
    expect(await page.getByLabel('Card text').textContent()).toContain('Sentence 7');
    // Back: refused, the address and the text stay.
    dialog = nextDialog(page, false);
    await page.goBack();
    expect((await dialog).type).toBe('confirm');
    await eventually(async () => new URL(page.url()).pathname === '/card/new', 5_000, 'the address put back');
    expect(await page.getByLabel('Card text').textContent()).toContain('Sentence 7');

    // Closing the tab gets the browser's own prompt.
    const tab = await context.newPage();
    await tab.goto('/card/new');
    await tab.locator('#card-text[contenteditable]').click();
    await tab.keyboard.type('A few words typed before closing the tab.');
    const unload = nextDialog(tab, true);
    await tab.close({ runBeforeUnload: true });
    expect((await unload).type).toBe('beforeunload');

    // Confirmed: the page goes, and so does the draft.
    dialog = nextDialog(page, true);
    await page.getByRole('link', { name: 'Top users' }).click();
    await dialog;
    await page.getByRole('heading', { name: 'Top users' }).waitFor();
    await page.getByRole('link', { name: 'New card' }).click();
    await page.locator('#card-text[contenteditable]').waitFor();
    expect((await page.getByLabel('Card text').textContent())?.trim()).toBe('');
  });

  it('keeps the keyboard focus on the control after an action (vote, wrong password, make private, mark read)', async () => {
    const card = await other.client.post('/api/card', { card_html: `<p>Focus card. ${CARD_TEXT}</p>`, link: '', private: false, tag_set: [] });
    expect(card.status).toBe(200);
    await signIn();
    await page.goto(`/card/${card.json.card_metadata.id}`);
    const upvote = page.getByRole('button', { name: /Upvote/ });
    await upvote.focus();
    await page.keyboard.press('Enter');
    await eventually(async () => (await upvote.getAttribute('aria-pressed')) === 'true', 10_000, 'the upvote');
    expect(await activeText()).toContain('Upvote');
    await page.keyboard.press(' ');
    await eventually(async () => (await upvote.getAttribute('aria-pressed')) === 'false', 10_000, 'the upvote removed');
    expect(await activeText()).toContain('Upvote');

    // A collection made private by keyboard.
    const collectionId = await createNotifiedCollection(user, `Focus ${Date.now()}`);
    await page.goto(`/collection/${collectionId}`);
    await page.getByText('Rename, share or delete').click();
    await page.getByRole('button', { name: 'Make private' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Make public' }).waitFor();
    expect(await activeText()).toBe('Make public');

    // Mark as read: the next one's button takes the focus, after the last the count; Mark all as read keeps it.
    await createNotifiedCollection(user, `Focus two ${Date.now()}`);
    await page.goto('/notifications');
    const markButtons = page.getByRole('button', { name: 'Mark as read', exact: true });
    await eventually(async () => (await markButtons.count()) >= 2, 10_000, 'two unread notifications');
    await markButtons.first().focus();
    const pressed = await markButtons.first().getAttribute('data-mark-read');
    await page.keyboard.press('Enter');
    await eventually(async () => (await page.locator(`[data-mark-read="${pressed}"]`).count()) === 0, 10_000, 'one marked read');
    expect(await activeText()).toBe('Mark as read');
    expect(await page.evaluate('document.activeElement.getAttribute("data-mark-read")')).not.toBe(pressed);
    const all = page.getByRole('button', { name: 'Mark all as read' });
    await all.focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('unread-count').getByText('0 unread').waitFor();
    expect(await activeText()).toBe('Mark all as read');
    await createNotifiedCollection(user, `Focus three ${Date.now()}`);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await markButtons.first().waitFor();
    await markButtons.first().focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('unread-count').getByText('0 unread').waitFor();
    expect(await activeTag()).not.toBe('BODY');

    // A wrong password: the focus stays on the button pressed.
    await context.clearCookies();
    await page.goto('/auth/login');
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('alert').waitFor();
    expect(await activeText()).toBe('Sign in');
  });

  it('names each "Mark as read" button with its notification, and the header badge says what the page says', async () => {
    await signIn();
    await createNotifiedCollection(user, `Badge one ${Date.now()}`);
    await createNotifiedCollection(user, `Badge two ${Date.now()}`);
    await page.goto('/');
    const badge = page.getByTestId('unread-badge');
    await eventually(async () => Number(await badge.textContent()) >= 2, 10_000, 'the badge');
    // Read elsewhere (another device): the page, opened in the app, and the badge agree at once.
    expect((await user.client.put('/api/notifications/all')).status).toBe(204);
    await createNotifiedCollection(user, `Badge three ${Date.now()}`);
    await page.getByRole('link', { name: /^Notifications/ }).click();
    const count = page.getByTestId('unread-count');
    await count.waitFor();
    const onPage = async () => Number(/^(\d+) unread$/.exec((await count.textContent()) ?? '')?.[1]);
    // 10 s, not 3: on a loaded machine the page's draw can take seconds; the badge's own poll (20 s) is still excluded.
    await eventually(async () => Number(await badge.textContent()) === (await onPage()), 10_000, 'the badge to follow the page');
    // Refresh too.
    const seen = await onPage();
    await createNotifiedCollection(user, `Badge four ${Date.now()}`);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await eventually(async () => (await onPage()) > seen, 10_000, 'the refreshed list');
    await eventually(async () => Number(await badge.textContent()) === (await onPage()), 10_000, 'the badge after Refresh');

    // Once the collections' names are in (before, each reads "open the collection").
    await eventually(async () => (await page.locator('.notifications').getByText('open the collection').count()) === 0, 10_000, 'the names');
    const described = await page.evaluate<string[]>(
      `[...document.querySelectorAll('.notifications button')].map((b) => (b.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent?.trim() ?? '').join(' '))`,
    );
    expect(described.length).toBe(await onPage());
    expect(described.some((d) => d.includes('A collection was created'))).toBe(true);
    expect(described.every((d) => d.length > 0)).toBe(true);
    expect(new Set(described).size).toBe(described.length);
  });

  it('says the API’s field problems in the forms’ words, and the search field takes no more than the API', async () => {
    await signIn();
    await page.goto('/profile');
    await page.getByLabel('Website').fill('ftp://example.com/files');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.getByRole('alert').filter({ hasText: 'The website must be an http or https URL' }).waitFor();
    expect(await page.getByText('website:').count()).toBe(0);

    await page.goto('/card/not-a-card');
    await page.getByText('The card address must be a UUID').waitFor();
    expect(await page.getByText('card_id:').count()).toBe(0);

    await page.goto('/upload');
    await page.getByLabel(/^Document/).setInputFiles({ name: 'notes.pdf', mimeType: 'application/pdf', buffer: Buffer.from('This is not a PDF at all.') });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByRole('alert').filter({ hasText: 'The document: the content is not a PDF' }).waitFor({ timeout: 30_000 });
    expect(await page.getByText('base64_docx_file').count()).toBe(0);

    await page.goto('/');
    expect(await page.getByLabel('Search cards').getAttribute('maxlength')).toBe('2000');
  });

  it('says "nobody" on the top users only when nobody is ranked, not past the last page', async () => {
    const card = await user.client.post('/api/card', { card_html: `<p>Ranked card. ${CARD_TEXT}</p>`, link: '', private: false, tag_set: [] });
    expect((await other.client.post('/api/vote', { card_metadata_id: card.json.card_metadata.id, vote: true })).status).toBe(200);
    await page.goto('/top');
    await page.locator('table.ranking').waitFor();
    await page.goto('/top?page=2');
    await page.getByText('There are no results on page 2.').waitFor();
    expect(await page.getByText('Nobody has received a vote yet.').count()).toBe(0);
  });

  it('says the wait a 429 gives in Retry-After', async () => {
    await context.clearCookies();
    await page.route('**/api/auth', (route) =>
      route.request().method() === 'POST'
        ? route.fulfill({ status: 429, headers: { 'content-type': 'application/json', 'retry-after': '2' }, body: JSON.stringify({ message: 'Too many attempts, try again in a minute' }) })
        : route.fallback(),
    );
    try {
      await page.goto('/auth/login');
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'Too many attempts: try again in 2 seconds.' }).waitFor();
      expect(await page.getByText('in a minute').count()).toBe(0);
    } finally {
      await page.unroute('**/api/auth');
    }
  });

  it('asks about a deleted collection’s name once, not on every visit of the notifications', async () => {
    await signIn();
    const id = await createCollection(user, `Soon deleted ${Date.now()}`);
    expect((await user.client.delete('/api/card_collection', { collection_id: id })).status).toBe(204);
    // A deleted collection's notification is removed when notifications hears of the deletion; until then the list
    // still holds it. The page is shown that moment: the list as served, with the notification still in it.
    const heldOver = { id: randomUUID(), type: 'collection_created', user_uuid: user.id, collection_uuid: id, user_read: false, created_at: '2026-01-01T00:00:00.000000', updated_at: '2026-01-01T00:00:00.000000' };
    await page.route('**/api/notifications', async (route) => {
      if (route.request().method() !== 'GET') return route.continue();
      // The page may leave (the test clicks on) while the list is fetched: the request is gone then, and fulfilling it
      // throws "Route is already handled" outside any test, failing every test after it in this file.
      try {
        const served = await route.fetch({ headers: { ...route.request().headers(), 'if-none-match': '' } });
        const list = (await served.json()) as unknown[];
        await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify([heldOver, ...list]) });
      } catch (err) {
        if (!/already handled|Target page, context or browser has been closed|Request context disposed/i.test(String(err))) throw err;
      }
    });
    const asked: number[] = [];
    const onResponse = (r: { url(): string; status(): number }) => void (new URL(r.url()).pathname === `/api/card_collection/${id}/1` && asked.push(r.status()));
    page.on('response', onResponse);
    try {
      await page.goto('/notifications');
      await page.locator('.notifications li').filter({ hasText: 'A collection was created (since deleted).' }).first().waitFor();
      await page.getByRole('link', { name: 'Top users' }).click();
      await page.getByRole('heading', { name: 'Top users' }).waitFor();
      await page.getByRole('link', { name: /^Notifications/ }).click();
      await page.locator('.notifications li').filter({ hasText: 'A collection was created (since deleted).' }).first().waitFor();
      await page.reload();
      await page.locator('.notifications li').filter({ hasText: 'A collection was created (since deleted).' }).first().waitFor();
      expect(asked).toEqual([404]);
    } finally {
      page.off('response', onResponse);
      await page.unroute('**/api/notifications');
    }
  });

  it('shows the signed-in state with a sign-out button on the sign-in page while signed in', async () => {
    await signIn();
    await page.goto('/auth/login');
    await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
    expect(await page.getByLabel('Password').count()).toBe(0);
    expect(await page.locator('main').getByText(user.email).count()).toBe(1);
    await page.locator('main').getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Password').waitFor();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  });

  it('gives a signed-out deep link to a private page its heading and tab title', async () => {
    await context.clearCookies();
    await page.goto('/profile');
    await page.getByRole('heading', { level: 1, name: 'Your profile' }).waitFor();
    expect(await page.title()).toBe('Your profile · Card Library');
    await page.locator('main a[href="/auth/login?next=%2Fprofile"]').waitFor();
  });
});
