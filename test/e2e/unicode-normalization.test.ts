import { randomUUID } from 'node:crypto';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, indexed, postCard, uniqueText } from './cards-support';

// Text that looks the same arrives composed (NFC: "é" is U+00E9) or decomposed (NFD: "e" + U+0301, macOS input,
// copy-paste). The gateway puts user text in NFC (parseBody), so both spellings are one value; identity puts passwords in NFC.

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let anonymous: ApiClient;
const run = randomUUID().slice(0, 8);
const tagNfc = `cr\u00e8me br\u00fbl\u00e9e ${run}`;
const tagNfd = tagNfc.normalize('NFD');
const linkNfc = `https://example.org/caf\u00e9-${run}`;
const wordNfc = `z\u00fcrichg\u00e4rten${run}`;
let sentNfd: string;
let sentNfc: string;

type Entry = { metadata: { id: string }[] };
const ids = (res: { json: { score_cards: Entry[] } }) => res.json.score_cards.map((e) => e.metadata[0]!.id).sort();

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  alice = await signUp(system.baseUrl, mailbox, 'nfc');
  anonymous = new ApiClient(system.baseUrl);
  // The same tag, link and word, one card sent decomposed, the other composed.
  sentNfd = await postCard(alice, { card_html: html(`${uniqueText(80)} ${wordNfc}`.normalize('NFD')), link: `${linkNfc}/one`.normalize('NFD'), tag_set: [tagNfd] });
  sentNfc = await postCard(alice, { card_html: html(`${uniqueText(80)} ${wordNfc}`), link: `${linkNfc}/two`, tag_set: [tagNfc] });
  for (const id of [sentNfd, sentNfc]) await indexed(alice, id);
}, 180_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

describe('one Unicode normalization form (NFC) for user text', () => {
  it('stores a card sent in NFD in NFC: its tags, link and html', async () => {
    const card = (await alice.client.get(`/api/card/${sentNfd}`)).json;
    expect(card.tag_set).toBe(tagNfc);
    expect(card.link).toBe(`${linkNfc}/one`);
    expect(card.card_html).toContain(wordNfc);
    expect(card.card_html).not.toContain(wordNfc.normalize('NFD'));
  });

  it('a tag filter finds the cards tagged in either form, sent in either form', async () => {
    for (const path of ['/api/card/search/1', '/api/card/fulltextsearch/1']) {
      for (const tag of [tagNfc, tagNfd]) {
        const res = await anonymous.post(path, { content: wordNfc, tag_set: [tag] });
        expect([path, tag === tagNfd ? 'NFD' : 'NFC', ids(res)]).toEqual([path, tag === tagNfd ? 'NFD' : 'NFC', [sentNfd, sentNfc].sort()]);
      }
    }
  });

  it('a link filter finds the cards linked in either form, sent in either form', async () => {
    for (const link of [linkNfc, linkNfc.normalize('NFD')]) {
      const res = await anonymous.post('/api/card/fulltextsearch/1', { content: wordNfc, link: [link] });
      expect(ids(res)).toEqual([sentNfd, sentNfc].sort());
    }
  });

  it('a full-text or semantic query in either form finds the card written in either form', async () => {
    for (const path of ['/api/card/fulltextsearch/1', '/api/card/search/1']) {
      for (const content of [wordNfc, wordNfc.normalize('NFD')]) {
        const found = ids(await anonymous.post(path, { content }));
        expect([path, content === wordNfc ? 'NFC' : 'NFD', [sentNfd, sentNfc].every((id) => found.includes(id))]).toEqual([path, content === wordNfc ? 'NFC' : 'NFD', true]);
      }
    }
  });

  it('a collection name and a website sent in NFD are stored in NFC', async () => {
    const name = `Caf\u00e9 ${run}`;
    expect((await alice.client.post('/api/card_collection', { name: name.normalize('NFD'), is_public: true })).status).toBe(204);
    const names = ((await alice.client.get('/api/card_collection')).json as Array<{ name: string }>).map((c) => c.name);
    expect(names).toContain(name);
    const website = `https://caf\u00e9-${run}.example`;
    const updated = await alice.client.put('/api/user', { website: website.normalize('NFD') });
    expect(updated.json.website).toBe(website);
  });

  it("an address with a Unicode domain and its punycode spelling are one account, mailed at the punycode address, shown in Unicode", async () => {
    const local = `idn-${run}`;
    const client = new ApiClient(system.baseUrl);
    expect((await client.post('/api/invitation', { email: `${local}@ex\u00e4mple.com`, referral_tokens: [] })).status).toBe(200);
    const mail = await mailbox.waitFor(`${local}@`, /auth\/register\//);
    // The mail parser shows a punycode domain in Unicode; the registration link carries the address as its owner knows it.
    expect(mail.text).toContain(`?email=${encodeURIComponent(`${local}@ex\u00e4mple.com`)}`);
    const invitationId = /auth\/register\/([0-9a-f-]{36})/.exec(mail.text ?? '')![1]!;
    expect((await client.post('/api/invitation', { email: `${local}@XN--EXMPLE-CUA.COM`, referral_tokens: [] })).status).toBe(200);
    const password = `pw-${run}-idn`;
    const registered = await client.post(`/api/register/${invitationId}`, { password, password_confirmation: password });
    expect([registered.status, registered.json.email]).toEqual([200, `${local}@ex\u00e4mple.com`]);
    const second = (await mailbox.waitFor(`${local}@`, new RegExp(`auth/register/(?!${invitationId})`))).text ?? '';
    const secondId = /auth\/register\/([0-9a-f-]{36})/.exec(second)![1]!;
    const again = await client.post(`/api/register/${secondId}`, { password, password_confirmation: password });
    expect([again.status, again.json.message]).toEqual([409, 'An account with this email already exists']);
    for (const email of [`${local}@ex\u00e4mple.com`, `${local}@xn--exmple-cua.com`, `${local}@exa\u0308mple.com`.normalize('NFD')]) {
      expect((await client.post('/api/auth', { email, password })).status).toBe(204);
    }
  });

  it('an account registered with an NFD e-mail logs in with the NFC one; its password is compared in NFC, so either spelling logs in', async () => {
    const email = `ren\u00e9e-${run}@caf\u00e9.example`;
    const password = `m\u00f6tley-cr\u00fce-${run}`.normalize('NFD');
    const client = new ApiClient(system.baseUrl);
    expect((await client.post('/api/invitation', { email: email.normalize('NFD'), referral_tokens: [] })).status).toBe(200);
    const mail = await mailbox.waitFor(email, /auth\/register\//);
    const invitationId = /auth\/register\/([0-9a-f-]{36})/.exec(mail.text ?? '')![1]!;
    const registered = await client.post(`/api/register/${invitationId}`, { password, password_confirmation: password });
    // Stored with the domain in IDNA's ASCII form (café.example is xn--caf-dma.example, the address its mail went to), shown in Unicode NFC.
    expect([registered.status, registered.json.email]).toEqual([200, email]);
    expect((await client.post('/api/auth', { email, password })).status).toBe(204);
    expect((await client.post('/api/auth', { email: email.normalize('NFD'), password })).status).toBe(204);
    // Passwords are hashed and checked in NFC: set decomposed, typed composed, the same password.
    expect((await client.post('/api/auth', { email, password: password.normalize('NFC') })).status).toBe(204);
    const other = await client.post('/api/auth', { email, password: `${password}x` });
    expect([other.status, other.json.message]).toEqual([401, 'Incorrect email or password']);
  });
});
