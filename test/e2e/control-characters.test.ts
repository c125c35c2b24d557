import { randomUUID } from 'node:crypto';
import { ApiClient, type ApiResponse } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, postCard, uniqueText } from './cards-support';

// One rule for every free-text field a user sets (@cards/card-rules controlCharacterProblem): no control characters
// (C0, DEL, C1, NUL), except tab and line breaks where the field runs over lines (a description, a search query).

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let anonymous: ApiClient;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  alice = await signUp(system.baseUrl, mailbox, 'controls');
  anonymous = new ApiClient(system.baseUrl);
}, 120_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

const CONTROLS = ['\u0000', '\u001b', '\u0085', '\u009f'];
const code = (c: string) => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

function expectRefused(res: ApiResponse, field: string, control: string): void {
  expect({ status: res.status, message: res.json?.message }).toEqual({ status: 400, message: `${field}: must not contain control characters (found ${code(control)})` });
}

async function collectionNames(user: TestUser): Promise<string[]> {
  const res = await user.client.get('/api/card_collection');
  return (res.json as Array<{ name: string }>).map((c) => c.name);
}

describe('control characters in free text', () => {
  it('refuses them in a collection name and description (tab and line breaks stay allowed in a description), storing nothing', async () => {
    const before = await collectionNames(alice);
    for (const c of CONTROLS) {
      expectRefused(await alice.client.post('/api/card_collection', { name: `a${c}b`, is_public: true }), 'name', c);
      expectRefused(await alice.client.post('/api/card_collection', { name: 'ok', description: `a${c}b`, is_public: true }), 'description', c);
    }
    expectRefused(await alice.client.post('/api/card_collection', { name: 'one\ttwo', is_public: true }), 'name', '\t');
    expect(await collectionNames(alice)).toEqual(before);

    const created = await alice.client.post('/api/card_collection', { name: 'Lines', description: 'first line\r\nsecond\tline', is_public: true });
    expect(created.status).toBe(204);
    const id = /([0-9a-f-]{36})$/.exec(created.headers.get('location') ?? '')![1]!;
    expectRefused(await alice.client.put('/api/card_collection', { collection_id: id, name: 'x\u0000y' }), 'name', '\u0000');
    expectRefused(await alice.client.put('/api/card_collection', { collection_id: id, description: 'x\u0085y' }), 'description', '\u0085');
    const listed = ((await alice.client.get('/api/card_collection')).json as Array<{ id: string; name: string; description: string }>).find((c) => c.id === id);
    expect(listed).toMatchObject({ name: 'Lines', description: 'first line\r\nsecond\tline' });
  });

  it('holds a collection name to the rule of a file name: no bidi override or other hiding character, on creation and rename', async () => {
    const before = await collectionNames(alice);
    const refused = { status: 400, message: 'name: must not contain U+202E (right-to-left override)' };
    const answer = (res: ApiResponse) => ({ status: res.status, message: res.json?.message });
    expect(answer(await alice.client.post('/api/card_collection', { name: 'Notes\u202Efdp.exe', is_public: true }))).toEqual(refused);
    expect(await collectionNames(alice)).toEqual(before);
    const created = await alice.client.post('/api/card_collection', { name: 'Plain', is_public: true });
    const id = /([0-9a-f-]{36})$/.exec(created.headers.get('location') ?? '')![1]!;
    expect(answer(await alice.client.put('/api/card_collection', { collection_id: id, name: 'Plain\u202E' }))).toEqual(refused);
    expect(answer(await alice.client.put('/api/card_collection', { collection_id: id, name: 'Plain\u2067x' }))).toEqual({ status: 400, message: 'name: must not contain U+2067 (right-to-left isolate)' });
    expect(await collectionNames(alice)).toContain('Plain');
  });

  it('holds tags to the rule of names: no override or other hiding character, not invisible characters alone', async () => {
    const answer = (res: ApiResponse) => ({ status: res.status, message: res.json?.message });
    const text = uniqueText();
    expect(answer(await alice.client.post('/api/card', { card_html: html(text), link: '', private: false, tag_set: ['fine', 't\u202Eag'] }))).toEqual({ status: 400, message: 'tag_set: must not contain U+202E (right-to-left override)' });
    expect(answer(await alice.client.post('/api/card', { card_html: html(text), link: '', private: false, tag_set: ['\u200B'] }))).toEqual({ status: 400, message: 'tag_set: must contain a visible character (found only spaces and invisible characters)' });
    // Joiners beside letters stay: Persian's ZWNJ, an emoji sequence's ZWJ.
    expect((await alice.client.post('/api/card', { card_html: html(text), link: '', private: false, tag_set: ['\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645', '\u{1F469}\u200D\u{1F4BB}'] })).status).toBe(200);
  });

  it('refuses an invitation to an e-mail address hiding an invisible character, which would show as someone else\'s', async () => {
    for (const [email, found] of [[`ad\u200Bmin-${randomUUID()}@example.com`, 'U+200B'], [`admin-${randomUUID()}@exam\u202Eple.com`, 'U+202E (right-to-left override)']]) {
      const res = await anonymous.post('/api/invitation', { email, referral_tokens: [] });
      expect({ status: res.status, message: res.json?.message }).toEqual({ status: 400, message: `email: must not contain invisible characters (found ${found})` });
    }
    expect(mailbox.messages.filter((m) => JSON.stringify(m.to).includes('admin-'))).toEqual([]);
  });

  it('refuses them in a card\'s link, tags and oc_file_path, on creation and on update of the link', async () => {
    for (const c of CONTROLS) {
      expectRefused(await alice.client.post('/api/card', { card_html: html(uniqueText()), link: `https://example.com/a${c}b`, private: false }), 'link', c);
      expectRefused(await alice.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false, tag_set: ['fine', `a${c}b`] }), 'tag_set', c);
      expectRefused(await alice.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false, oc_file_path: `/a${c}b` }), 'oc_file_path', c);
    }
    const cardId = await postCard(alice, { link: 'https://example.com/kept' });
    expectRefused(await alice.client.put('/api/card/update', { card_uuid: cardId, link: 'https://example.com/\u0000' }), 'link', '\u0000');
    expect((await alice.client.get(`/api/card/${cardId}`)).json.link).toBe('https://example.com/kept');
  });

  it('drops them from pasted card HTML instead of refusing the card (HTML whitespace stays)', async () => {
    const text = uniqueText();
    const res = await alice.client.post('/api/card', { card_html: `<p>${text} pa\u0000st\u001bed\u0085 te&#1;xt</p>`, link: '', private: false });
    expect(res.status).toBe(200);
    const card = (await alice.client.get(`/api/card/${res.json.card_metadata.id as string}`)).json as { card_html: string; content: string };
    expect(card.content).toContain('pasted text');
    expect(card.card_html).toContain('pasted text');
    expect(`${card.card_html}${card.content}`).not.toMatch(/(?![\t\n\r\f])\p{Cc}/u);
  });

  it('refuses them in a search query except tab and line breaks', async () => {
    for (const path of ['/api/card/search/1', '/api/card/fulltextsearch/1']) {
      for (const c of CONTROLS) expectRefused(await anonymous.post(path, { content: `energy${c}storage` }), 'content', c);
      expect((await anonymous.post(path, { content: 'energy\tstorage\r\nbatteries' })).status).toBe(200);
    }
  });

  it('refuses them in an uploaded file\'s name and tags', async () => {
    const upload = (body: Record<string, unknown>) =>
      alice.client.post('/api/file', { base64_docx_file: Buffer.from('not read').toString('base64url'), file_name: 'x.docx', file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', private: false, ...body });
    for (const c of CONTROLS) {
      expectRefused(await upload({ file_name: `a${c}b.docx` }), 'file_name', c);
      expectRefused(await upload({ tag_set: [`a${c}b`] }), 'tag_set', c);
    }
  });

  it('refuses them in an invitation or reset e-mail address, a new password and a website', async () => {
    for (const c of CONTROLS) {
      expectRefused(await anonymous.post('/api/invitation', { email: `a${c}b@example.com`, referral_tokens: [] }), 'email', c);
      expectRefused(await anonymous.post('/api/password', { email: `a${c}b@example.com` }), 'email', c);
      expectRefused(await alice.client.put('/api/user', { website: `https://example.com/a${c}b` }), 'website', c);
      expectRefused(await anonymous.post('/api/password', { password_reset_id: randomUUID(), password: `long enough${c}`, password_confirmation: `long enough${c}` }), 'password', c);
    }

    const email = `controls-register-${Date.now()}@example.com`;
    expect((await anonymous.post('/api/invitation', { email, referral_tokens: [] })).status).toBe(200);
    const invitationId = /auth\/register\/([0-9a-f-]{36})/.exec((await mailbox.waitFor(email, /register/)).text ?? '')![1]!;
    expectRefused(await anonymous.post(`/api/register/${invitationId}`, { password: 'long\u0000enough', password_confirmation: 'long\u0000enough' }), 'password', '\u0000');
    // Printable characters of every kind make a password, and the invitation is still good.
    expect((await anonymous.post(`/api/register/${invitationId}`, { password: 'lang genug – ünïcødé 😀 !"#', password_confirmation: 'lang genug – ünïcødé 😀 !"#' })).status).toBe(200);
    expect((await anonymous.post('/api/auth', { email, password: 'lang genug – ünïcødé 😀 !"#' })).status).toBe(204);
  });
});

// Text that is not well-formed Unicode (an unpaired surrogate, which JSON can spell as "\ud800") is refused by the same
// fields, naming the field; before, the gateway's protobuf encoding turned it into U+FFFD and stored that.
describe('unpaired surrogates in free text', () => {
  const LONE = ['\ud800', '\udfff'];
  const hex = (c: string) => `U+${c.charCodeAt(0).toString(16).toUpperCase()}`;

  function expectIllFormed(res: ApiResponse, field: string, half: string): void {
    expect({ status: res.status, message: res.json?.message }).toEqual({ status: 400, message: `${field}: must be well-formed Unicode (found an unpaired surrogate ${hex(half)})` });
  }

  it('refuses them in a collection, a card\'s HTML, link and tags (cards), storing nothing', async () => {
    const before = await collectionNames(alice);
    for (const c of LONE) {
      expectIllFormed(await alice.client.post('/api/card_collection', { name: `a${c}b`, is_public: true }), 'name', c);
      expectIllFormed(await alice.client.post('/api/card_collection', { name: 'ok', description: `a${c}b`, is_public: true }), 'description', c);
      expectIllFormed(await alice.client.post('/api/card', { card_html: html(`${uniqueText()} half${c}`), link: '', private: false }), 'card_html', c);
      expectIllFormed(await alice.client.post('/api/card', { card_html: html(uniqueText()), link: `https://example.com/${c}`, private: false }), 'link', c);
      expectIllFormed(await alice.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false, tag_set: ['fine', `a${c}`] }), 'tag_set', c);
    }
    expect(await collectionNames(alice)).toEqual(before);
    // A pair is one character (an emoji) and stays as sent.
    const cardId = await postCard(alice, { tag_set: ['moon \u{1F315}'] });
    expect((await alice.client.get(`/api/card/${cardId}`)).json.tag_set).toBe('moon \u{1F315}');
    expectIllFormed(await alice.client.put('/api/card/update', { card_uuid: cardId, link: 'https://example.com/\ud83d' }), 'link', '\ud83d');
  });

  it('refuses them in an invitation e-mail, a new password and a website (identity); logging in with one is only a wrong password', async () => {
    for (const c of LONE) {
      expectIllFormed(await anonymous.post('/api/invitation', { email: `a${c}b@example.com`, referral_tokens: [] }), 'email', c);
      expectIllFormed(await alice.client.put('/api/user', { website: `https://example.com/a${c}b` }), 'website', c);
      expectIllFormed(await anonymous.post('/api/password', { password_reset_id: randomUUID(), password: `long enough${c}`, password_confirmation: `long enough${c}` }), 'password', c);
    }
    expect((await alice.client.get('/api/auth')).json.website ?? null).toBeNull();
    const login = await anonymous.post('/api/auth', { email: alice.email, password: `${alice.password}\ud800` });
    expect({ status: login.status, message: login.json?.message }).toEqual({ status: 401, message: 'Incorrect email or password' });
  });

  it('refuses them in a search query (search)', async () => {
    for (const path of ['/api/card/search/1', '/api/card/fulltextsearch/1']) {
      for (const c of LONE) expectIllFormed(await anonymous.post(path, { content: `energy${c} storage` }), 'content', c);
      expect((await anonymous.post(path, { content: 'energy \u{1F50B} storage' })).status).toBe(200);
    }
  });

  it('refuses them in an uploaded file\'s name (files)', async () => {
    const res = await alice.client.post('/api/file', { base64_docx_file: Buffer.from('not read').toString('base64url'), file_name: 'report\udbff.docx', file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', private: false });
    expectIllFormed(res, 'file_name', '\udbff');
  });
});

// A JSON body is UTF-8: bytes that are not (a client sending Latin-1 by mistake) were decoded to U+FFFD and stored.
describe('a request body whose bytes are not UTF-8', () => {
  /** POSTs/PUTs raw bytes as JSON with alice's cookie (or none). */
  async function sendBytes(method: string, path: string, parts: Array<string | number[]>, cookie = alice.client.cookie): Promise<{ status: number; message: unknown }> {
    const body = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));
    const res = await fetch(`${system.baseUrl}${path}`, { method, headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) }, body });
    const text = await res.text();
    return { status: res.status, message: text ? (JSON.parse(text) as { message?: unknown }).message : undefined };
  }
  const notUtf8 = (offset: number, seen = '0xE9, then 0x20') => ({
    status: 400,
    message: `The request body is not valid UTF-8: an incomplete sequence (${seen}) at byte ${offset}; JSON must be sent encoded as UTF-8`,
  });

  it('is refused 400 naming the bad byte, for a collection, a card and an upload, storing nothing', async () => {
    const before = await collectionNames(alice);
    expect(await sendBytes('POST', '/api/card_collection', ['{"name":"Caf', [0xe9], ' notes","is_public":false}'])).toEqual(notUtf8(12));
    expect(await collectionNames(alice)).toEqual(before);
    const text = uniqueText();
    expect(await sendBytes('POST', '/api/card', ['{"card_html":"<p>', [0xe9], ` ${text}</p>","link":"","private":true}`])).toEqual(notUtf8(17));
    const found = await alice.client.post('/api/card/fulltextsearch/1', { content: text.split(' ')[0] });
    expect(found.json.score_cards ?? []).toEqual([]);
    expect(
      await sendBytes('POST', '/api/file', [`{"base64_docx_file":"${Buffer.from('not read').toString('base64url')}","file_name":"r`, [0xe9, 0x73], 'um\\u00e9.docx","file_mime_type":"application/vnd.openxmlformats-officedocument.wordprocessingml.document","private":true}']),
    ).toEqual(notUtf8(48, '0xE9, then 0x73'));
    const id = /([0-9a-f-]{36})$/.exec((await alice.client.post('/api/card_collection', { name: 'Kept', is_public: false })).headers.get('location') ?? '')![1]!;
    expect(await sendBytes('PUT', '/api/card_collection', [`{"collection_id":"${id}","description":"`, [0xff], '"}'])).toEqual({
      status: 400,
      message: 'The request body is not valid UTF-8: a byte that never appears in UTF-8 (0xFF) at byte 71; JSON must be sent encoded as UTF-8',
    });
    // The same text sent as UTF-8 is stored as sent.
    expect((await sendBytes('POST', '/api/card_collection', ['{"name":"Café notes","is_public":false}'])).status).toBe(204);
    expect(await collectionNames(alice)).toContain('Café notes');
  });

  it('logging in only compares: a password sent in Latin-1 is a wrong password, as before', async () => {
    expect(await sendBytes('POST', '/api/auth', [`{"email":"${alice.email}","password":"${alice.password}`, [0xe9], '"}'], undefined)).toEqual({ status: 401, message: 'Incorrect email or password' });
  });
});

// A card link is a well-formed absolute http(s) URL as written; before, URL parsing took "https:/example.com" and
// invisible characters (stored and shown as sent).
describe('a card link not written in full, or holding an invisible character', () => {
  const problem = (res: ApiResponse) => ({ status: res.status, message: res.json?.message });
  const fullUrl = { status: 400, message: 'link: must be an http or https URL written in full, "http://" or "https://" then a host, such as https://example.com/page' };
  const invisible = (code: string) => ({ status: 400, message: `link: must be an http or https URL without invisible characters (found U+${code})` });

  it('is refused on creation and on update, the stored link kept', async () => {
    const create = (link: string) => alice.client.post('/api/card', { card_html: html(uniqueText()), link, private: true });
    expect(problem(await create('https:/example.com'))).toEqual(fullUrl);
    expect(problem(await create('https:///example.com'))).toEqual(fullUrl);
    expect(problem(await create('https://example.com/\u200b'))).toEqual(invisible('200B'));
    expect(problem(await create('https://example.com/\ufeff'))).toEqual(invisible('FEFF'));
    expect(problem(await create('https://exa\u200emple.com/'))).toEqual(invisible('200E'));
    expect(problem(await create('https://example.com/\u202egnp.exe'))).toEqual(invisible('202E'));
    expect(problem(await create('https://example.com\\evil'))).toEqual({ status: 400, message: 'link: must be an http or https URL without backslashes' });
    expect(problem(await create('https://exa mple.com'))).toEqual({ status: 400, message: 'link: must be an http or https URL without spaces' });

    const cardId = await postCard(alice, { link: ' HTTPS://Bücher.example/straße?q=1#x ' });
    expect((await alice.client.get(`/api/card/${cardId}`)).json.link).toBe('HTTPS://Bücher.example/straße?q=1#x');
    expect(problem(await alice.client.put('/api/card/update', { card_uuid: cardId, link: 'http:/example.com/x' }))).toEqual(fullUrl);
    expect(problem(await alice.client.put('/api/card/update', { card_uuid: cardId, link: 'https://example.com/\u200f' }))).toEqual(invisible('200F'));
    expect((await alice.client.get(`/api/card/${cardId}`)).json.link).toBe('HTTPS://Bücher.example/straße?q=1#x');
  });

  it('is refused as a website too; a search filter may still be part of a link', async () => {
    expect(problem(await alice.client.put('/api/user', { website: 'https:/example.com' }))).toEqual({ ...fullUrl, message: fullUrl.message.replace('link:', 'website:') });
    expect(problem(await alice.client.put('/api/user', { website: 'https://example.com/\u200b' }))).toEqual({ ...invisible('200B'), message: invisible('200B').message.replace('link:', 'website:') });
    for (const link of ['example.com', 'https:/', 'example.com/\u200b']) expect((await anonymous.post('/api/card/fulltextsearch/1', { content: 'river', link })).status).toBe(200);
  });
});

// The rule of names (@cards/card-rules nameProblem) refuses every invisible character between visible ones, except
// where real text needs one (emoji sequences, VS16 after an emoji, ZWJ/ZWNJ by IDNA's ContextJ), in collection names,
// tags, file names and a card's oc_file_path; card bodies keep theirs.
describe('invisible characters inside names, tags, file names and oc_file_path', () => {
  const answer = (res: ApiResponse) => ({ status: res.status, message: res.json?.message });
  const refused = (field: string, found: string) => ({ status: 400, message: `${field}: must not contain the invisible character ${found}` });

  it('are refused, named, where an audit found them accepted, and nothing is stored', async () => {
    const before = await collectionNames(alice);
    expect(answer(await alice.client.post('/api/card_collection', { name: 'Zw\u200Bsp name', is_public: true }))).toEqual(refused('name', 'U+200B (zero width space)'));
    for (const [c, found] of [['\u2060', 'U+2060 (word joiner)'], ['\u00AD', 'U+00AD (soft hyphen)'], ['\u3164', 'U+3164 (Hangul filler)'], ['\u{E0041}', 'U+E0041 (tag character)']]) {
      expect(answer(await alice.client.post('/api/card_collection', { name: `a${c}b`, is_public: true }))).toEqual(refused('name', found!));
    }
    expect(await collectionNames(alice)).toEqual(before);
    const card = (body: Record<string, unknown>) => alice.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false, ...body });
    expect(answer(await card({ tag_set: ['pay\u3164pal'] }))).toEqual(refused('tag_set', 'U+3164 (Hangul filler)'));
    expect(answer(await card({ oc_file_path: '/docs/\u202Egnp.exe' }))).toEqual({ status: 400, message: 'oc_file_path: must not contain U+202E (right-to-left override)' });
    expect(answer(await card({ oc_file_path: '/docs/re\u200Bport.pdf' }))).toEqual(refused('oc_file_path', 'U+200B (zero width space)'));
    const upload = await alice.client.post('/api/file', {
      base64_docx_file: Buffer.from('not read').toString('base64url'),
      file_name: 'report\u3164final\u200B.pdf',
      file_mime_type: 'application/pdf',
      private: false,
    });
    expect(answer(upload)).toEqual(refused('file_name', 'U+3164 (Hangul filler)'));
  });

  it('stay where real text needs them: emoji sequences, VS16 after an emoji, Persian ZWNJ, a virama\'s ZWJ; card bodies keep theirs', async () => {
    const name = 'Family \u{1F468}\u200D\u{1F469}\u200D\u{1F467} \u2764\uFE0F';
    expect((await alice.client.post('/api/card_collection', { name, is_public: true })).status).toBe(204);
    expect(await collectionNames(alice)).toContain(name);
    const tags = ['\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645', '\u0915\u094D\u200D\u0937', '\u{1F3F3}\uFE0F\u200D\u{1F308}'];
    const text = uniqueText();
    const res = await alice.client.post('/api/card', { card_html: html(`${text} zero\u200Bwidth`), link: '', private: false, tag_set: tags, oc_file_path: '/docs/\u{1F469}\u200D\u{1F4BB}.docx' });
    expect(res.status).toBe(200);
    const stored = (await alice.client.get(`/api/card/${res.json.card_metadata.id as string}`)).json as { tag_set: string; oc_file_path: string; content: string };
    expect(stored.tag_set).toBe(tags.join(','));
    expect(stored.oc_file_path).toBe('/docs/\u{1F469}\u200D\u{1F4BB}.docx');
    expect(stored.content).toContain('zero\u200Bwidth');
  });
});

describe('a body sent to a route that reads none', () => {
  it('is refused 400 when it is not a JSON object, as on every route that reads one; an object is ignored', async () => {
    const answer = (res: ApiResponse) => ({ status: res.status, message: res.json?.message });
    const notObject = { status: 400, message: 'The request body must be a JSON object' };
    expect(answer(await alice.client.put('/api/notifications/all', [1, 2]))).toEqual(notObject);
    expect(answer(await alice.client.delete('/api/auth', [1, 2]))).toEqual(notObject);
    expect((await alice.client.get('/api/auth')).status).toBe(200);
    expect((await alice.client.put('/api/notifications/all', {})).status).toBe(204);
  });
});
