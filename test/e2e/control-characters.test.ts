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
