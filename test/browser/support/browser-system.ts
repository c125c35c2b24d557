import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { testTempDir } from '../../support/cleanup';
import type { Mailbox } from '../../support/mailbox';
import { freePort, startSystem, type RunningSystem } from '../../support/service';
import { CHROMIUM_ARGS } from './chromium';

const ROOT = resolve(__dirname, '../../..');

/** What a browser test file runs against: the whole system serving the built web app, and one Chromium page on it. */
export interface BrowserSystem {
  system: RunningSystem;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Closes the browser, then the system, then the mailbox. */
  stop(): Promise<void>;
}

/**
 * Builds the web app when its sources changed, starts `mailbox` and the all-in-one system on a free port (mail to the
 * mailbox, cookies over plain HTTP, a data directory of its own named after `label`, plus `env`), and opens a 1200×900
 * page on it. With `pageProblems`, script errors and Content Security Policy refusals on the page are pushed there.
 */
export async function startBrowserSystem(options: {
  mailbox: Mailbox;
  executablePath: string;
  label: string;
  env?: Record<string, string>;
  pageProblems?: string[];
}): Promise<BrowserSystem> {
  const build = spawnSync(process.execPath, [join(ROOT, 'web/scripts/ensure-build.mjs')], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('web app build failed');
  const { mailbox } = options;
  await mailbox.start();
  const port = await freePort();
  const system = await startSystem({
    // Removed when the test file ends (stop() keeps a data directory it was given).
    dataDir: testTempDir(`cards-${options.label}-`),
    env: {
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      COOKIE_SECURE: 'false',
      SMTP_URL: mailbox.url,
      ...options.env,
    },
  });
  let browser: Browser | undefined;
  let context: BrowserContext;
  let page: Page;
  try {
    browser = await chromium.launch({ executablePath: options.executablePath, args: CHROMIUM_ARGS });
    context = await browser.newContext({ baseURL: system.baseUrl, viewport: { width: 1200, height: 900 } });
    page = await context.newPage();
  } catch (err) {
    // The file's afterAll has nothing to stop when this throws: leave no system or mailbox running.
    await browser?.close();
    await system.stop();
    await mailbox.stop();
    throw err;
  }
  const opened = browser;
  const problems = options.pageProblems;
  if (problems) {
    page.on('pageerror', (err) => problems.push(`script error: ${err.message}`));
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) problems.push(`CSP: ${msg.text()}`);
    });
  }
  return {
    system,
    browser: opened,
    context,
    page,
    async stop() {
      await opened.close();
      await system.stop();
      await mailbox.stop();
    },
  };
}

/** Asks `attempt` every `everyMs` until it answers true; throws naming `what` after `timeoutMs`. */
export async function eventually(attempt: () => Promise<boolean>, timeoutMs = 60_000, what = 'condition', everyMs = 750): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await attempt()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Puts the caret at the end of a ProseMirror editor, as Control+End does, and waits until it stays there: ProseMirror
 * settles the selection of a click or a focus a little later, and on a busy machine that came after the key and put the
 * caret back (CI: the new paragraph went in the middle of the last word, or before the first heading). The key is pressed
 * again until the selection, two frames later, is at the end.
 */
export async function caretToEnd(page: Page, editor: Locator): Promise<void> {
  await editor.focus();
  await eventually(
    async () => {
      await page.keyboard.press('Control+End');
      await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(resolve, 0))))');
      return page.evaluate<boolean>(`(() => {
        const editor = document.activeElement, selection = getSelection();
        if (!editor || !selection || !selection.isCollapsed || !editor.contains(selection.focusNode)) return false;
        const after = document.createRange();
        after.selectNodeContents(editor);
        after.setStart(selection.focusNode, selection.focusOffset);
        return after.toString() === '';
      })()`);
    },
    10_000,
    'the caret at the end of the editor',
    100,
  );
}

/** Signs the browser in as `who` with a fresh session (a login through the API), whatever cookie it had before. */
export async function signInBrowser(context: BrowserContext, baseUrl: string, who: { email: string; password: string }): Promise<void> {
  const login = await fetch(`${baseUrl}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: who.email, password: who.password }) });
  const pair = login.headers.getSetCookie().map((c) => c.split(';')[0]!).find((c) => c.startsWith('ai-editor='))!;
  await context.clearCookies();
  await context.addCookies([{ name: 'ai-editor', value: pair.slice('ai-editor='.length), url: baseUrl }]);
}
