/**
 * A save refused because the server's storage is full, in headless Chromium against the all-in-one system: the web app
 * shows the server's own message ("Storage is full, try again later: nothing was saved") with the answer's reference,
 * not a generic text, and keeps what was typed, so the same save succeeds once there is room. The 503 is the gateway's
 * answer as storage-full.test.ts pins it (message, Retry-After), given by the page's route: filling the disk of a
 * shared test machine is disk-full.test.ts's business. A sign-out identity could not record (its store full) leaves the
 * profile all the same, and the page it lands on says so.
 */
import { randomUUID } from 'node:crypto';
import type { BrowserContext, Page, Route } from 'playwright-core';
import { STORAGE_FULL_MESSAGE } from '@cards/platform';
import { STORAGE_FULL_RETRY_AFTER_SECONDS } from '../../services/gateway/src/http/error-handler';
import { LOGOUT_NOT_REVOKED_MESSAGE } from '../../services/gateway/src/routes/identity-routes';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import type { RunningSystem } from '../support/service';
import { chromiumForSuite } from './support/chromium';
import { signInBrowser, startBrowserSystem, type BrowserSystem } from './support/browser-system';

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(120_000);

const CARD_TEXT = Array.from({ length: 8 }, (_, i) => `Sentence ${i} on a full disk, the writes it refuses and the reads it still answers.`).join(' ');

let system: RunningSystem;
let running: BrowserSystem | undefined;
let context: BrowserContext;
let page: Page;
let user: TestUser;
const mailbox = new Mailbox();

/** The gateway's answer to a write when the service's storage is full (error-handler.ts). */
const storageFull = (requestId: string) => (route: Route) =>
  route.fulfill({
    status: 503,
    headers: { 'content-type': 'application/json', 'retry-after': String(STORAGE_FULL_RETRY_AFTER_SECONDS), 'x-request-id': requestId },
    body: JSON.stringify({ message: STORAGE_FULL_MESSAGE }),
  });

describeInBrowser('a save refused by a full store, in headless Chromium', () => {
  beforeAll(async () => {
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-storage-full' });
    ({ system, context, page } = running);
    user = await signUp(system.baseUrl, mailbox, 'web-storage-full');
    await signInBrowser(context, system.baseUrl, user);
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('a new card: the server’s message with its reference, the text kept, and the same save goes through once there is room', async () => {
    const id = randomUUID();
    await page.goto('/card/new');
    await page.getByLabel('Card text').fill(CARD_TEXT);
    await page.route('**/api/card', (route) => (route.request().method() === 'POST' ? storageFull(id)(route) : route.fallback()));
    try {
      await page.getByRole('button', { name: 'Create card' }).click();
      const alert = page.getByRole('alert').filter({ hasText: 'Storage is full' });
      await alert.waitFor();
      expect(await alert.textContent()).toBe(`${STORAGE_FULL_MESSAGE} (reference: ${id})`);
      expect(new URL(page.url()).pathname).toBe('/card/new');
      expect(await page.getByLabel('Card text').textContent()).toContain('Sentence 7 on a full disk');
    } finally {
      await page.unroute('**/api/card');
    }
    await page.getByRole('button', { name: 'Create card' }).click();
    await page.waitForURL(/\/card\/[0-9a-f-]{36}$/);
    expect(await page.getByRole('alert').filter({ hasText: 'Storage is full' }).count()).toBe(0);
  });

  it('a vote: the server’s message, the count unchanged', async () => {
    const id = randomUUID();
    await page.route('**/api/vote', storageFull(id));
    try {
      const up = page.getByRole('button', { name: /Upvote/ });
      await up.click();
      await page.getByRole('alert').filter({ hasText: `${STORAGE_FULL_MESSAGE} (reference: ${id})` }).waitFor();
      expect(await up.getAttribute('aria-pressed')).toBe('false');
    } finally {
      await page.unroute('**/api/vote');
    }
  });

  it('a sign-out from the profile that identity could not record: the page it lands on says so, with the reference, once', async () => {
    const id = randomUUID();
    await page.goto('/profile');
    await page.getByRole('heading', { level: 1, name: 'Your profile' }).waitFor();
    // The gateway's answer when identity cannot revoke the session (identity-routes.ts): the cookie is cleared all the
    // same, and the message says the session lives on until it expires.
    await page.route('**/api/auth', async (route) => {
      if (route.request().method() !== 'DELETE') return route.fallback();
      await context.clearCookies({ name: 'ai-editor' });
      await route.fulfill({ status: 503, headers: { 'content-type': 'application/json', 'x-request-id': id }, body: JSON.stringify({ message: LOGOUT_NOT_REVOKED_MESSAGE }) });
    });
    try {
      await page.locator('main').getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL((url) => url.pathname === '/');
      await page.locator('header').getByRole('link', { name: 'Sign in' }).waitFor();
      const alert = page.getByRole('alert').filter({ hasText: LOGOUT_NOT_REVOKED_MESSAGE });
      await alert.waitFor({ timeout: 10_000 });
      expect(await alert.textContent()).toBe(`${LOGOUT_NOT_REVOKED_MESSAGE} (reference: ${id})`);
    } finally {
      await page.unroute('**/api/auth');
    }
    // Said once: the next page has it no more.
    await page.getByRole('link', { name: 'Top users' }).click();
    await page.getByRole('heading', { level: 1, name: 'Top users' }).waitFor();
    expect(await page.getByRole('alert').filter({ hasText: LOGOUT_NOT_REVOKED_MESSAGE }).count()).toBe(0);
  });
});
