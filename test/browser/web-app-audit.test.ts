/**
 * Findings of the web app audit as a user, in headless Chromium against the all-in-one system (the same setup as
 * web-app.test.ts): a session lost while a page is open, a renamed collection's tab title, not-found pages, keyboard
 * paging, the sign-up welcome notice and the notifications page's names.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import type { RunningSystem } from '../support/service';
import { buildDocx } from './support/docx';
import { chromiumForSuite } from './support/chromium';
import { eventually, signInBrowser, startBrowserSystem, type BrowserSystem } from './support/browser-system';

/** Signs the browser in with the user's session (a fresh login, so another test's sign-out does not matter). */
const signIn = () => signInBrowser(context, system.baseUrl, user);

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(120_000);

const CARD_TEXT = Array.from({ length: 8 }, (_, i) => `Sentence ${i} about the tides of the sea, the pull of the Moon and the slow lengthening of our days.`).join(' ');

let system: RunningSystem;
let running: BrowserSystem | undefined;
let context: BrowserContext;
let page: Page;
let user: TestUser;
const mailbox = new Mailbox();

describeInBrowser('web app audit findings in headless Chromium', () => {
  beforeAll(async () => {
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-audit' });
    ({ system, context, page } = running);
    user = await signUp(system.baseUrl, mailbox, 'web-audit');
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('drops the signed-in state when an action answers 401 (session lost) and offers to sign in again', async () => {
    await signIn();
    await page.goto('/collections');
    await page.getByRole('heading', { name: 'Your collections' }).waitFor();
    await page.getByRole('link', { name: 'My cards' }).waitFor();
    await context.clearCookies();
    await page.getByLabel('Name').fill('Lost session');
    await page.getByRole('button', { name: 'Create collection' }).click();
    await page.getByRole('link', { name: 'Sign in' }).first().waitFor();
    expect(await page.getByRole('link', { name: 'My cards' }).count()).toBe(0);
    await page.getByText('Your session has ended').waitFor();
    // The offer keeps the page to come back to.
    expect(await page.locator('main a[href^="/auth/login?next="]').first().getAttribute('href')).toBe(`/auth/login?next=${encodeURIComponent('/collections')}`);
  });

  it('does not call a deliberate sign-out an ended session', async () => {
    await signIn();
    await page.goto('/profile');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in', exact: true }).waitFor();
    expect(await page.getByText('Your session has ended').count()).toBe(0);
  });

  it('names a renamed collection in the tab title', async () => {
    await signIn();
    const id = /([0-9a-f-]{36})$/.exec((await user.client.post('/api/card_collection', { name: 'Old name', description: '', is_public: true })).headers.get('location') ?? '')![1]!;
    await page.goto(`/collection/${id}`);
    await page.getByRole('heading', { name: 'Old name' }).waitFor();
    expect(await page.title()).toBe('Old name · Card Library');
    await page.getByText('Rename, share or delete').click();
    await page.getByLabel('Name', { exact: true }).fill('New name');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { name: 'New name' }).waitFor();
    await eventually(async () => (await page.title()) === 'New name · Card Library', 5_000, 'the new tab title');
  });

  it('says "not found" once on a missing card or collection', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    await page.goto(`/card/${missing}`);
    await page.getByRole('heading', { name: 'Card not found' }).waitFor();
    expect(await page.locator('main').getByText(/card not found/i).count()).toBe(1);
    await page.goto(`/collection/${missing}`);
    await page.getByRole('heading', { name: 'Collection not found' }).waitFor();
    expect(await page.locator('main').getByText(/collection not found/i).count()).toBe(1);
  });

  it('explains the verification badge in a card list without a mouse: its words are in the badge, not only its tooltip', async () => {
    await signIn();
    const created = await user.client.post('/api/card', { card_html: `<p>Badge. ${CARD_TEXT}</p>`, link: 'https://example.com/tides-badge', private: false, tag_set: [] });
    expect(created.status).toBe(200);
    const id = (created.json as { card_metadata: { id: string } }).card_metadata.id;
    await page.goto(`/user/${user.id}`);
    const badge = page.locator(`.card-summary:has(a[href="/card/${id}"]) [data-testid="verification"]`);
    await badge.waitFor();
    // Read at once (the check may finish meanwhile): the tooltip ("Not verified yet: the source page is waiting to be
    // checked.") is the badge's text too, its explanation visually hidden, so a screen reader says it without a hover.
    const [title, text, hidden] = await badge.evaluate((el) => [el.getAttribute('title'), el.textContent, el.querySelector('.visually-hidden')?.textContent ?? null]);
    expect(text).toBe(title);
    expect(hidden).toMatch(/^: the source page /);
  });

  it('keeps the keyboard on the search pager: Next onto the last page does not drop focus to the body', async () => {
    await signIn();
    const words = ['amber', 'basalt', 'cobalt', 'dune', 'ember', 'fjord', 'granite', 'harbor', 'iris', 'jasper', 'kelp', 'lagoon', 'marble'];
    for (let i = 0; i < 26; i++) {
      const text = `Zanzibarite note ${words[i % words.length]} ${words[(i * 5) % words.length]} number ${i}. ${CARD_TEXT}`.replace(/Sentence/g, `Item${i}`);
      const res = await user.client.post('/api/card', { card_html: `<p>${text}</p>`, link: '', private: false, tag_set: ['paging'] });
      expect(res.status).toBe(200);
    }
    let last = 0;
    await eventually(async () => {
      await page.goto('/?q=zanzibarite&mode=fulltext');
      await page.locator('.results, p.muted:has-text("No card matches")').first().waitFor();
      const label = await page.locator('.pager [data-pager-label]').first().textContent().catch(() => null);
      last = Number(/of (\d+)/.exec(label ?? '')?.[1] ?? 0);
      return last >= 2;
    }, 60_000, 'two pages of results');
    await page.goto(`/?q=zanzibarite&mode=fulltext&page=${last - 1}`);
    await page.getByText(`Page ${last - 1} of ${last}`).waitFor();
    // Named by their words, without the arrows (aria-hidden), which a screen reader would read as "rightwards arrow".
    expect(await page.getByRole('button', { name: 'Previous page', exact: true }).count()).toBe(1);
    await page.getByRole('button', { name: 'Next page', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.getByText(`Page ${last} of ${last}`).waitFor();
    expect(await page.getByRole('button', { name: 'Next page', exact: true }).isDisabled()).toBe(true);
    expect(await page.locator('.pager button').last().textContent()).toBe('Next page →');
    expect(await page.evaluate<string>('document.activeElement?.tagName ?? ""')).not.toBe('BODY');
    // Past the end: no "Page 99 of 2", but a way to the last page.
    await page.goto('/?q=zanzibarite&mode=fulltext&page=99');
    await page.getByText('There are no results on page 99.').waitFor();
    expect(await page.getByText('Page 99 of').count()).toBe(0);
    await page.getByRole('button', { name: `Go to the last page (${last})` }).click();
    await page.getByText(`Page ${last} of ${last}`).waitFor();
  });

  it('drops the sign-up welcome from the address once the profile is saved', async () => {
    await signIn();
    await page.goto('/profile?welcome=1');
    await page.getByText('Welcome! Your account is ready').waitFor();
    await page.getByLabel('Username').fill(`audit_${Date.now() % 100000}`);
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.getByText('Saved.').waitFor();
    expect(new URL(page.url()).search).toBe('');
    expect(await page.getByText('Welcome! Your account is ready').count()).toBe(0);
  });

  it('ties a username problem to the field (aria-invalid, aria-describedby, focus) and says in words that a name is taken', async () => {
    const other = await signUp(system.baseUrl, mailbox, 'web-audit-name');
    const taken = `Tom_${Date.now() % 100000}`;
    // The server compares names by their look (the confusable skeleton): "torn_" is "Tom_" ("rn" is "m"), and the case.
    const lookAlike = taken.replace('Tom', 'torn');
    expect((await other.client.put('/api/user', { username: taken, website: null, visible_email: true })).status).toBeLessThan(300);
    await signIn();
    await page.goto('/profile');
    const name = page.getByLabel('Username');
    await name.fill('ab');
    await page.getByRole('button', { name: 'Save profile' }).click();
    const problem = page.locator('#profile-username-problem');
    await problem.getByText(/^The username /).waitFor();
    expect(await name.getAttribute('aria-invalid')).toBe('true');
    expect((await name.getAttribute('aria-describedby'))?.split(' ')).toContain('profile-username-problem');
    expect(await page.evaluate('document.activeElement.id')).toBe('profile-username');
    // Typing again clears it.
    await name.fill(lookAlike);
    expect(await name.getAttribute('aria-invalid')).toBe('false');
    // The server's 409 ("username: already taken"), at the field and in words that say why a different name is taken.
    await page.getByRole('button', { name: 'Save profile' }).click();
    await problem
      .getByText(`The username “\u2068${lookAlike}\u2069” is already taken by someone else (names that look alike count as one: capitals, ß and ss, letters of another script that look the same, “rn” and “m”, “0” and “O”)`, { exact: false })
      .waitFor();
    expect(await name.getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByText('username: already taken').count()).toBe(0);
  });

  it('names the collection a notification is about, and a deleted one is not a link', async () => {
    await signIn();
    const upload = await user.client.post('/api/file', {
      base64_docx_file: Buffer.from(buildDocx([{ heading: 'Rivers', paragraphs: [CARD_TEXT] }])).toString('base64url'),
      file_name: 'rivers.docx',
      file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      tag_set: [],
      private: false,
    });
    expect(upload.status).toBe(200);
    let collectionId = '';
    await eventually(async () => {
      const collections = (await user.client.get(`/api/user/collections/${user.id}`)).json as { id: string; file_id?: string | null }[];
      collectionId = collections.find((c) => c.file_id)?.id ?? '';
      if (!collectionId) return false;
      const list = (await user.client.get('/api/notifications')).json as { type: string; collection_uuid?: string }[];
      return list.some((n) => n.type === 'collection_created' && n.collection_uuid === collectionId);
    }, 90_000, 'the Collection Created notification');
    const requests: string[] = [];
    page.on('request', (r) => void (r.url().includes('/api/') && requests.push(`${r.method()} ${new URL(r.url()).pathname}`)));
    await page.goto('/notifications');
    await page.locator('.notifications li').filter({ hasText: 'A collection was created' }).getByRole('link', { name: 'Collection for file rivers.docx' }).waitFor();
    // One request per collection named, none for cards the page does not name.
    expect(requests.filter((r) => r === `GET /api/card_collection/${collectionId}/1`)).toHaveLength(1);
    expect(requests.filter((r) => r.startsWith('GET /api/card_collection/')).length).toBeLessThanOrEqual(2);

    expect((await user.client.delete('/api/card_collection', { collection_id: collectionId })).status).toBe(204);
    // The deleted collection's notification goes with it (a held-over one is said, not linked: web-journey-fixes).
    await eventually(async () => {
      const list = (await user.client.get('/api/notifications')).json as { collection_uuid?: string }[];
      return !list.some((n) => n.collection_uuid === collectionId);
    }, 30_000, 'the deleted collection’s notification removed');
    await page.reload();
    await page.getByText('No notifications yet.').or(page.locator('.notifications li').first()).waitFor();
    expect(await page.locator(`.notifications a[href="/collection/${collectionId}"]`).count()).toBe(0);
    expect(await page.locator('.notifications li').filter({ hasText: 'Collection for file rivers.docx' }).count()).toBe(0);
  });
  it('polls the notifications with the last ETag: 304 keeps the list, a new notification still shows up, a sign-out drops the tag', async () => {
    await signIn();
    // A page of its own with a fake clock, so the 20-second poll runs when the test says.
    const polled = await context.newPage();
    try {
      await polled.clock.install();
      const answers: { status: number; ifNoneMatch: string | undefined }[] = [];
      const lists: Promise<{ user_read: boolean }[] | undefined>[] = [];
      polled.on('response', (r) => {
        if (r.request().method() !== 'GET' || new URL(r.url()).pathname !== '/api/notifications') return;
        answers.push({ status: r.status(), ifNoneMatch: r.request().headers()['if-none-match'] });
        lists.push(r.status() === 200 ? r.json() : Promise.resolve(undefined));
      });
      const badge = polled.getByTestId('unread-badge');
      await polled.goto('/collections');
      await eventually(async () => answers.length >= 1, 10_000, 'the first poll');
      expect(answers[0]).toEqual({ status: 200, ifNoneMatch: undefined });
      // The answer's headers come before the page has read its list and drawn the badge (0 until then): wait for the
      // badge to show that list's unread count rather than read it at once.
      const before = (await lists[0])!.filter((n) => !n.user_read).length;
      await badge.getByText(String(before), { exact: true }).waitFor({ timeout: 10_000 });

      await polled.clock.runFor(20_000);
      await eventually(async () => answers.length >= 2, 10_000, 'the second poll');
      expect(answers[1]!.status).toBe(304);
      // Weak (W/) when the list came compressed: If-None-Match compares weakly.
      expect(answers[1]!.ifNoneMatch).toMatch(/^(W\/)?"n1\./);
      expect(Number(await badge.textContent())).toBe(before);

      const beforeNew = answers.length;
      const name = `Polled ${Date.now()}`;
      expect((await user.client.post('/api/card_collection', { name, description: '', is_public: false })).status).toBe(204);
      await eventually(async () => {
        await polled.clock.runFor(20_000);
        return Number(await badge.textContent()) === before + 1;
      }, 30_000, 'the new notification on the badge');
      // The tag sent was the old one: the server answered the new list.
      expect(answers.slice(beforeNew).some((a) => a.status === 200 && a.ifNoneMatch)).toBe(true);

      // The notifications page (reached in the page, not reloaded) and its Refresh send the tag too and show the kept list.
      const seen = answers.length;
      await polled.getByRole('link', { name: /^Notifications/ }).click();
      await polled.getByTestId('unread-count').waitFor();
      await polled.getByRole('button', { name: 'Refresh' }).click();
      await eventually(async () => answers.length >= seen + 2, 10_000, 'the page read and its refresh');
      expect(answers.slice(seen).every((a) => a.status === 304 && a.ifNoneMatch)).toBe(true);
      await polled.locator('.notifications li').filter({ hasText: 'A collection was created' }).first().waitFor();
      expect(await polled.getByTestId('unread-count').textContent()).toBe(`${before + 1} unread`);

      // Signed out and in again: the first read sends no tag.
      await polled.locator('header a[href="/profile"]').first().click();
      await polled.getByRole('button', { name: 'Sign out' }).click();
      await polled.getByRole('link', { name: 'Sign in', exact: true }).waitFor();
      const afterSignOut = answers.length;
      await polled.getByRole('link', { name: 'Sign in', exact: true }).first().click();
      await polled.getByLabel('E-mail').fill(user.email);
      await polled.getByLabel('Password').fill(user.password);
      await polled.getByRole('button', { name: 'Sign in' }).click();
      await eventually(async () => answers.length > afterSignOut, 10_000, 'the poll after signing in');
      expect(answers[afterSignOut]).toEqual({ status: 200, ifNoneMatch: undefined });
    } finally {
      await polled.close();
    }
  });

  it('says when an uploaded document could not be turned into cards, on the upload page and in the file list', async () => {
    await signIn();
    await page.goto('/upload');
    // Every passage is under the 70 words a card needs: the upload is stored, and its ingestion fails.
    await page.getByLabel(/^Document/).setInputFiles({
      name: 'short-notes.docx',
      mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      buffer: buildDocx([
        { heading: 'Short one', paragraphs: ['Only a few words about the tides.'] },
        { heading: 'Short two', paragraphs: ['And a few more about the Moon.'] },
      ]),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByText('Uploaded short-notes.docx').waitFor({ timeout: 30_000 });
    const alert = page.getByRole('alert').filter({ hasText: 'The document could not be turned into cards' });
    await alert.waitFor({ timeout: 60_000 });
    expect(await alert.textContent()).toContain('no passage of more than 70 words');
    expect(await page.getByText('Turning the document into cards…').count()).toBe(0);
    const row = page.locator('.plain-list li').filter({ hasText: 'short-notes.docx' });
    await row.getByText(/turning into cards failed: the document holds no passage of more than 70 words/).waitFor();

    // A document that works ends with its collection's link, and its row says its cards were made.
    await page.getByLabel(/^Document/).setInputFiles({
      name: 'long-notes.docx',
      mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      buffer: buildDocx([{ heading: 'Tides', paragraphs: [CARD_TEXT] }]),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByRole('link', { name: 'Collection for file long-notes.docx' }).waitFor({ timeout: 90_000 });
    await page.locator('.plain-list li').filter({ hasText: 'long-notes.docx' }).getByText('cards made').waitFor();
  });

  it('checks the tags as the server does before sending, naming the tag and writing out its hidden characters', async () => {
    await signIn();
    const sent: string[] = [];
    const onRequest = (r: { method(): string; url(): string }) => void (r.method() === 'POST' && r.url().includes('/api/') && sent.push(new URL(r.url()).pathname));
    page.on('request', onRequest);
    try {
      await page.goto('/card/new');
      await page.getByLabel('Card text').fill(CARD_TEXT);
      await page.getByLabel('Source link').fill('https://example.com/tides');
      const tags = page.getByLabel('Tags (comma-separated)');
      await tags.fill('tides, moon\u202Egpj.exe');
      await page.getByText('Tags: the 2nd tag ("\u2068moon<U+202E>gpj.exe\u2069") must not contain U+202E (right-to-left override).').waitFor();
      expect(await tags.getAttribute('aria-invalid')).toBe('true');
      await tags.fill('tides, \u200B');
      await page.getByText('Tags: the 2nd tag ("\u2068<U+200B>\u2069") must contain a visible character (found only spaces and invisible characters).').waitFor();
      await page.getByRole('button', { name: 'Create card' }).click();
      await page.getByText('Please fix the marked fields.').waitFor();
      await tags.fill('tides, moon');
      expect(await tags.getAttribute('aria-invalid')).toBe('false');

      // The upload form checks its tags the same way (the files service applies the same rule).
      await page.goto('/upload');
      await page.getByLabel(/^Document/).setInputFiles({
        name: 'tagged.docx',
        mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        buffer: buildDocx([{ heading: 'Tides', paragraphs: [CARD_TEXT] }]),
      });
      const fileTags = page.getByLabel(/^Tags for the cards/);
      await fileTags.fill('\u202Eclimate');
      await page.getByText('Tags: the 1st tag ("\u2068<U+202E>climate\u2069") must not contain U+202E (right-to-left override).').waitFor();
      expect(await fileTags.getAttribute('aria-invalid')).toBe('true');
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.getByText('Please fix the tags.').waitFor();
      expect(sent).toEqual([]);
    } finally {
      page.off('request', onRequest);
    }
  });
});
