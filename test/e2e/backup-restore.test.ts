import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { signUp, type TestUser } from '../support/accounts';
import { eventuallyDefined } from '../support/eventually';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { testTempDir } from '../support/cleanup';
import { html, uniqueText } from './cards-support';

/**
 * docs/deploy.md "Backups and restore", followed literally on the embedded default: stop the service, copy DATA_DIR
 * whole with `cp -a`, start it again, change things, then stop, put the copy in place of DATA_DIR and start. Every item
 * of the backup is back and consistent across services, nothing made after the backup shows anywhere (search
 * included), nothing is duplicated, and the restored system keeps working.
 */

const ROOT = resolve(__dirname, '../..');
const FIXTURE = join(__dirname, '../fixtures/documents/energy.docx');
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const mailbox = new Mailbox();
const root = testTempDir('cards-backup-');
const dataDir = join(root, 'data');
const backupDir = join(root, 'backup');
let system: RunningSystem | undefined;
let pages: Server;
let pagesPort: number;
const PAGE_TEXT = uniqueText(90);

beforeAll(async () => {
  await mailbox.start();
  pages = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html><body><p>${PAGE_TEXT}</p></body></html>`));
  await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
  pagesPort = (pages.address() as AddressInfo).port;
});

afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
  await new Promise((r) => pages.close(r));
  rmSync(root, { recursive: true, force: true });
});

const start = async () => (system = await startSystem({ dataDir, env: { SMTP_URL: mailbox.url, VERIFY_ALLOW_HOSTS: `127.0.0.1:${pagesPort}`, VERIFY_ALLOW_PRIVATE: 'false' } }));

function as(user: TestUser | undefined): ApiClient {
  const client = new ApiClient(system!.baseUrl);
  client.cookie = user?.client.cookie;
  return client;
}

async function createCard(user: TestUser, text: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await as(user).post('/api/card', { card_html: html(text), link: '', private: false, ...body });
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json.card_metadata.id as string;
}

async function fullText(viewer: TestUser | undefined, text: string): Promise<string[]> {
  const res = await as(viewer).post('/api/card/fulltextsearch/1', { content: text.split(' ').slice(0, 12).join(' ') });
  expect(res.status).toBe(200);
  return (res.json.score_cards as any[]).flatMap((entry) => (entry.metadata as any[]).map((card) => card.id as string));
}

const foundBy = (viewer: TestUser | undefined, text: string, cardId: string) =>
  eventuallyDefined(async () => ((await fullText(viewer, text)).includes(cardId) ? true : undefined), `search to find ${cardId}`);

async function notifications(user: TestUser): Promise<any[]> {
  const res = await as(user).get('/api/notifications');
  expect(res.status).toBe(200);
  return res.json;
}

async function collectionCards(user: TestUser, collectionId: string): Promise<string[]> {
  const res = await as(user).get(`/api/card_collection/${collectionId}/1`);
  expect(res.status).toBe(200);
  return (res.json.bookmarks as any[]).map((b) => b.metadata[0].id as string).sort();
}

async function upload(user: TestUser): Promise<any> {
  const res = await as(user).post('/api/file', { base64_docx_file: readFileSync(FIXTURE).toString('base64url'), file_name: 'energy.docx', file_mime_type: DOCX, private: false });
  expect(res.status).toBe(200);
  return eventuallyDefined(async () => {
    const file = (await as(user).get(`/api/file/${res.json.id}`)).json;
    return file?.ingestion_status === 'done' ? file : undefined;
  }, 'the ingestion', 60_000);
}

function stateOf(user: TestUser) {
  return Promise.all([as(user).get(`/api/user/${user.id}/1`), notifications(user), as(user).get('/api/card/count'), as(user).get(`/api/user/collections/${user.id}`)]).then(([page, notes, count, collections]) => ({
    cards: (page.json.cards as any[]).map((c) => ({ id: c.id, private: c.private, verification_score: c.verification_score, file_id: c.file_id })).sort((a, b) => a.id.localeCompare(b.id)),
    notifications: notes.map((n) => n.id).sort(),
    count: count.json.total_count,
    collections: (collections.json as any[]).map((c) => c.id).sort(),
  }));
}

it('a stopped copy of DATA_DIR restores every item of the backup and nothing made after it', async () => {
  await start();
  const [alice, bob] = await Promise.all([signUp(system!.baseUrl, mailbox, 'backup-alice'), signUp(system!.baseUrl, mailbox, 'backup-bob')]);
  const publicText = uniqueText();
  const privateText = uniqueText();
  const published = await createCard(alice, publicText, { link: `http://127.0.0.1:${pagesPort}/page` });
  const secret = await createCard(alice, privateText, { private: true });
  expect((await as(bob).post('/api/vote', { card_metadata_id: published, vote: true })).status).toBe(200);
  const made = await as(alice).post('/api/card_collection', { name: 'Reading', is_public: true });
  const collection = /([0-9a-f-]{36})$/.exec(made.headers.get('location') ?? '')![1]!;
  expect((await as(alice).post(`/api/card_collection/${collection}`, { card_metadata_id: published })).status).toBe(204);
  const file = await upload(alice);
  // Every card with a link (the file's cards cite theirs) has its verification, and both collections their notice.
  const linked = ((await as(alice).get(`/api/user/${alice.id}/1`)).json.cards as any[]).filter((c) => c.link).map((c) => c.id as string);
  await eventuallyDefined(async () => {
    const notes = await notifications(alice);
    const verified = linked.every((id) => notes.some((n) => n.type === 'verification' && n.card_uuid === id));
    return verified && notes.filter((n) => n.type === 'collection_created').length === 2 ? true : undefined;
  }, 'the notifications');
  await foundBy(undefined, publicText, published);
  await foundBy(alice, privateText, secret);
  const before = await stateOf(alice);
  expect(before.cards.find((c) => c.id === published)?.verification_score).toEqual(expect.any(Number));
  expect(before.cards.filter((c) => c.file_id === file.id).length).toBeGreaterThan(0);

  // Back up as the docs say: stop, copy whole, start again.
  await system!.stop();
  execFileSync('cp', ['-a', dataDir, backupDir]);
  await start();

  // Changes after the backup: a new user, a new card bookmarked, the vote withdrawn, the private card deleted, a logout.
  const carol = await signUp(system!.baseUrl, mailbox, 'backup-carol');
  const laterText = uniqueText();
  const later = await createCard(carol, laterText);
  expect((await as(alice).post(`/api/card_collection/${collection}`, { card_metadata_id: later })).status).toBe(204);
  expect((await as(bob).delete(`/api/vote/${published}`)).status).toBe(204);
  expect((await as(alice).delete(`/api/card/${secret}`)).status).toBe(204);
  await foundBy(undefined, laterText, later);
  const bobSession = bob.client.cookie;
  expect((await as(bob).delete('/api/auth')).status).toBe(204);
  expect((await as(bob).get('/api/auth')).status).toBe(401);

  // Restore as the docs say: stop, put the copy in place of DATA_DIR, start.
  await system!.stop();
  rmSync(dataDir, { recursive: true, force: true });
  execFileSync('cp', ['-a', backupDir, dataDir]);
  await start();

  // Every item of the backup is there, the same.
  expect(await stateOf(alice)).toEqual(before);
  expect((await as(alice).get('/api/auth')).status).toBe(200);
  bob.client.cookie = bobSession;
  expect((await as(bob).get('/api/auth')).status).toBe(200); // the session the backup held, as documented
  expect((await as(bob).get(`/api/card/${published}`)).json.vote_by_current_user).toBe(true);
  expect(await collectionCards(alice, collection)).toEqual([published]);
  const download = await fetch(`${system!.baseUrl}/api/file/${file.id}/download`);
  expect(download.status).toBe(200);
  expect(Buffer.from(await download.arrayBuffer()).equals(readFileSync(FIXTURE))).toBe(true);
  expect((await new ApiClient(system!.baseUrl).post('/api/auth', { email: carol.email, password: carol.password })).status).toBe(401);

  // Search finds exactly the restored cards: the backup's, not the one made after it.
  expect(await fullText(undefined, publicText)).toContain(published);
  expect(await fullText(alice, privateText)).toContain(secret);
  expect(await fullText(undefined, laterText)).not.toContain(later);
  expect((await as(alice).get(`/api/card/${later}`)).status).toBe(404);

  // The restored system keeps working: a new card is indexed and verified, and nothing old is announced again.
  const afterText = uniqueText();
  const after = await createCard(alice, afterText, { link: `http://127.0.0.1:${pagesPort}/page` });
  await foundBy(undefined, afterText, after);
  await eventuallyDefined(async () => ((await notifications(alice)).some((n) => n.type === 'verification' && n.card_uuid === after) ? true : undefined), 'the new verification notification');
  const restored = await stateOf(alice);
  expect(restored.notifications).toHaveLength(before.notifications.length + 1);
  expect(restored.collections).toEqual(before.collections);

  // The restore took Bob's logout back; ending every session as docs/deploy.md says: a new session secret.
  await system!.stop();
  rmSync(join(dataDir, 'identity', 'jwt-secret'));
  await start();
  expect((await as(bob).get('/api/auth')).status).toBe(401);
  expect((await as(alice).get('/api/auth')).status).toBe(401);
  expect((await new ApiClient(system!.baseUrl).post('/api/auth', { email: alice.email, password: alice.password })).status).toBe(204);
}, 300_000);

it('the backup command copies a running system under writes into a backup that restores every card, search hit and notification once', async () => {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(backupDir, { recursive: true, force: true });
  await start();
  const [alice, dave] = await Promise.all([signUp(system!.baseUrl, mailbox, 'online-alice'), signUp(system!.baseUrl, mailbox, 'online-dave')]);
  const made = await as(alice).post('/api/card_collection', { name: 'Busy', is_public: true });
  const collection = /([0-9a-f-]{36})$/.exec(made.headers.get('location') ?? '')![1]!;
  const file = await upload(alice);

  // Dave writes cards (each verified against a page, so search, cards and notifications all work on it) and Alice
  // bookmarks them, without a pause, while the backup runs.
  const texts = new Map<string, string>();
  let writing = true;
  const writer = (async () => {
    while (writing && texts.size < 20) {
      const text = uniqueText();
      const id = await createCard(dave, text, { link: `http://127.0.0.1:${pagesPort}/page` });
      texts.set(id, text);
      const added = await as(alice).post(`/api/card_collection/${collection}`, { card_metadata_id: id });
      // The services' own warnings and errors are the only account of a failed write here: a failure shows them.
      if (added.status !== 204) throw new Error(`a bookmark added during the backup answered ${added.status} ${added.text}\n${system!.logs().split('\n').filter((line) => /"level":(40|50|60)/.test(line)).slice(-20).join('\n')}`);
    }
  })();
  await eventuallyDefined(async () => (texts.size >= 3 ? true : undefined), 'the first cards of the writer');
  const backup = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'packages/platform/src/cli/backup.ts', backupDir], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' } });
  expect(backup.stdout).toContain(`backed up ${dataDir} to ${backupDir}`);
  expect(backup.stdout).toContain('events/events.db');
  // Every store copied through its snapshot is whole: in WAL mode, integrity_check ok.
  for (const store of ['cards/cards.db', 'events/events.db', 'files/files.db', 'identity/identity.db', 'notifications/notifications.db', 'search/index.db', 'search/verification.db']) {
    const db = new Database(join(backupDir, store), { fileMustExist: true });
    try {
      expect([store, db.pragma('journal_mode', { simple: true }), db.pragma('integrity_check', { simple: true })]).toEqual([store, 'wal', 'ok']);
    } finally {
      db.close();
    }
  }
  writing = false;
  await writer;
  const afterBackupText = uniqueText();
  const afterBackup = await createCard(dave, afterBackupText);
  await system!.stop();

  rmSync(dataDir, { recursive: true, force: true });
  execFileSync('cp', ['-a', backupDir, dataDir]);
  await start();

  const restoredCards = ((await as(dave).get(`/api/user/${dave.id}/1`)).json.cards as any[]).map((c) => c.id as string);
  expect(restoredCards).not.toContain(afterBackup);
  expect(restoredCards.length).toBeGreaterThanOrEqual(3);
  for (const id of restoredCards) expect(texts.has(id)).toBe(true);
  // Every restored card is found by search (and no other), bookmarked as it was, verified and announced to its author exactly once.
  for (const id of restoredCards) await foundBy(undefined, texts.get(id)!, id);
  for (const [id, text] of texts) if (!restoredCards.includes(id)) expect(await fullText(undefined, text)).not.toContain(id);
  expect(await fullText(undefined, afterBackupText)).not.toContain(afterBackup);
  const bookmarked = await collectionCards(alice, collection);
  for (const id of bookmarked) expect(restoredCards).toContain(id);
  const verifications = await eventuallyDefined(async () => {
    const notes = (await notifications(dave)).filter((n) => n.type === 'verification');
    return restoredCards.every((id) => notes.some((n) => n.card_uuid === id)) ? notes : undefined;
  }, 'a verification notification for every restored card');
  const laterCard = await createCard(dave, uniqueText(), { link: `http://127.0.0.1:${pagesPort}/page` });
  await eventuallyDefined(async () => ((await notifications(dave)).some((n) => n.card_uuid === laterCard) ? true : undefined), 'the notification of a card made after the restore');
  const notes = (await notifications(dave)).filter((n) => n.type === 'verification');
  expect(notes.map((n) => n.card_uuid).sort()).toEqual([...restoredCards, laterCard].sort());
  expect(verifications.length).toBe(restoredCards.length);
  const download = await fetch(`${system!.baseUrl}/api/file/${file.id}/download`);
  expect(Buffer.from(await download.arrayBuffer()).equals(readFileSync(FIXTURE))).toBe(true);
}, 300_000);
