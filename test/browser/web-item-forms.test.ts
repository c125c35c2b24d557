/**
 * The forms that hold one item's state (a collection's settings, a card's edit form) as a person moves from one item
 * to another without reloading: in-app links, and the browser's history going straight from one item's page to
 * another's (history.go(-n), what a long press on Back offers). Nothing typed, read or under way for one item may reach
 * the other: the other's page shows its own fields, its save goes to it with its own version (If-Match), and a save or
 * deletion of the first that ends after the person moved on neither takes them away from where they are now nor
 * throws away what they typed there.
 */
import type { BrowserContext, Dialog, Page, Request, Route } from 'playwright-core';
import { Mailbox } from '../support/mailbox';
import { signUp, type TestUser } from '../support/accounts';
import type { RunningSystem } from '../support/service';
import { chromiumForSuite } from './support/chromium';
import { eventually as eventuallyTrue, startBrowserSystem, signInBrowser, type BrowserSystem } from './support/browser-system';

const { describeInBrowser, executablePath } = chromiumForSuite();

jest.setTimeout(150_000);

const eventually = (attempt: () => Promise<boolean>, what: string) => eventuallyTrue(attempt, 30_000, what, 250);

let system: RunningSystem;
let running: BrowserSystem | undefined;
let context: BrowserContext;
let page: Page;
let owner: TestUser;
const mailbox = new Mailbox();
const pageProblems: string[] = [];

/** A text of its own (no near copy of another test's card, which would be kept as a duplicate of it). */
const uniqueText = (words: string) => `${words} ${Array.from({ length: 75 }, (_, i) => `w${Math.random().toString(36).slice(2, 8)}${i}`).join(' ')}`;

async function newCard(words: string, link: string): Promise<string> {
  const created = await owner.client.post('/api/card', { card_html: `<p>${uniqueText(words)}</p>`, link, private: false, tag_set: [] });
  expect(created.status).toBe(200);
  return created.json.card_metadata.id as string;
}

async function newCollection(name: string, description: string): Promise<string> {
  const res = await owner.client.post('/api/card_collection', { name, description, is_public: true });
  expect(res.status).toBe(204);
  return /([0-9a-f-]{36})$/.exec(res.headers.get('location') ?? '')![1]!;
}

const storedCollection = async (id: string) => (await owner.client.get(`/api/card_collection/${id}/1`)).json.collection as { name: string; description: string };
const collectionVersion = async (id: string) => (await owner.client.get(`/api/card_collection/${id}/1`)).headers.get('etag');
const storedCard = async (id: string) => (await owner.client.get(`/api/card/${id}`)).json as { content: string; link: string };
const cardVersion = async (id: string) => (await owner.client.get(`/api/card/${id}`)).headers.get('etag');

/** Goes `steps` entries back (negative) or forward in the tab's history in one move, as the Back button's list does. */
const historyGo = (steps: number) => page.evaluate(`history.go(${steps})`);

/** Until the page has run what a finished request set off: its promise chain, then two frames. */
const settled = () => page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(resolve, 0))))');

/** Holds the page's next request matching `method` and `path` until the returned release() lets it go on. */
async function holdNext(method: string, path: string): Promise<{ held: Promise<Request>; release(): Promise<void>; stop(): Promise<void> }> {
  let route: Route | undefined;
  let seen: (r: Request) => void;
  const held = new Promise<Request>((resolve) => (seen = resolve));
  const handler = async (r: Route) => {
    if (r.request().method() !== method || route) return r.fallback();
    route = r;
    seen(r.request());
  };
  await page.route(`**${path}`, handler);
  return {
    held,
    release: async () => {
      await route!.continue();
    },
    stop: () => page.unroute(`**${path}`, handler),
  };
}

const acceptDialogs = (d: Dialog) => void d.accept();

describeInBrowser('forms of one item, as the person moves on to another (headless Chromium)', () => {
  beforeAll(async () => {
    running = await startBrowserSystem({ mailbox, executablePath, label: 'web-item-forms', pageProblems });
    ({ system, context, page } = running);
    owner = await signUp(system.baseUrl, mailbox, 'web-item-forms');
    expect((await owner.client.put('/api/user', { username: 'item_forms', website: null, visible_email: false })).status).toBe(200);
    await signInBrowser(context, system.baseUrl, owner);
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
  });

  afterEach(async () => {
    page.off('dialog', acceptDialogs);
    expect(pageProblems).toEqual([]);
  });

  it("a collection's settings reached straight from another's through the history show its own fields, and its save writes it with its own version", async () => {
    const stamp = Date.now();
    const a = { id: await newCollection(`Drumlins ${stamp}`, 'Hills shaped by ice'), name: `Drumlins ${stamp}` };
    const b = { id: await newCollection(`Tarns ${stamp}`, 'Lakes in cirques'), name: `Tarns ${stamp}` };
    // History: B, the list, A (in-app links).
    await page.goto(`/collection/${b.id}`);
    await page.getByRole('heading', { name: b.name }).waitFor();
    await page.getByRole('link', { name: 'Collections', exact: true }).click();
    await page.locator(`a[href="/collection/${a.id}"]`).click();
    await page.getByRole('heading', { name: a.name }).waitFor();
    // A renamed here (saved, "Saved." shown), then typed in again and left unsaved.
    await page.getByText('Rename, share or delete').click();
    const nameField = page.getByLabel('Name', { exact: true });
    const descriptionField = page.getByLabel('Description', { exact: true });
    await nameField.fill(`${a.name}, renamed`);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    await nameField.fill(`${a.name}, typed and not saved`);
    await descriptionField.fill('Typed for the drumlins, not saved');

    // Straight back to B.
    await historyGo(-2);
    await page.getByRole('heading', { name: b.name }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/collection/${b.id}`);
    if (!(await nameField.isVisible())) await page.getByText('Rename, share or delete').click();
    expect(await nameField.inputValue()).toBe(b.name);
    expect(await descriptionField.inputValue()).toBe('Lakes in cirques');
    expect(await page.getByText('Saved.', { exact: true }).count()).toBe(0);

    // B's save goes to B, on B's version, and changes only what was typed for B.
    const bVersion = await collectionVersion(b.id);
    const update = page.waitForRequest((r) => r.method() === 'PUT' && new URL(r.url()).pathname === '/api/card_collection');
    await descriptionField.fill('Small lakes in the bowls of cirques');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const sent = await update;
    await page.getByText('Saved.', { exact: true }).waitFor();
    expect(sent.postDataJSON()).toEqual({ collection_id: b.id, description: 'Small lakes in the bowls of cirques' });
    expect(sent.headers()['if-match']).toBe(bVersion);
    expect(await storedCollection(b.id)).toMatchObject({ name: b.name, description: 'Small lakes in the bowls of cirques' });
    expect(await storedCollection(a.id)).toMatchObject({ name: `${a.name}, renamed`, description: 'Hills shaped by ice' });

    // Forward to A: A's page reads A again (its saved name; what was typed there unsaved is not kept).
    await historyGo(2);
    await page.getByRole('heading', { name: `${a.name}, renamed` }).waitFor();
    if (!(await nameField.isVisible())) await page.getByText('Rename, share or delete').click();
    expect(await nameField.inputValue()).toBe(`${a.name}, renamed`);
    expect(await descriptionField.inputValue()).toBe('Hills shaped by ice');
  });

  it("a card's edit form reached straight from another card's through the history shows that card, and its save changes that card only, on its version", async () => {
    const x = await newCard('Moraines are ridges of rock and soil a glacier pushed ahead of it.', 'https://example.com/moraines');
    const y = await newCard('Eskers are winding ridges of sand laid by rivers under the ice.', 'https://example.com/eskers');
    const text = page.locator('#card-text[contenteditable]');
    const link = page.getByLabel('Source link');
    // History: the user page, Y, Y's edit form, the user page, X, X's edit form (in-app links).
    await page.goto(`/user/${owner.id}`);
    await page.locator(`a[href="/card/${y}"]`).first().click();
    await page.getByRole('link', { name: 'Edit card' }).click();
    await text.waitFor();
    await page.getByRole('link', { name: 'My cards' }).click();
    await page.locator(`a[href="/card/${x}"]`).first().click();
    await page.getByRole('link', { name: 'Edit card' }).click();
    await text.waitFor();
    await eventually(async () => (await text.textContent())?.startsWith('Moraines') === true, "X's text in the form");
    await link.fill('https://example.com/moraines-typed');

    // Straight back to Y's form: leaving X's changes is asked first, then Y's own fields are shown.
    page.on('dialog', acceptDialogs);
    await historyGo(-3);
    await page.waitForURL((url) => url.pathname === `/card/${y}/edit`);
    await eventually(async () => (await text.textContent())?.startsWith('Eskers') === true, "Y's text in the form");
    expect(await link.inputValue()).toBe('https://example.com/eskers');

    const yVersion = await cardVersion(y);
    const update = page.waitForRequest((r) => r.method() === 'PUT' && new URL(r.url()).pathname === '/api/card/update');
    await link.fill('https://example.com/eskers-new');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const sent = await update;
    await page.waitForURL((url) => url.pathname === `/card/${y}`);
    expect(sent.postDataJSON()).toEqual({ card_uuid: y, link: 'https://example.com/eskers-new' });
    expect(sent.headers()['if-match']).toBe(yVersion);
    expect((await storedCard(y)).link).toBe('https://example.com/eskers-new');
    expect((await storedCard(y)).content.startsWith('Eskers')).toBe(true);
    expect((await storedCard(x)).link).toBe('https://example.com/moraines');
  });

  it("a card's save that ends after the person went on to another card's form leaves them there with what they typed", async () => {
    const x = await newCard('Drumlins are smooth hills shaped like a spoon turned over by the moving ice.', 'https://example.com/drumlins');
    const y = await newCard('Kettles are hollows left where buried blocks of ice melted away.', 'https://example.com/kettles');
    const text = page.locator('#card-text[contenteditable]');
    const link = page.getByLabel('Source link');
    await page.goto(`/user/${owner.id}`);
    await page.locator(`a[href="/card/${y}"]`).first().click();
    await page.getByRole('link', { name: 'Edit card' }).click();
    await text.waitFor();
    await page.getByRole('link', { name: 'My cards' }).click();
    await page.locator(`a[href="/card/${x}"]`).first().click();
    await page.getByRole('link', { name: 'Edit card' }).click();
    await text.waitFor();
    await eventually(async () => (await text.textContent())?.startsWith('Drumlins') === true, "X's text in the form");

    // X's save is sent and its answer held (a slow network); meanwhile the person goes back to Y's form and types.
    const hold = await holdNext('PUT', '/api/card/update');
    try {
      await link.fill('https://example.com/drumlins-new');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await hold.held;
      page.on('dialog', acceptDialogs);
      await historyGo(-3);
      await page.waitForURL((url) => url.pathname === `/card/${y}/edit`);
      await eventually(async () => (await text.textContent())?.startsWith('Kettles') === true, "Y's text in the form");
      await link.fill('https://example.com/kettles-typed');
      const answered = page.waitForResponse((r) => r.request().method() === 'PUT' && new URL(r.url()).pathname === '/api/card/update');
      await hold.release();
      await answered;
    } finally {
      await hold.stop();
    }
    await eventually(async () => (await storedCard(x)).link === 'https://example.com/drumlins-new', "X's save stored");
    await settled();
    // Before, X's save opened X's page when it ended (forced past Y's unsaved changes, in place of Y's form).
    expect(new URL(page.url()).pathname).toBe(`/card/${y}/edit`);
    expect(await link.inputValue()).toBe('https://example.com/kettles-typed');
    expect((await storedCard(y)).link).toBe('https://example.com/kettles');
  });

  it("a collection's deletion that ends after the person went on to another collection leaves them there with what they typed", async () => {
    const stamp = Date.now();
    const a = { id: await newCollection(`Cirques ${stamp}`, ''), name: `Cirques ${stamp}` };
    const b = { id: await newCollection(`Aretes ${stamp}`, ''), name: `Aretes ${stamp}` };
    await page.goto(`/collection/${b.id}`);
    await page.getByRole('heading', { name: b.name }).waitFor();
    await page.getByRole('link', { name: 'Collections', exact: true }).click();
    await page.locator(`a[href="/collection/${a.id}"]`).click();
    await page.getByRole('heading', { name: a.name }).waitFor();

    const hold = await holdNext('DELETE', '/api/card_collection');
    const nameField = page.getByLabel('Name', { exact: true });
    try {
      page.on('dialog', acceptDialogs);
      await page.getByText('Rename, share or delete').click();
      await page.getByRole('button', { name: 'Delete collection' }).click();
      await hold.held;
      await historyGo(-2);
      await page.getByRole('heading', { name: b.name }).waitFor();
      if (!(await nameField.isVisible())) await page.getByText('Rename, share or delete').click();
      await nameField.fill(`${b.name}, typed`);
      const answered = page.waitForResponse((r) => r.request().method() === 'DELETE' && new URL(r.url()).pathname === '/api/card_collection');
      await hold.release();
      await answered;
    } finally {
      await hold.stop();
    }
    await eventually(async () => (await owner.client.get(`/api/card_collection/${a.id}/1`)).status === 404, 'A deleted');
    await settled();
    // Before, A's deletion put the collections list in place of B's page when it ended, and B's typed name was gone.
    expect(new URL(page.url()).pathname).toBe(`/collection/${b.id}`);
    expect(await nameField.inputValue()).toBe(`${b.name}, typed`);
  });

  it("a new card created after the person went back to another card's form leaves them there with what they typed", async () => {
    const y = await newCard('Cirques are bowls carved by ice at the head of a mountain valley.', 'https://example.com/cirques');
    const text = page.locator('#card-text[contenteditable]');
    const link = page.getByLabel('Source link');
    await page.goto(`/card/${y}/edit`);
    await eventually(async () => (await text.textContent())?.startsWith('Cirques') === true, "Y's text in the form");
    await page.getByRole('link', { name: 'New card' }).click();
    await page.getByRole('heading', { name: 'New card' }).waitFor();
    await page.getByLabel('Card text').fill(uniqueText('Aretes are thin ridges of rock left between two glaciers.'));
    await link.fill('https://example.com/aretes');

    const hold = await holdNext('POST', '/api/card');
    try {
      await page.getByRole('button', { name: 'Create card' }).click();
      const created = await hold.held;
      page.on('dialog', acceptDialogs);
      await historyGo(-1);
      await page.waitForURL((url) => url.pathname === `/card/${y}/edit`);
      await eventually(async () => (await text.textContent())?.startsWith('Cirques') === true, "Y's text in the form");
      await link.fill('https://example.com/cirques-typed');
      const answered = page.waitForResponse((r) => r.request() === created);
      await hold.release();
      expect((await answered).status()).toBe(200);
    } finally {
      await hold.stop();
    }
    await settled();
    // Before, the new card's page replaced Y's form when the creation ended (forced past Y's unsaved change).
    expect(new URL(page.url()).pathname).toBe(`/card/${y}/edit`);
    expect(await link.inputValue()).toBe('https://example.com/cirques-typed');
  });

  it("a card's deletion that ends after the person went on to another card's form leaves them there with what they typed", async () => {
    const x = await newCard('Striations are scratches left on bedrock by stones dragged under a glacier.', 'https://example.com/striations');
    const y = await newCard('Erratics are boulders a glacier carried far from the rock they broke from.', 'https://example.com/erratics');
    const text = page.locator('#card-text[contenteditable]');
    const link = page.getByLabel('Source link');
    // History: Y's edit form, the user page, X's page.
    await page.goto(`/card/${y}/edit`);
    await eventually(async () => (await text.textContent())?.startsWith('Erratics') === true, "Y's text in the form");
    await page.getByRole('link', { name: 'My cards' }).click();
    await page.locator(`a[href="/card/${x}"]`).first().click();
    await page.getByRole('button', { name: 'Delete card' }).waitFor();

    const hold = await holdNext('DELETE', `/api/card/${x}`);
    try {
      page.on('dialog', acceptDialogs);
      await page.getByRole('button', { name: 'Delete card' }).click();
      const deleting = await hold.held;
      await historyGo(-2);
      await page.waitForURL((url) => url.pathname === `/card/${y}/edit`);
      await eventually(async () => (await text.textContent())?.startsWith('Erratics') === true, "Y's text in the form");
      await link.fill('https://example.com/erratics-typed');
      const answered = page.waitForResponse((r) => r.request() === deleting);
      await hold.release();
      await answered;
    } finally {
      await hold.stop();
    }
    await eventually(async () => (await owner.client.get(`/api/card/${x}`)).status === 404, 'X deleted');
    await settled();
    // Before, the user page replaced Y's form when X's deletion ended (Y's unsaved change gone after an unrelated
    // "Discard your changes to this card?").
    expect(new URL(page.url()).pathname).toBe(`/card/${y}/edit`);
    expect(await link.inputValue()).toBe('https://example.com/erratics-typed');
  });

  it('a collection created after the person went back to another collection leaves them there with what they typed', async () => {
    const stamp = Date.now();
    const b = { id: await newCollection(`Fjords ${stamp}`, ''), name: `Fjords ${stamp}` };
    await page.goto(`/collection/${b.id}`);
    await page.getByRole('heading', { name: b.name }).waitFor();
    await page.getByRole('link', { name: 'Collections', exact: true }).click();
    await page.getByRole('heading', { name: 'Your collections' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill(`Hanging valleys ${stamp}`);

    const hold = await holdNext('POST', '/api/card_collection');
    const nameField = page.getByLabel('Name', { exact: true });
    try {
      await page.getByRole('button', { name: 'Create collection' }).click();
      const creating = await hold.held;
      await historyGo(-1);
      await page.getByRole('heading', { name: b.name }).waitFor();
      await page.getByText('Rename, share or delete').click();
      await nameField.fill(`${b.name}, typed`);
      const answered = page.waitForResponse((r) => r.request() === creating);
      await hold.release();
      expect((await answered).status()).toBe(204);
    } finally {
      await hold.stop();
    }
    await settled();
    // Before, the new collection's page replaced B's when the creation ended, and B's typed name was gone.
    expect(new URL(page.url()).pathname).toBe(`/collection/${b.id}`);
    expect(await nameField.inputValue()).toBe(`${b.name}, typed`);
  });
});
