import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { signUp, type TestUser } from '../support/accounts';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { html, uniqueText } from './cards-support';
import { eventually } from './openapi-support';

// The gateway SIGKILLed in the production topology (every service its own process) with requests in every state a
// client can leave them in, then started again:
//   - a document upload half sent (its body cut in the middle),
//   - a document upload sent whole with an Idempotency-Key, stored by the files service, its answer never read,
//   - a card creation sent whole with an Idempotency-Key, stored by the cards service, its answer never read,
//   - a client's idle keep-alive connection.
// From outside after the restart: the session still signs the user in (the client's keep-alive agent, no retry); each
// repeat with its key answers what was stored (same id), nothing twice; the half upload left no file and no object;
// the stored upload is ingested and the card found by search, once.
// Runs on whatever engines the environment selects (test/engines/run-e2e-distributed.ts); the object-store check reads
// DATA_DIR/files/objects when the files service keeps objects there.

const DOCS = join(__dirname, '../fixtures/documents');
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

let mailbox: Mailbox;
let system: RunningSystem;
let author: TestUser;
let port: number;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const raw: Socket[] = [];

/** One request on the keep-alive agent: status and parsed body. */
function viaAgent(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; socketReused: boolean }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent, headers: { cookie: author.client.cookie!, ...(data ? { 'content-type': 'application/json', 'content-length': String(data.length) } : {}), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : undefined, socketReused: req.reusedSocket });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** Opens a connection and writes a request's head and `bodyBytes` of its body (all of it by default), reading nothing back. */
async function sendRaw(path: string, body: unknown, headers: Record<string, string>, bodyBytes?: number): Promise<Socket> {
  const data = Buffer.from(JSON.stringify(body));
  const socket = connect(port, '127.0.0.1');
  raw.push(socket);
  socket.on('error', () => undefined); // reset by the kill
  await new Promise<void>((r) => socket.once('connect', () => r()));
  const head = [`POST ${path} HTTP/1.1`, `host: 127.0.0.1:${port}`, 'content-type: application/json', `content-length: ${data.length}`, `cookie: ${author.client.cookie}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
  await new Promise<void>((r, j) => socket.write(Buffer.concat([Buffer.from(head), data.subarray(0, bodyBytes ?? data.length)]), (err) => (err ? j(err) : r())));
  socket.pause(); // the answer, if any, is never read
  return socket;
}

const uploadBody = (path: string, name: string) => ({ base64_docx_file: readFileSync(path).toString('base64url'), file_name: name, file_mime_type: DOCX, private: false });

async function userFiles(): Promise<{ id: string; file_name: string; ingestion_status: string; ingestion_error: string | null }[]> {
  const res = await author.client.get(`/api/user/files/${author.id}`);
  expect(res.status).toBe(200);
  return res.json;
}

async function userCards(): Promise<{ id: string; content: string }[]> {
  const cards = new Map<string, { id: string; content: string }>();
  for (let page = 1; ; page++) {
    const res = await author.client.get(`/api/user/${author.id}/${page}`);
    expect(res.status).toBe(200);
    for (const c of res.json.cards) if (c.file_id === null) cards.set(c.id, c);
    if (page >= res.json.total_pages) break;
  }
  return [...cards.values()];
}

const halfName = `half-${randomUUID()}.docx`;
const unreadName = `unread-${randomUUID()}.docx`;
const uploadKey = randomUUID();
const cardKey = randomUUID();
const cardText = uniqueText();
const cardMarker = cardText.split(' ')[0]!;
const cardBody = { card_html: html(cardText), link: '', private: false };
let before: { files: string[]; cards: string[] };
let sessionBefore: { status: number; socketReused: boolean };
let halfClosed = false;

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, SYSTEM_TOPOLOGY: 'distributed' } });
  port = Number(new URL(system.baseUrl).port);
  author = await signUp(system.baseUrl, mailbox, 'gateway-kill');
  expect((await author.client.post('/api/file', uploadBody(join(DOCS, 'energy.docx'), 'energy.docx'))).status).toBe(200);
  for (let i = 0; i < 2; i++) expect((await author.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false })).status).toBe(200);
  before = { files: (await userFiles()).map((f) => f.id), cards: (await userCards()).map((c) => c.id) };
  sessionBefore = await viaAgent('GET', '/api/auth'); // leaves an idle keep-alive connection in the agent

  // A half-sent upload: its head and half its body.
  const half = uploadBody(join(DOCS, 'bench/book-100-pages.docx'), halfName);
  const halfSocket = await sendRaw('/api/file', half, {}, Math.floor(JSON.stringify(half).length / 2));
  halfSocket.once('close', () => (halfClosed = true));
  // An upload and a card creation sent whole with their keys, stored, their answers not read.
  await sendRaw('/api/file', uploadBody(join(DOCS, 'doc-structure.docx'), unreadName), { 'idempotency-key': uploadKey });
  await sendRaw('/api/card', cardBody, { 'idempotency-key': cardKey });
  await eventually('the unread upload stored', async () => (await userFiles()).some((f) => f.file_name === unreadName), 60_000, 50);
  await eventually('the unread card stored', async () => (await userCards()).some((c) => c.content.startsWith(cardMarker)), 60_000, 50);
  // The half upload is still waiting for its body at the kill.
  expect(halfClosed).toBe(false);

  await system.killService!('gateway');
  await system.restartService!('gateway');
}, 300_000);

afterAll(async () => {
  for (const socket of raw) socket.destroy();
  agent.destroy();
  await system?.stop();
  await mailbox?.stop();
});

describe('the gateway SIGKILLed with uploads and creations under way (distributed topology)', () => {
  it('keeps the session: the client’s keep-alive agent signs in again at once after the restart', async () => {
    expect(sessionBefore.status).toBe(200);
    const after = await viaAgent('GET', '/api/auth');
    expect({ status: after.status, email: after.json?.email }).toEqual({ status: 200, email: author.email });
    expect(halfClosed).toBe(true); // the half upload's connection ended with the gateway
  });

  it('answers a repeated card creation with the card stored before the kill, and holds it once', async () => {
    const stored = (await userCards()).filter((c) => c.content.startsWith(cardMarker));
    expect(stored).toHaveLength(1);
    const again = await viaAgent('POST', '/api/card', cardBody, { 'idempotency-key': cardKey });
    expect({ status: again.status, id: again.json?.card_metadata?.id }).toEqual({ status: 200, id: stored[0]!.id });
    const cards = await userCards();
    expect(cards.map((c) => c.id).sort()).toEqual([...before.cards, stored[0]!.id].sort());
    await eventually(
      'the card found by search',
      async () => {
        const res = await author.client.post('/api/card/fulltextsearch/1', { content: cardMarker });
        return res.status === 200 && (res.json.score_cards as any[]).flatMap((e) => e.metadata).some((c: any) => c.id === stored[0]!.id);
      },
      60_000,
      200,
    );
    const found = await author.client.post('/api/card/fulltextsearch/1', { content: cardMarker });
    expect((found.json.score_cards as any[]).flatMap((e) => e.metadata).filter((c: any) => c.id === stored[0]!.id)).toHaveLength(1);
  });

  it('answers a repeated upload with the file stored before the kill; the half-sent upload left no file and no object', async () => {
    const stored = (await userFiles()).filter((f) => f.file_name === unreadName);
    expect(stored).toHaveLength(1);
    const again = await viaAgent('POST', '/api/file', uploadBody(join(DOCS, 'doc-structure.docx'), unreadName), { 'idempotency-key': uploadKey });
    expect({ status: again.status, id: again.json?.id }).toEqual({ status: 200, id: stored[0]!.id });
    const files = await userFiles();
    expect(files.map((f) => f.file_name).sort()).toEqual(['energy.docx', unreadName].sort());
    expect(files.map((f) => f.id).sort()).toEqual([...before.files, stored[0]!.id].sort());
    await eventually('the stored upload ingested', async () => (await userFiles()).every((f) => f.ingestion_status !== 'pending'), 120_000, 250);
    expect((await userFiles()).map((f) => [f.file_name, f.ingestion_status, f.ingestion_error])).toEqual(files.map((f) => [f.file_name, 'done', null]));
    // The embedded object store: one object per file, nothing half written left behind.
    const objects = join(system.dataDir, 'files', 'objects');
    if (existsSync(objects)) {
      expect(readdirSync(objects).filter((name) => name !== '.tmp').sort()).toEqual(files.map((f) => f.id).sort());
      expect(readdirSync(join(objects, '.tmp'))).toEqual([]);
    }
  });
});
