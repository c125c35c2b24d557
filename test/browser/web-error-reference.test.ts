/**
 * A server failure's message in the web app names the request for support, in headless Chromium against the all-in-one
 * system: a 5xx answer's x-request-id (the gateway sets one on every answer) follows the message as
 * "(reference: <id>)", small and selectable; a 4xx refusal and a lost connection have none.
 */
import { randomUUID } from 'node:crypto';
import type { Page, Route } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { chromiumForSuite } from './support/chromium';
import { startBrowserSystem, type BrowserSystem } from './support/browser-system';

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(120_000);

let running: BrowserSystem | undefined;
let page: Page;
const mailbox = new Mailbox();

/** Sends the sign-in form (e-mail and password), whatever answers it. */
async function signInWith(email: string, password: string): Promise<void> {
  await page.goto('/auth/login');
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Answers the sign-in (POST /api/auth) with `answer`; everything else goes to the server. */
async function withSignInAnswer(answer: (route: Route) => Promise<void>, run: () => Promise<void>): Promise<void> {
  await page.route('**/api/auth', (route) => (route.request().method() === 'POST' ? answer(route) : route.fallback()));
  try {
    await run();
  } finally {
    await page.unroute('**/api/auth');
  }
}

describeInBrowser('a server failure’s reference in the web app’s error messages, in headless Chromium', () => {
  beforeAll(async () => {
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-error-reference' });
    ({ page } = running);
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('gives the page every answer’s x-request-id to read (same origin)', async () => {
    await page.goto('/');
    const id = await page.evaluate<string | null>("fetch('/api/auth').then((r) => r.headers.get('x-request-id'))");
    expect(id).toMatch(/\S/);
  });

  it('follows a 503’s message with its x-request-id, small and selectable', async () => {
    const id = randomUUID();
    await withSignInAnswer(
      (route) => route.fulfill({ status: 503, headers: { 'content-type': 'application/json', 'x-request-id': id }, body: JSON.stringify({ message: 'The service is unavailable; try again shortly.' }) }),
      async () => {
        await signInWith('someone@example.com', 'a password of some length');
        const alert = page.getByRole('alert').filter({ hasText: 'The service is unavailable' });
        await alert.waitFor();
        expect(await alert.textContent()).toBe(`The service is unavailable; try again shortly. (reference: ${id})`);
        const reference = alert.locator('small.reference .request-id');
        expect(await reference.textContent()).toBe(id);
        expect(await page.evaluate<string>("getComputedStyle(document.querySelector('[role=alert] .request-id')).userSelect")).toBe('all');
      },
    );
  });

  it('keeps the reference inside its message on a 360 px phone: the page does not scroll sideways and the id is all in view', async () => {
    const id = randomUUID();
    await page.setViewportSize({ width: 360, height: 640 });
    try {
      await withSignInAnswer(
        (route) => route.fulfill({ status: 503, headers: { 'content-type': 'application/json', 'x-request-id': id }, body: JSON.stringify({ message: 'The service is unavailable; try again shortly.' }) }),
        async () => {
          await signInWith('someone@example.com', 'a password of some length');
          const alert = page.getByRole('alert').filter({ hasText: id });
          await alert.waitFor();
          // Unwrapped, "(reference: <uuid>)" was one 357 px line in a 310 px box: the id's end ran past the screen.
          const [scroll, client] = await page.evaluate<[number, number]>('[document.documentElement.scrollWidth, document.documentElement.clientWidth]');
          expect(scroll).toBeLessThanOrEqual(client);
          const box = (await alert.boundingBox())!;
          const idBox = (await alert.locator('.request-id').boundingBox())!;
          expect(idBox.x + idBox.width).toBeLessThanOrEqual(box.x + box.width);
          expect(await alert.locator('.request-id').textContent()).toBe(id);
        },
      );
    } finally {
      await page.setViewportSize({ width: 1200, height: 900 });
    }
  });

  it('follows a 500 without a JSON body with its x-request-id too', async () => {
    const id = randomUUID();
    await withSignInAnswer(
      (route) => route.fulfill({ status: 500, headers: { 'content-type': 'text/plain', 'x-request-id': id }, body: 'Internal Server Error' }),
      async () => {
        await signInWith('someone@example.com', 'a password of some length');
        await page.getByRole('alert').filter({ hasText: `Request failed (500) (reference: ${id})` }).waitFor();
      },
    );
  });

  it('gives a 4xx refusal no reference, though its answer has an x-request-id', async () => {
    const id = randomUUID();
    await withSignInAnswer(
      (route) => route.fulfill({ status: 400, headers: { 'content-type': 'application/json', 'x-request-id': id }, body: JSON.stringify({ message: 'email: must be an e-mail address' }) }),
      async () => {
        await signInWith('someone@example.com', 'a password of some length');
        const alert = page.getByRole('alert').filter({ hasText: 'The e-mail address must be an e-mail address' });
        await alert.waitFor();
        expect(await alert.textContent()).toBe('The e-mail address must be an e-mail address');
      },
    );
    // The server's own refusal (a wrong password): its x-request-id is there, the message names no reference.
    const answered = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/auth' && r.request().method() === 'POST');
    await signInWith(`nobody-${randomUUID()}@example.com`, 'a wrong password of some length');
    const answer = await answered;
    expect(answer.status()).toBe(401);
    expect(answer.headers()['x-request-id']).toMatch(/\S/);
    await page.getByRole('alert').waitFor();
    expect(await page.getByText('reference:').count()).toBe(0);
  });

  it('gives a lost connection no reference (there was no answer)', async () => {
    await withSignInAnswer(
      (route) => route.abort('connectionrefused'),
      async () => {
        await signInWith('someone@example.com', 'a password of some length');
        await page.getByRole('alert').filter({ hasText: 'The server cannot be reached' }).waitFor();
        expect(await page.getByText('reference:').count()).toBe(0);
      },
    );
  });
});
