import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiClient, type ApiResponse } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';

const FIXTURES = join(__dirname, '../fixtures/documents');
const MAX_FILE_BYTES = 2 * 1024 * 1024;
const MIME = {
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  doc: 'application/msword',
  odt: 'application/vnd.oasis.opendocument.text',
  pdf: 'application/pdf',
} as const;

const normalized = (text: string) => text.replace(/\s+/g, ' ').trim();
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const b64url = (bytes: Buffer) => bytes.toString('base64url');

// Mid-rotation of FILES_INTERNAL_TOKEN (docs/deploy.md): files accepts the new token and, for a while, the previous one.
const INTERNAL_TOKEN = 'e2e-internal-token-0123456789';
const PREVIOUS_INTERNAL_TOKEN = 'e2e-previous-internal-token-0123456789';

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  await mailbox.start();
  // With an internal token, so the gateway -> files download path is exercised with it.
  system = await startSystem({ env: { SMTP_URL: mailbox.url, MAX_FILE_BYTES: String(MAX_FILE_BYTES), FILES_INTERNAL_TOKEN: INTERNAL_TOKEN, FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: PREVIOUS_INTERNAL_TOKEN } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'alice'), signUp(system.baseUrl, mailbox, 'bob')]);
}, 120_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

async function upload(user: TestUser, name: string, body: Record<string, unknown> = {}): Promise<ApiResponse> {
  const ext = name.split('.').pop() as keyof typeof MIME;
  return user.client.post('/api/file', { base64_docx_file: b64url(fixture(name)), file_name: name, file_mime_type: MIME[ext], private: false, ...body });
}

async function waitUntil<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function ingested(user: TestUser, fileId: string): Promise<any> {
  return waitUntil(`ingestion of ${fileId}`, async () => {
    const res = await user.client.get(`/api/file/${fileId}`);
    return res.json?.ingestion_status !== 'pending' ? res.json : undefined;
  });
}

async function cardsOfFile(user: TestUser, fileId: string): Promise<any[]> {
  const res = await user.client.get(`/api/user/${user.id}/1`);
  expect(res.status).toBe(200);
  return (res.json.cards as any[]).filter((c) => c.file_id === fileId);
}

interface Expected {
  fixture: string;
  tags: string[] | string;
  cards: { title: string | null; link: string; starts: string }[];
}

const EXPECTED: Expected[] = [
  {
    fixture: 'energy.docx',
    tags: ['energy', 'docx'],
    cards: [
      { title: 'Solar Panels on Village Rooftops', link: 'https://example.com/energy/solar-primer', starts: 'Solar Panels on Village Rooftops Photovoltaic panels convert' },
      { title: 'Wind Turbines and Gearboxes', link: 'https://example.com/energy/wind-maintenance', starts: 'Wind Turbines and Gearboxes Small wind turbines suit' },
      { title: 'Pumped Hydro Storage', link: 'https://example.net/energy/pumped-hydro', starts: 'Pumped Hydro Storage Pumped hydro storage moves water' },
    ],
  },
  {
    fixture: 'marine.odt',
    tags: 'marine, odt',
    cards: [
      { title: 'Coral Reef Bleaching', link: 'https://example.com/marine/reef-protocol', starts: 'Coral Reef Bleaching Reef building corals' },
      { title: 'Kelp Forests', link: 'https://example.com/marine/kelp-dives', starts: 'Kelp Forests Giant kelp grows' },
      { title: 'Plankton Sampling', link: 'https://example.net/marine/plankton-sheet', starts: 'Plankton Sampling Plankton nets with a fine mesh' },
    ],
  },
  {
    // .doc: its Heading-styled paragraphs are headings (the paragraph styles from its style sheet), so the document is
    // split by section as a .docx is; the short "Aside" section makes no card.
    fixture: 'history.doc',
    tags: ['history'],
    cards: [
      { title: 'Charters and Fairs', link: 'https://example.com/history/charter-rolls', starts: 'Charters and Fairs Many medieval towns owed' },
      { title: 'Guilds and Apprentices', link: 'https://example.com/history/guild-ordinances', starts: 'Guilds and Apprentices Craft guilds regulated' },
      { title: 'Plague and Recovery', link: '', starts: 'Plague and Recovery The Black Death reached' },
      { title: 'Weights and Measures', link: '', starts: 'Weights and Measures Market officials kept' },
      { title: 'Bridges and Tolls', link: 'https://example.net/history/bridges', starts: 'Bridges and Tolls Stone bridges replaced ferries' },
    ],
  },
  {
    fixture: 'coffee.pdf',
    tags: 'coffee',
    cards: [
      { title: null, link: 'https://example.com/coffee/shade-guide', starts: 'Shade Grown Plantations Coffee shrubs evolved' },
      { title: null, link: 'https://example.net/coffee/rust-alerts', starts: 'Leaf Rust Coffee leaf rust is a fungus' },
    ],
  },
];

const uploaded = new Map<string, any>();

describe('uploading each format makes the expected cards and one collection', () => {
  it.each(EXPECTED)('$fixture', async (expected) => {
    const bytes = fixture(expected.fixture);
    const res = await upload(alice, expected.fixture, { tag_set: expected.tags });
    expect(res.status).toBe(200);
    const requestTags = Array.isArray(expected.tags) ? expected.tags : expected.tags.split(',').map((t) => t.trim());
    expect(res.json).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      user_id: alice.id,
      file_name: expected.fixture,
      mime_type: MIME[expected.fixture.split('.').pop() as keyof typeof MIME],
      private: false,
      size: bytes.length,
      base64url_content: b64url(bytes),
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+$/),
      updated_at: expect.any(String),
    });
    const file = await ingested(alice, res.json.id);
    expect(file.ingestion_status).toBe('done');
    expect(file.ingestion_error).toBeNull();
    uploaded.set(expected.fixture, file);

    const cards = await cardsOfFile(alice, file.id);
    expect(cards).toHaveLength(expected.cards.length);
    for (const want of expected.cards) {
      expect(cards.map((c) => normalized(c.content).slice(0, want.starts.length))).toContain(want.starts);
      const card = cards.find((c) => normalized(c.content).startsWith(want.starts));
      expect(card).toMatchObject({ link: want.link, file_id: file.id, file_name: expected.fixture, private: false });
      const tags = (card.tag_set as string).split(',');
      expect(tags).toEqual(expect.arrayContaining([...requestTags, ...(want.title ? [want.title] : [])]));
      if (!want.title) expect(tags.sort()).toEqual([...requestTags].sort());
      const words = (card.content as string).split(/\s+/).length;
      expect(words).toBeGreaterThan(70);
      expect(words).toBeLessThanOrEqual(400);
    }
    // Short sections (under 71 words) are not cards of their own.
    expect(cards.some((c) => /^(Short Remark|Field Kit)/.test(normalized(c.content)))).toBe(false);

    // The collection is announced to the uploader with its id.
    const notification = await waitUntil('the collection created notification', async () => {
      const list = await alice.client.get('/api/notifications');
      return (list.json as any[]).find((n) => n.type === 'collection_created' && !usedNotifications.has(n.collection_uuid) && n.collection_uuid);
    });
    usedNotifications.add(notification.collection_uuid);
    collectionOf.set(file.id, notification.collection_uuid);
  });
});

const usedNotifications = new Set<string>();
const collectionOf = new Map<string, string>();

describe('the file collection', () => {
  it('is named after the file, carries file_id and holds every card of the file', async () => {
    const file = uploaded.get('marine.odt');
    expect(file).toBeDefined();
    const listing = await alice.client.get(`/api/user/collections/${alice.id}`);
    expect(listing.status).toBe(200);
    const collections = (listing.json as any[]).filter((c) => c.file_id === file.id);
    expect(collections).toHaveLength(1);
    expect(collections[0]).toMatchObject({ name: 'Collection for file marine.odt', is_public: true, author_id: alice.id });
    expect([...collectionOf.values()]).toContain(collections[0].id);
    const page = await alice.client.get(`/api/card_collection/${collections[0].id}/1`);
    expect(page.status).toBe(200);
    const ids = (page.json.bookmarks as any[]).map((b) => b.metadata[0].id).sort();
    expect(ids).toEqual((await cardsOfFile(alice, file.id)).map((c) => c.id).sort());
  });
});

describe('control characters in a document', () => {
  it('are dropped from the title tag and the link of its cards, which the cards service would refuse, so no passage is lost', async () => {
    // controls.odt: NEL (U+0085) in the first heading, DEL (U+007F) right after the URL in the second section's text.
    const res = await upload(bob, 'controls.odt', { tag_set: ['lichens'] });
    expect(res.status).toBe(200);
    const file = await ingested(bob, res.json.id);
    expect(file).toMatchObject({ ingestion_status: 'done', ingestion_error: null });
    const cards = (await cardsOfFile(bob, file.id)).map((c) => ({ starts: normalized(c.content).split(' ').slice(0, 3).join(' '), tags: (c.tag_set as string).split(',').sort(), link: c.link }));
    expect(cards.sort((a, b) => a.starts.localeCompare(b.starts))).toEqual([
      { starts: 'Crustose Lichens Crustose', tags: ['Crustose Lichens', 'lichens'], link: '' },
      { starts: 'Foliose Lichens Foliose', tags: ['Foliose Lichens', 'lichens'], link: 'https://example.org/lichens/wall-survey' },
    ]);
  });
});

describe('a paragraph longer than a card', () => {
  it('is cut into cards each carrying the links whose text it holds: the link in its last sentence goes with that sentence, <a> kept', async () => {
    // longpara.docx: one ~570-word paragraph, its only hyperlink in its last sentence.
    const res = await upload(bob, 'longpara.docx');
    expect(res.status).toBe(200);
    expect(await ingested(bob, res.json.id)).toMatchObject({ ingestion_status: 'done' });
    const cards = (await cardsOfFile(bob, res.json.id)).map((c) => ({ holdsAnchor: c.content.includes('late reference'), link: c.link, a: /<a [^>]*href="([^"]*)"[^>]*>late reference<\/a>/.exec(c.card_html)?.[1] ?? null }));
    expect(cards.sort((x, y) => Number(x.holdsAnchor) - Number(y.holdsAnchor))).toEqual([
      { holdsAnchor: false, link: '', a: null },
      { holdsAnchor: true, link: 'https://example.com/dunes/late-reference', a: 'https://example.com/dunes/late-reference' },
    ]);
  });
});

describe('reading files back', () => {
  it('GET /api/file/:id and the download route return the identical bytes', async () => {
    const file = uploaded.get('coffee.pdf');
    const bytes = fixture('coffee.pdf');
    const read = await bob.client.get(`/api/file/${file.id}`);
    expect(read.status).toBe(200);
    expect(Buffer.from(read.json.base64url_content, 'base64url').equals(bytes)).toBe(true);

    const anonymous = await fetch(`${system.baseUrl}/api/file/${file.id}/download`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers.get('content-type')).toBe('application/pdf');
    expect(anonymous.headers.get('content-disposition')).toBe(`attachment; filename="coffee.pdf"; filename*=UTF-8''coffee.pdf`);
    expect(Buffer.from(await anonymous.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('the per-user listing has no content and carries oc_file_path', async () => {
    const res = await bob.client.get(`/api/user/files/${alice.id}`);
    expect(res.status).toBe(200);
    expect(res.json.length).toBeGreaterThanOrEqual(4);
    for (const f of res.json) {
      expect(f).not.toHaveProperty('base64url_content');
      expect(typeof f.oc_file_path).toBe('string');
      expect(f.user_id).toBe(alice.id);
    }
  });

  it('a non-ASCII file name survives upload and download', async () => {
    const res = await alice.client.post('/api/file', { base64_docx_file: b64url(fixture('marine.odt')), file_name: 'Meeresbiologie – Übersicht.odt', file_mime_type: MIME.odt, private: true });
    expect(res.status).toBe(200);
    const download = await alice.client.request('GET', `/api/file/${res.json.id}/download`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toContain(`filename*=UTF-8''${encodeURIComponent('Meeresbiologie – Übersicht.odt')}`);
  });
});

describe('ranged downloads (RFC 9110 Range, If-Range) through the gateway', () => {
  let publicFile: any;
  let privateFile: any;
  const bytes = fixture('cjk.pdf');
  const size = bytes.length;

  beforeAll(async () => {
    const [shared, kept] = await Promise.all([upload(alice, 'cjk.pdf'), upload(alice, 'marine.odt', { private: true })]);
    expect([shared.status, kept.status]).toEqual([200, 200]);
    [publicFile, privateFile] = [shared.json, kept.json];
  });

  const download = (id: string, headers: Record<string, string> = {}, method = 'GET') => fetch(`${system.baseUrl}/api/file/${id}/download`, { method, headers });
  const body = async (res: Response) => Buffer.from(await res.arrayBuffer());

  it('says it takes byte ranges and names the file by a strong ETag and its Last-Modified', async () => {
    const res = await download(publicFile.id);
    expect(res.status).toBe(200);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('etag')).toMatch(/^"[^"]+"$/);
    expect(new Date(res.headers.get('last-modified')!).toUTCString()).toBe(res.headers.get('last-modified'));
    expect((await body(res)).equals(bytes)).toBe(true);
  });

  it('answers one range 206 with Content-Range and only its bytes: first, from, last, and a suffix longer than the file', async () => {
    const cases: Array<[string, number, number]> = [
      ['bytes=0-99', 0, 99],
      ['bytes=100-', 100, size - 1],
      ['bytes=-100', size - 100, size - 1],
      [`bytes=${size - 10}-${size + 500}`, size - 10, size - 1],
      [`bytes=-${size + 1000}`, 0, size - 1],
      ['bytes=0-0', 0, 0],
    ];
    for (const [range, start, end] of cases) {
      const res = await download(publicFile.id, { range });
      const got = await body(res);
      expect({ range, status: res.status, contentRange: res.headers.get('content-range'), length: res.headers.get('content-length'), same: got.equals(bytes.subarray(start, end + 1)) }).toEqual({
        range,
        status: 206,
        contentRange: `bytes ${start}-${end}/${size}`,
        length: String(end - start + 1),
        same: true,
      });
    }
  });

  it('answers a range past the end 416 with Content-Range bytes */size and a JSON message; several ranges, a malformed one or another unit get the whole file', async () => {
    for (const range of [`bytes=${size}-`, `bytes=${size + 5}-${size + 10}`, 'bytes=-0']) {
      const res = await download(publicFile.id, { range });
      expect({ range, status: res.status, contentRange: res.headers.get('content-range'), type: res.headers.get('content-type') }).toEqual({ range, status: 416, contentRange: `bytes */${size}`, type: expect.stringMatching(/^application\/json/) });
      expect(await res.json()).toEqual({ message: expect.stringContaining(`${size} bytes`) });
    }
    for (const range of ['bytes=0-1,5-9', 'bytes=5-2', 'bytes=abc', 'items=0-5']) {
      const res = await download(publicFile.id, { range });
      expect({ range, status: res.status, contentRange: res.headers.get('content-range'), same: (await body(res)).equals(bytes) }).toEqual({ range, status: 200, contentRange: null, same: true });
    }
  });

  it('If-Range: the range while the ETag or Last-Modified still names the file, else the whole file', async () => {
    const whole = await download(publicFile.id);
    await whole.arrayBuffer();
    const [etag, lastModified] = [whole.headers.get('etag')!, whole.headers.get('last-modified')!];
    for (const ifRange of [etag, lastModified]) {
      const res = await download(publicFile.id, { range: 'bytes=100-', 'if-range': ifRange });
      expect({ ifRange, status: res.status, same: (await body(res)).equals(bytes.subarray(100)) }).toEqual({ ifRange, status: 206, same: true });
    }
    for (const ifRange of ['"another-version"', `W/${etag}`, new Date(Date.parse(lastModified) - 60_000).toUTCString()]) {
      const res = await download(publicFile.id, { range: 'bytes=100-', 'if-range': ifRange });
      expect({ ifRange, status: res.status, same: (await body(res)).equals(bytes) }).toEqual({ ifRange, status: 200, same: true });
    }
  });

  it("HEAD answers the GET's head without a body (a Range on HEAD is ignored, RFC 9110 14.2)", async () => {
    const get = await download(publicFile.id);
    await get.arrayBuffer();
    for (const headers of [{}, { range: 'bytes=0-99' }] as Array<Record<string, string>>) {
      const head = await download(publicFile.id, headers, 'HEAD');
      expect(head.status).toBe(200);
      for (const name of ['accept-ranges', 'etag', 'last-modified', 'content-length', 'content-type', 'content-disposition']) expect({ name, value: head.headers.get(name) }).toEqual({ name, value: get.headers.get(name) });
      expect((await body(head)).length).toBe(0);
    }
  });

  it('If-None-Match and If-Modified-Since: 304 with the ETag and no body while the client holds the file; a private file stays 404 to others whatever they send', async () => {
    const whole = await download(publicFile.id);
    await whole.arrayBuffer();
    const [etag, lastModified] = [whole.headers.get('etag')!, whole.headers.get('last-modified')!];
    for (const headers of [{ 'if-none-match': etag }, { 'if-none-match': `W/${etag}` }, { 'if-none-match': '*' }, { 'if-modified-since': lastModified }] as Array<Record<string, string>>) {
      const res = await download(publicFile.id, headers);
      expect({ headers, status: res.status, etag: res.headers.get('etag'), bytes: (await body(res)).length }).toEqual({ headers, status: 304, etag, bytes: 0 });
    }
    // If-None-Match decides when both are sent (RFC 9110 13.2.2): another tag gets the whole file.
    const other = await download(publicFile.id, { 'if-none-match': '"another-version"', 'if-modified-since': lastModified });
    expect({ status: other.status, same: (await body(other)).equals(bytes) }).toEqual({ status: 200, same: true });
    // Someone the file is hidden from learns nothing from a condition: the same 404 as without one.
    const owners = await download(privateFile.id, { cookie: alice.client.cookie! });
    await owners.arrayBuffer();
    const privateTag = owners.headers.get('etag')!;
    for (const conditions of [{ 'if-none-match': '*' }, { 'if-none-match': privateTag }, { 'if-modified-since': new Date(Date.now() + 3_600_000).toUTCString() }] as Array<Record<string, string>>) {
      for (const reader of [{}, { cookie: bob.client.cookie! }] as Array<Record<string, string>>) {
        const res = await download(privateFile.id, { ...conditions, ...reader });
        expect({ conditions, signedIn: 'cookie' in reader, status: res.status, etag: res.headers.get('etag'), type: res.headers.get('content-type') }).toEqual({
          conditions,
          signedIn: 'cookie' in reader,
          status: 404,
          etag: null,
          type: expect.stringMatching(/^application\/json/),
        });
      }
      expect((await download(privateFile.id, { ...conditions, cookie: alice.client.cookie! })).status).toBe(304);
    }
  });

  it("a private file's range is as hidden as the whole file: 404 to others and anonymous readers, 206 to its owner", async () => {
    const range = { range: 'bytes=0-9' };
    expect((await download(privateFile.id, range)).status).toBe(404);
    expect((await download(privateFile.id, { ...range, cookie: bob.client.cookie! })).status).toBe(404);
    const owner = await download(privateFile.id, { ...range, cookie: alice.client.cookie! });
    expect(owner.status).toBe(206);
    expect((await body(owner)).equals(fixture('marine.odt').subarray(0, 10))).toBe(true);
  });
});

describe('while FILES_INTERNAL_TOKEN is rotated, no download is refused', () => {
  // The gateway and files as separate processes: a gateway pod that has not rolled yet still sends the previous token.
  let oldGateway: RunningSystem;
  let carol: TestUser;

  beforeAll(async () => {
    oldGateway = await startSystem({
      env: { SMTP_URL: mailbox.url, SYSTEM_TOPOLOGY: 'distributed', FILES_INTERNAL_TOKEN: INTERNAL_TOKEN, FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: PREVIOUS_INTERNAL_TOKEN },
      serviceEnv: { gateway: { FILES_INTERNAL_TOKEN: PREVIOUS_INTERNAL_TOKEN } },
    });
    carol = await signUp(oldGateway.baseUrl, mailbox, 'carol');
  }, 240_000);
  afterAll(() => oldGateway?.stop());

  it('a gateway still sending the previous token downloads from files that accept the new and the previous one', async () => {
    const bytes = fixture('coffee.pdf');
    const shared = await upload(carol, 'coffee.pdf');
    const kept = await upload(carol, 'coffee.pdf', { private: true });
    expect([shared.status, kept.status]).toEqual([200, 200]);
    const anonymous = await fetch(`${oldGateway.baseUrl}/api/file/${shared.json.id}/download`);
    expect(anonymous.status).toBe(200);
    expect(Buffer.from(await anonymous.arrayBuffer()).equals(bytes)).toBe(true);
    const owner = await fetch(`${oldGateway.baseUrl}/api/file/${kept.json.id}/download`, { headers: { cookie: carol.client.cookie! } });
    expect(owner.status).toBe(200);
    expect(Buffer.from(await owner.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('a gateway sending the new token downloads from the same files configuration', async () => {
    const bytes = fixture('coffee.pdf');
    const res = await upload(bob, 'coffee.pdf', { private: true });
    expect(res.status).toBe(200);
    const download = await fetch(`${system.baseUrl}/api/file/${res.json.id}/download`, { headers: { cookie: bob.client.cookie! } });
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });
});

describe('privacy', () => {
  let privateFile: any;

  beforeAll(async () => {
    const res = await upload(alice, 'energy.docx', { private: true, tag_set: 'secret' });
    expect(res.status).toBe(200);
    privateFile = res.json;
  });

  it('a private file is invisible to others and to anonymous readers', async () => {
    expect((await alice.client.get(`/api/file/${privateFile.id}`)).status).toBe(200);
    const asBob = await bob.client.get(`/api/file/${privateFile.id}`);
    expect(asBob.status).toBe(404);
    expect(asBob.json.message).toEqual(expect.any(String));
    expect((await new ApiClient(system.baseUrl).get(`/api/file/${privateFile.id}`)).status).toBe(404);
    expect((await bob.client.get(`/api/file/${privateFile.id}/download`)).status).toBe(404);
    expect((await bob.client.get(`/api/user/files/${alice.id}`)).json.map((f: any) => f.id)).not.toContain(privateFile.id);
    expect((await alice.client.get(`/api/user/files/${alice.id}`)).json.map((f: any) => f.id)).toContain(privateFile.id);
    // Someone else's private file reads as missing for changes too.
    expect((await bob.client.put('/api/file', { file_id: privateFile.id, private: false })).status).toBe(404);
    expect((await bob.client.delete(`/api/file/${privateFile.id}`)).status).toBe(404);
  });

  it('its cards are private too', async () => {
    const file = await ingested(alice, privateFile.id);
    expect(file.ingestion_status).toBe('done');
    const cards = await cardsOfFile(alice, privateFile.id);
    expect(cards.length).toBe(3);
    expect(cards.every((c) => c.private === true)).toBe(true);
    const bobView = await bob.client.get(`/api/user/${alice.id}/1`);
    expect((bobView.json.cards as any[]).some((c) => c.file_id === privateFile.id)).toBe(false);
  });

  it('the owner can publish it; others get 403 when changing a visible file', async () => {
    expect((await alice.client.put('/api/file', { file_id: privateFile.id, private: false })).status).toBe(204);
    expect((await bob.client.get(`/api/file/${privateFile.id}`)).status).toBe(200);
    const change = await bob.client.put('/api/file', { file_id: privateFile.id, private: true });
    expect(change.status).toBe(403);
    expect(change.json.message).toEqual(expect.any(String));
    expect((await bob.client.delete(`/api/file/${privateFile.id}`)).status).toBe(403);
    expect((await new ApiClient(system.baseUrl).put('/api/file', { file_id: privateFile.id, private: true })).status).toBe(401);
  });
});

describe("a file's privacy reaches its cards and its collection", () => {
  it('made private, others can read its cards through no route and no longer see its collection or its name on their cards; made public again, its cards (none a duplicate) and collection come back', async () => {
    const file = uploaded.get('history.doc');
    expect(file).toBeDefined();
    const cards = await cardsOfFile(alice, file.id);
    expect(cards.length).toBe(5);
    const collectionId = collectionOf.get(file.id);
    expect(collectionId).toBeDefined();
    const words = Array.from({ length: 80 }, () => randomUUID().slice(0, 8)).join(' ');
    const citing = await bob.client.post('/api/card', { card_html: `<p>${words}</p>`, link: '', private: false, file_uuid: file.id });
    expect(citing.status).toBe(200);
    expect(citing.json.card_metadata.file_name).toBe('history.doc');
    const anonymous = new ApiClient(system.baseUrl);
    const phrase = normalized(cards[0].content).split(' ').slice(0, 12).join(' ');

    const seenBy = async (client: ApiClient) => {
      const [reads, page, userPage, listing, fullText, semantic] = await Promise.all([
        Promise.all(cards.map((c) => client.get(`/api/card/${c.id}`))),
        client.get(`/api/card_collection/${collectionId}/1`),
        client.get(`/api/user/${alice.id}/1`),
        client.get(`/api/user/collections/${alice.id}`),
        client.post('/api/card/fulltextsearch/1', { content: phrase }),
        client.post('/api/card/search/1', { content: phrase }),
      ]);
      const found = (res: ApiResponse) => (res.json.score_cards as any[]).some((e) => e.metadata.some((c: any) => c.id === cards[0].id));
      return {
        cards: reads.map((r) => r.status),
        collection: page.status,
        onUserPage: (userPage.json.cards as any[]).some((c) => c.file_id === file.id),
        listed: (listing.json as any[]).some((c) => c.id === collectionId),
        found: found(fullText) || found(semantic),
      };
    };
    const visible = { cards: cards.map(() => 200), collection: 200, onUserPage: true, listed: true, found: true };
    const hidden = { cards: cards.map(() => 404), collection: 404, onUserPage: false, listed: false, found: false };
    const settles = async (what: string, expected: object) =>
      waitUntil(what, async () => {
        const views = await Promise.all([seenBy(bob.client), seenBy(anonymous)]);
        return views.every((v) => JSON.stringify(v) === JSON.stringify(expected)) ? views : undefined;
      });
    await settles('the public file\'s cards indexed', visible);

    expect((await alice.client.put('/api/file', { file_id: file.id, private: true })).status).toBe(204);
    await settles('the cards, the collection and the index hidden', hidden);
    for (const card of await cardsOfFile(alice, file.id)) expect(card.private).toBe(true);
    expect((await alice.client.get(`/api/card_collection/${collectionId}/1`)).json.collection.is_public).toBe(false);
    const cited = await bob.client.get(`/api/card/${citing.json.card_metadata.id}`);
    expect(cited.json).toMatchObject({ file_id: null, file_name: null });

    expect((await alice.client.put('/api/file', { file_id: file.id, private: false })).status).toBe(204);
    await settles('the cards, the collection and the index visible again', visible);
    expect((await alice.client.get(`/api/card_collection/${collectionId}/1`)).json.collection.is_public).toBe(true);
  });

  it("a private file's id and name show on its owner's public card to her alone, in every view, and to everyone once the file is public", async () => {
    const res = await upload(alice, 'short.odt', { private: true, file_name: 'secret-merger-plan.odt' });
    expect(res.status).toBe(200);
    const fileId = res.json.id;
    const words = Array.from({ length: 80 }, () => randomUUID().slice(0, 8)).join(' ');
    const created = await alice.client.post('/api/card', { card_html: `<p>${words}</p>`, link: '', private: false, file_uuid: fileId });
    expect(created.status).toBe(200);
    const cardId = created.json.card_metadata.id;
    expect(created.json.card_metadata).toMatchObject({ file_id: fileId, file_name: 'secret-merger-plan.odt' });
    const shelf = await bob.client.post('/api/card_collection', { name: `shelf ${Date.now()}`, is_public: true });
    const shelfId = /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(shelf.headers.get('location') ?? '')![1]!;
    expect((await bob.client.post(`/api/card_collection/${shelfId}`, { card_metadata_id: cardId })).status).toBe(204);
    const anonymous = new ApiClient(system.baseUrl);
    const phrase = words.split(' ').slice(0, 12).join(' ');

    /** The file fields of the card in every view a reader has of it (undefined: the view does not list it yet). */
    const fileSeenBy = async (client: ApiClient) => {
      const [read, userPage, collectionPage, fullText] = await Promise.all([
        client.get(`/api/card/${cardId}`),
        client.get(`/api/user/${alice.id}/1`),
        client.get(`/api/card_collection/${shelfId}/1`),
        client.post('/api/card/fulltextsearch/1', { content: phrase }),
      ]);
      const fields = (c: any) => (c ? JSON.stringify([c.file_id, c.file_name]) : undefined);
      return [
        fields(read.json),
        fields((userPage.json.cards as any[]).find((c) => c.id === cardId)),
        fields((collectionPage.json.bookmarks as any[]).flatMap((b) => b.metadata).find((c: any) => c.id === cardId)),
        fields((fullText.json.score_cards as any[]).flatMap((e) => e.metadata).find((c: any) => c.id === cardId)),
      ];
    };
    const everyView = (fileFields: [string | null, string | null]) => Array(4).fill(JSON.stringify(fileFields));
    const settles = (what: string, client: ApiClient, expected: string[]) =>
      waitUntil(what, async () => {
        const seen = await fileSeenBy(client);
        return JSON.stringify(seen) === JSON.stringify(expected) ? seen : undefined;
      });
    await settles('the owner sees her file on her card', alice.client, everyView([fileId, 'secret-merger-plan.odt']));
    for (const client of [bob.client, anonymous]) await settles('others see no file on it', client, everyView([null, null]));
    expect((await bob.client.get(`/api/file/${fileId}`)).status).toBe(404);

    expect((await alice.client.put('/api/file', { file_id: fileId, private: false })).status).toBe(204);
    for (const client of [bob.client, anonymous]) await settles('others see the file once it is public', client, everyView([fileId, 'secret-merger-plan.odt']));
  });

  it('made public again, gives back only the cards it hid: a card its owner made private stays private, one she published meanwhile stays public', async () => {
    const file = uploaded.get('marine.odt');
    expect(file).toBeDefined();
    const [kept, hidden, published] = await cardsOfFile(alice, file.id);
    expect([kept, hidden, published].every((c) => c?.private === false)).toBe(true);
    const setPrivate = async (card: any, value: boolean) =>
      expect((await alice.client.put('/api/card/update', { card_uuid: card.id, private: value })).status).toBe(204);
    const setFilePrivate = async (value: boolean) => expect((await alice.client.put('/api/file', { file_id: file.id, private: value })).status).toBe(204);
    const anonymous = new ApiClient(system.baseUrl);
    const statuses = async (client: ApiClient) => Promise.all([kept, hidden, published].map(async (c) => (await client.get(`/api/card/${c.id}`)).status));
    const settles = (what: string, expected: number[]) =>
      waitUntil(what, async () => {
        const seen = await Promise.all([statuses(bob.client), statuses(anonymous)]);
        return seen.every((s) => JSON.stringify(s) === JSON.stringify(expected)) ? seen : undefined;
      });

    // Alice keeps one card of the file to herself, on purpose.
    await setPrivate(kept, true);
    await settles('the card kept private by hand hidden', [404, 200, 200]);

    await setFilePrivate(true);
    await settles('the file\'s other cards hidden with it', [404, 404, 404]);
    // Her own choice while the file is private: she publishes one card again.
    await setPrivate(published, false);
    await settles('the card published by hand visible although its file is private', [404, 404, 200]);

    await setFilePrivate(false);
    await settles('the card the file hid back; the one kept private by hand still hidden', [404, 200, 200]);
    const privacy = new Map((await cardsOfFile(alice, file.id)).map((c) => [c.id, c.private]));
    expect([kept, hidden, published].map((c) => privacy.get(c.id))).toEqual([true, false, false]);
    // A second round does the same: the card kept private by hand never comes back by itself.
    await setFilePrivate(true);
    await settles('every card of the file hidden again', [404, 404, 404]);
    await setFilePrivate(false);
    await settles('the cards the file hid back again', [404, 200, 200]);
    expect((await alice.client.get(`/api/card/${kept.id}`)).json.private).toBe(true);
  }, 180_000);
});

describe('deleting a file', () => {
  it('removes record and bytes; its cards and collection stay with file fields cleared', async () => {
    const file = uploaded.get('energy.docx');
    const before = await cardsOfFile(alice, file.id);
    expect(before.length).toBe(3);
    expect((await alice.client.delete(`/api/file/${file.id}`)).status).toBe(204);
    expect((await alice.client.get(`/api/file/${file.id}`)).status).toBe(404);
    expect((await alice.client.get(`/api/file/${file.id}/download`)).status).toBe(404);
    expect((await alice.client.delete(`/api/file/${file.id}`)).status).toBe(404);

    const cards = await waitUntil('file references cleared', async () => {
      const list = await Promise.all(before.map((c) => alice.client.get(`/api/card/${c.id}`)));
      return list.every((r) => r.status === 200 && r.json.file_id === null && r.json.file_name === null) ? list : undefined;
    });
    expect(cards).toHaveLength(3);
    const collectionId = collectionOf.get(file.id);
    expect(collectionId).toBeDefined();
    const collections = await alice.client.get(`/api/user/collections/${alice.id}`);
    expect(collections.status).toBe(200);
    const kept = (collections.json as any[]).find((c) => c.id === collectionId);
    expect(kept).toBeDefined();
    expect(kept.file_id ?? null).toBeNull();
  });
});

describe('bad input', () => {
  const post = (body: Record<string, unknown>) => alice.client.post('/api/file', { file_mime_type: MIME.docx, private: false, file_name: 'x.docx', base64_docx_file: b64url(fixture('energy.docx')), ...body });
  const expect4xx = async (res: ApiResponse | Promise<ApiResponse>, status: number, message: RegExp) => {
    const r = await res;
    expect({ status: r.status, message: r.json?.message }).toEqual({ status, message: expect.stringMatching(message) });
  };

  it('refuses wrong extensions, wrong bytes, mismatched types, truncated and empty documents', async () => {
    await expect4xx(post({ file_name: 'notes.txt' }), 400, /extension/);
    await expect4xx(post({ file_name: 'noextension' }), 400, /extension/);
    await expect4xx(post({ file_name: 'coffee.docx', base64_docx_file: b64url(fixture('coffee.pdf')) }), 400, /not a \.docx/);
    await expect4xx(post({ file_name: 'energy.pdf', file_mime_type: MIME.pdf }), 400, /not a PDF/);
    await expect4xx(post({ file_name: 'energy.odt', file_mime_type: MIME.odt }), 400, /OpenDocument/);
    await expect4xx(post({ file_name: 'history.doc', file_mime_type: MIME.doc, base64_docx_file: b64url(fixture('energy.docx')) }), 400, /OLE/);
    await expect4xx(post({ base64_docx_file: b64url(fixture('template.dotx')) }), 400, /the file is a Word template \(\.dotx\), not a \.docx document/);
    await expect4xx(post({ file_name: 'marine.odt', file_mime_type: MIME.odt, base64_docx_file: b64url(fixture('template.ott')) }), 400, /the file is an OpenDocument text template \(\.ott\)/);
    await expect4xx(post({ file_mime_type: MIME.pdf }), 400, /file_mime_type/);
    const docx = fixture('energy.docx');
    await expect4xx(post({ base64_docx_file: b64url(docx.subarray(0, Math.floor(docx.length / 2))) }), 400, /corrupt or truncated/);
    const pdf = fixture('coffee.pdf');
    await expect4xx(post({ file_name: 'c.pdf', file_mime_type: MIME.pdf, base64_docx_file: b64url(pdf.subarray(0, pdf.length - 4096)) }), 400, /truncated/);
    const doc = fixture('history.doc');
    await expect4xx(post({ file_name: 'h.doc', file_mime_type: MIME.doc, base64_docx_file: b64url(doc.subarray(0, doc.length - 700)) }), 400, /truncated/);
    await expect4xx(post({ base64_docx_file: '' }), 400, /empty/);
    await expect4xx(post({ base64_docx_file: b64url(fixture('empty.docx')) }), 400, /empty/);
  });

  it('file names count code points after trimming, and refuse control characters', async () => {
    const emoji = '\u{1F600}';
    const longest = `${emoji.repeat(250)}.docx`;
    const res = await post({ file_name: `  ${longest}  ` });
    expect(res.status).toBe(200);
    expect(res.json.file_name).toBe(longest);
    const download = await alice.client.request('GET', `/api/file/${res.json.id}/download`);
    expect(download.headers.get('content-disposition')).toContain(`filename*=UTF-8''${encodeURIComponent(longest)}`);
    await expect4xx(post({ file_name: `${emoji.repeat(251)}.docx` }), 400, /file_name: .*at most 255 characters/);
    for (const name of ['a\u007fb.docx', 'a\u0085b.docx']) await expect4xx(post({ file_name: name }), 400, /file_name: must not contain control characters/);
  });

  it("the file collection's name is cut to 255 characters counted as code points, only when longer, never inside an emoji", async () => {
    const emoji = '\u{1F600}';
    // 255 characters (505 UTF-16 units): "Collection for file " + the name is 275, cut to 255; 135 (265 units) make 155, kept whole.
    const names = [`${emoji.repeat(250)}.docx`, `${emoji.repeat(130)}.docx`];
    const files = await Promise.all(names.map(async (file_name) => (await bob.client.post('/api/file', { base64_docx_file: b64url(fixture('energy.docx')), file_name, file_mime_type: MIME.docx, private: false })).json));
    for (const file of files) expect(await ingested(bob, file.id)).toMatchObject({ ingestion_status: 'done' });
    const collections = (await bob.client.get(`/api/user/collections/${bob.id}`)).json as any[];
    expect(files.map((file) => collections.find((c) => c.file_id === file.id)?.name)).toEqual([`Collection for file ${emoji.repeat(235)}`, `Collection for file ${names[1]}`]);
  });

  it('file names with a bidirectional control, a line or paragraph separator, a direction mark or a BOM are refused, naming it, and nothing is stored', async () => {
    const listed = async () => (await alice.client.get(`/api/user/files/${alice.id}`)).json.length;
    const before = await listed();
    const named: [string, RegExp][] = [
      ['notes\u20282024.docx', /file_name: must not contain U\+2028 \(line separator\)/],
      ['notes\u20292024.docx', /file_name: must not contain U\+2029 \(paragraph separator\)/],
      ['invoice\u200F2024.docx', /file_name: must not contain U\+200F \(right-to-left mark\)/],
      ['invoice\u061C2024.docx', /file_name: must not contain U\+061C \(Arabic letter mark\)/],
      ['invoice\u200E2024.docx', /file_name: must not contain U\+200E \(left-to-right mark\)/],
      ['in\uFEFFvoice.docx', /file_name: must not contain U\+FEFF \(byte order mark/],
      ['invoice\u202Excod.docx', /file_name: must not contain U\+202E \(right-to-left override\)/],
      ['invoice\u2066x.docx', /file_name: must not contain U\+2066 \(left-to-right isolate\)/],
    ];
    for (const [name, message] of named) await expect4xx(post({ file_name: name }), 400, message);
    expect(await listed()).toBe(before);
  });

  it('refuses a document with no text at upload, in every format, and stores nothing', async () => {
    const listed = async () => (await alice.client.get(`/api/user/files/${alice.id}`)).json.map((f: any) => f.id).sort();
    const before = await listed();
    // Blank, only whitespace (spaces, no-break spaces, a tab), and a PDF with no text layer (a picture, like a scan).
    for (const name of ['empty.docx', 'empty.odt', 'empty.doc', 'empty.pdf', 'whitespace.docx', 'whitespace.odt', 'scan.pdf']) {
      const ext = name.split('.').pop() as keyof typeof MIME;
      await expect4xx(post({ file_name: name, file_mime_type: MIME[ext], base64_docx_file: b64url(fixture(name)) }), 400, /the document is empty \(no text\)/);
    }
    expect(await listed()).toEqual(before);
  });

  it('refuses a .docx or .odt whose only text is a heading at upload (the ingestion makes no card of it), and stores nothing', async () => {
    const listed = async () => (await alice.client.get(`/api/user/files/${alice.id}`)).json.map((f: any) => f.id).sort();
    const before = await listed();
    for (const name of ['heading.docx', 'heading.odt']) {
      const ext = name.split('.').pop() as keyof typeof MIME;
      await expect4xx(post({ file_name: name, file_mime_type: MIME[ext], base64_docx_file: b64url(fixture(name)) }), 400, /the document has only headings, no text under them/);
    }
    expect(await listed()).toEqual(before);
  });

  it('refuses bad base64, bad fields, oversize bodies and zip bombs; requires a session', async () => {
    await expect4xx(post({ base64_docx_file: 'not*base64!' }), 400, /base64/);
    await expect4xx(post({ base64_docx_file: 'abcde' }), 400, /base64/);
    await expect4xx(post({ private: 'maybe' }), 400, /private/);
    await expect4xx(post({ file_name: 42 }), 400, /file_name/);
    await expect4xx(post({ tag_set: 7 }), 400, /tag_set/);
    await expect4xx(alice.client.post('/api/file', '{"base64_docx_file": '), 400, /JSON/);
    await expect4xx(post({ base64_docx_file: b64url(Buffer.alloc(MAX_FILE_BYTES + 1, 1)) }), 413, /limit/);
    await expect4xx(post({ base64_docx_file: 'A'.repeat(Math.ceil((MAX_FILE_BYTES * 4) / 3) + 400 * 1024) }), 413, /too large/);
    await expect4xx(post({ base64_docx_file: b64url(fixture('bomb.docx')) }), 400, /bomb/);
    await expect4xx(new ApiClient(system.baseUrl).post('/api/file', { base64_docx_file: 'AAAA', file_name: 'a.pdf', file_mime_type: MIME.pdf, private: false }), 401, /./);
    await expect4xx(alice.client.get('/api/file/not-a-uuid'), 400, /file_id/);
    await expect4xx(alice.client.get('/api/file/00000000-0000-4000-8000-000000000000'), 404, /not found/i);
    await expect4xx(alice.client.put('/api/file', { file_id: 'nope', private: true }), 400, /file_id/);
    await expect4xx(alice.client.get('/api/user/files/nope'), 400, /user_id/);
    await expect4xx(alice.client.get('/api/user/files/00000000-0000-4000-8000-000000000000'), 404, /user not found/i);
    // Nothing stored is lost by bad input.
    expect((await alice.client.get(`/api/file/${uploaded.get('marine.odt').id}`)).status).toBe(200);
  });

  it('a corrupt document that passes the type check fails ingestion visibly: no cards, no collection, logged with the file id', async () => {
    const res = await post({ file_name: 'corrupt.docx', base64_docx_file: b64url(fixture('corrupt.docx')) });
    expect(res.status).toBe(200);
    const file = await ingested(alice, res.json.id);
    expect(file.ingestion_status).toBe('failed');
    // One line a user can act on (corrupt.docx's main part ends inside a tag); the parser's own text stays in the log.
    expect(file.ingestion_error).toMatch(/^the \.docx document could not be read: .+\. It may be damaged: /);
    expect(file.ingestion_error).not.toMatch(/[\r\n\t]|xmldom|@#\[line|\bat \S+ \(/);
    expect(file.ingestion_error.length).toBeLessThanOrEqual(300);
    expect(system.logs()).toMatch(new RegExp(`"fileId":"${file.id}"[^\\n]*xmldom`));
    expect(await cardsOfFile(alice, file.id)).toHaveLength(0);
    const collections = await alice.client.get(`/api/user/collections/${alice.id}`);
    if (collections.status === 200) expect((collections.json as any[]).some((c) => c.file_id === file.id)).toBe(false);
    expect(system.logs()).toMatch(new RegExp(`"fileId":"${file.id}"[^\\n]*file ingestion failed`));
    // The service is still up.
    expect((await alice.client.get(`/api/file/${file.id}`)).status).toBe(200);
  });
});

describe("a file's collection is public exactly when the file is", () => {
  let carol: TestUser;

  beforeAll(async () => {
    carol = await signUp(system.baseUrl, mailbox, 'carol');
  }, 60_000);

  it("cannot be made public while its file is private (400 naming the rule); others never see the private file's id or name in a collection view, whichever way the file's and the collection's privacy change", async () => {
    const fileName = `secret-roadmap-${randomUUID().slice(0, 8)}.docx`;
    const res = await upload(carol, 'energy.docx', { private: true, file_name: fileName });
    expect(res.status).toBe(200);
    const fileId = res.json.id;
    expect((await ingested(carol, fileId)).ingestion_status).toBe('done');
    const ownListing = await carol.client.get(`/api/user/collections/${carol.id}`);
    const collectionId = (ownListing.json as any[]).find((c) => c.file_id === fileId)?.id;
    expect(collectionId).toBeDefined();
    const anonymous = new ApiClient(system.baseUrl);

    /** What a reader gets of the collection: the listing, its page and both collection searches, and whether any names the file. */
    const seenBy = async (client: ApiClient) => {
      const query = { content: 'solar panels on village rooftops', collection_id: collectionId };
      const [listing, page, semantic, fullText] = await Promise.all([
        client.get(`/api/user/collections/${carol.id}`),
        client.get(`/api/card_collection/${collectionId}/1`),
        client.post('/api/card_collection/search/1', query),
        client.post('/api/card_collection/fulltextsearch/1', query),
      ]);
      const everything = [listing, page, semantic, fullText].map((r) => r.text).join('\n');
      return {
        listed: (listing.json as any[]).some((c) => c.id === collectionId),
        views: [page.status, semantic.status, fullText.status],
        namesFile: everything.includes(fileId) || everything.includes(fileName),
      };
    };
    const hidden = { listed: false, views: [404, 404, 404], namesFile: false };
    const shown = { listed: true, views: [200, 200, 200], namesFile: true };
    const settles = (what: string, expected: object) =>
      waitUntil(what, async () => {
        const views = await Promise.all([seenBy(bob.client), seenBy(anonymous)]);
        return views.every((v) => JSON.stringify(v) === JSON.stringify(expected)) ? views : undefined;
      });
    const publish = (isPublic: boolean, extra: object = {}) => carol.client.put('/api/card_collection', { collection_id: collectionId, is_public: isPublic, ...extra });
    const refusedWhilePrivate = async () => {
      for (const extra of [{}, { name: 'Roadmap' }]) {
        const refused = await publish(true, extra);
        expect(refused.status).toBe(400);
        expect(refused.json.message).toMatch(/^is_public: the collection of a file is public exactly when the file is, and this collection's file is private/);
      }
      expect((await carol.client.get(`/api/card_collection/${collectionId}/1`)).json.collection).toMatchObject({ is_public: false, name: `Collection for file ${fileName}` });
      expect(await seenBy(bob.client)).toEqual(hidden);
      expect(await seenBy(anonymous)).toEqual(hidden);
    };

    // Private file: its collection cannot be published, and nobody else learns of it.
    await refusedWhilePrivate();
    // Public file: the collection is public with it, and its owner may hide it and publish it again by hand.
    expect((await carol.client.put('/api/file', { file_id: fileId, private: false })).status).toBe(204);
    await settles('the collection public with its file', shown);
    expect((await publish(false)).status).toBe(204);
    await settles('the collection hidden by its owner', hidden);
    expect((await publish(true)).status).toBe(204);
    await settles('the collection published by its owner', shown);
    // The file made private while the collection was public by hand: the collection goes private with it.
    expect((await carol.client.put('/api/file', { file_id: fileId, private: true })).status).toBe(204);
    await settles('the collection private with its file', hidden);
    await refusedWhilePrivate();
    // Public again: the collection with it.
    expect((await carol.client.put('/api/file', { file_id: fileId, private: false })).status).toBe(204);
    await settles('the collection public again with its file', shown);
  });
});
