import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;
let anonymous: ApiClient;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'alice'), signUp(system.baseUrl, mailbox, 'bob')]);
  anonymous = new ApiClient(system.baseUrl);
});
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+$/;

async function createCard(user: TestUser, body: Record<string, unknown> = {}) {
  const res = await user.client.post('/api/card', { card_html: html(uniqueText()), link: 'https://example.com/a', private: false, ...body });
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json as { card_metadata: any; duplicate: boolean };
}

describe('POST /api/card', () => {
  it('creates a card and answers the full Card with author object, author_id and duplicate=false', async () => {
    const text = uniqueText();
    const res = await alice.client.post('/api/card', { card_html: `<p>${text}</p>`, link: 'https://example.com/x', private: false, tag_set: ['history', 'rome'], oc_file_path: '/docs/x.docx' });
    expect(res.status).toBe(200);
    expect(res.json.duplicate).toBe(false);
    const card = res.json.card_metadata;
    expect(card).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      author_id: alice.id,
      content: text,
      card_html: `<p>${text}</p>`,
      link: 'https://example.com/x',
      vector_point_id: null,
      total_upvotes: 0,
      total_downvotes: 0,
      vote_by_current_user: null,
      tag_set: 'history,rome',
      file_id: null,
      file_name: null,
      private: false,
      verification_score: null,
      oc_file_path: '/docs/x.docx',
    });
    expect(card.author).toMatchObject({ id: alice.id, email: alice.email, username: null, website: null, visible_email: true });
    expect(card.author.created_at).toMatch(TIMESTAMP);
    expect(card.created_at).toMatch(TIMESTAMP);
    expect(card.updated_at).toMatch(TIMESTAMP);

    const read = await anonymous.get(`/api/card/${card.id}`);
    expect(read.status).toBe(200);
    expect(read.json).toMatchObject({ id: card.id, content: text, tag_set: 'history,rome', author: { id: alice.id } });
    expect(read.json.author_id).toBeUndefined();
  });

  it('sanitizes script tags, event handlers and javascript: links; content is the text', async () => {
    const text = uniqueText();
    const dirty = `<h2 onclick="steal()">Title</h2><p onmouseover="x()" style="color:red">${text} <a href="javascript:alert(1)">bad</a> <a href="https://ok.example/p">good</a></p><script>alert("xss")</script><img src=x onerror=alert(1)><iframe src="https://evil"></iframe>`;
    const res = await alice.client.post('/api/card', { card_html: dirty, link: '', private: false });
    expect(res.status).toBe(200);
    const card = res.json.card_metadata;
    expect(card.card_html).not.toMatch(/script|onclick|onmouseover|onerror|javascript:|<img|iframe|style=/i);
    expect(card.card_html).toContain('<h2>Title</h2>');
    expect(card.card_html).toContain('<a href="https://ok.example/p">good</a>');
    expect(card.content).toBe(`Title\n${text} bad good`);
    expect(card.content).not.toContain('alert');
  });

  it('rejects invalid input with 400 and a message naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ card_html: html(uniqueText(70)), link: '', private: false }, /card_html.*more than 70 words/],
      // Runs of punctuation, symbols or emoji alone are no words.
      [{ card_html: html(`${uniqueText(60)} ${'\u2014 '.repeat(71)}`), link: '', private: false }, /card_html: must contain more than 70 words of text \(found 60; a word holds a letter or a digit/],
      [{ card_html: html(`${uniqueText(60)} ${'&amp; '.repeat(71)}`), link: '', private: false }, /card_html.*more than 70 words of text \(found 60;/],
      [{ card_html: html(`${uniqueText(60)} ${'\u{1f600} '.repeat(71)}`), link: '', private: false }, /card_html.*more than 70 words of text \(found 60;/],
      [{ card_html: `<p>${uniqueText(30)}</p><script>${uniqueText(60)}</script>`, link: '', private: false }, /card_html/],
      [{ card_html: html(uniqueText(5001)), link: '', private: false }, /card_html.*at most 5000 words/],
      [{ card_html: html(Array.from({ length: 100 }, () => 'x'.repeat(300)).join(' ')), link: '', private: false }, /card_html.*29000 characters/],
      [{ link: '', private: false }, /card_html: is required/],
      [{ card_html: 42, link: '', private: false }, /card_html: must be a string/],
      [{ card_html: html(uniqueText()), private: false }, /link: is required/],
      [{ card_html: html(uniqueText()), link: 'ftp://x.example/a', private: false }, /link/],
      [{ card_html: html(uniqueText()), link: 'not a url', private: false }, /link/],
      [{ card_html: html(uniqueText()), link: 'http://user@host.example/', private: false }, /^link: must be an http or https URL without a user name or password/],
      [{ card_html: html(uniqueText()), link: 'https://x..com/a', private: false }, /^link: must be an http or https URL whose host is a domain name .*\(found "x\.\.com"\)$/],
      [{ card_html: html(uniqueText()), link: `https://${'a'.repeat(64)}.com/`, private: false }, /^link: .*whose host is a domain name/],
      [{ card_html: html(uniqueText()), link: 'https://accounts.google.com\u2044signin.evil.example/', private: false }, /^link: must be an http or https URL whose host reads as the site it opens: "com⁄signin" holds "⁄" \(U\+2044\)/],
      [{ card_html: html(uniqueText()), link: 'https://аpple.com/', private: false }, /^link: .*"аpple" mixes scripts/],
      [{ card_html: html(uniqueText()), link: '' }, /private/],
      [{ card_html: html(uniqueText()), link: '', private: 'maybe' }, /private/],
      [{ card_html: html(uniqueText()), link: '', private: false, tag_set: [1, 2] }, /tag_set/],
      [{ card_html: html(uniqueText()), link: '', private: false, file_uuid: 'nope' }, /file_uuid: must be a UUID/],
    ];
    const before = (await anonymous.get('/api/card/count')).json.total_count;
    for (const [body, message] of cases) {
      const res = await alice.client.post('/api/card', body);
      expect({ body: Object.keys(body), status: res.status }).toEqual({ body: Object.keys(body), status: 400 });
      expect(res.json.message).toMatch(message);
    }
    const malformed = await alice.client.request('POST', '/api/card', '{"card_html": ', { 'content-type': 'application/json' });
    expect(malformed.status).toBe(400);
    // A key given twice is ambiguous (the parser kept the last: "private":true,"private":false made a public card).
    const twice = await alice.client.request('POST', '/api/card', `{"card_html":${JSON.stringify(html(uniqueText()))},"link":"","private":true,"private":false}`, { 'content-type': 'application/json' });
    expect([twice.status, twice.json.message]).toEqual([400, expect.stringMatching(/^The request body is ambiguous: duplicate key "private" in one object/)]);
    expect((await alice.client.post('/api/card', [1, 2])).status).toBe(400);
    expect((await anonymous.get('/api/card/count')).json.total_count).toBe(before);
  });

  it('counts tag characters as code points, after splitting at commas and trimming', async () => {
    const emoji = '\u{1F600}';
    const tags = [` ${emoji.repeat(200)} `, `${'a'.repeat(200)}, ${'b'.repeat(200)}`];
    const res = await alice.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false, tag_set: tags });
    expect(res.status).toBe(200);
    expect(res.json.card_metadata.tag_set).toBe([emoji.repeat(200), 'a'.repeat(200), 'b'.repeat(200)].join(','));
    const refused = await alice.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false, tag_set: [emoji.repeat(201)] });
    expect(refused.status).toBe(400);
    expect(refused.json.message).toMatch(/tag_set: each tag at most 200 characters/);
  });

  it('fills file_id and file_name from a visible file; an unknown or invisible file_uuid is 400', async () => {
    const bytes = readFileSync(join(__dirname, '../fixtures/documents/short.odt'));
    const upload = await alice.client.post('/api/file', { base64_docx_file: bytes.toString('base64url'), file_name: 'notes.odt', file_mime_type: 'application/vnd.oasis.opendocument.text', private: true });
    expect(upload.status).toBe(200);
    const fileId = upload.json.id as string;
    const own = await alice.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false, file_uuid: fileId });
    expect(own.status).toBe(200);
    expect(own.json.card_metadata).toMatchObject({ file_id: fileId, file_name: 'notes.odt' });
    for (const [user, id] of [[bob, fileId], [alice, '00000000-0000-4000-8000-000000000000']] as const) {
      const res = await user.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false, file_uuid: id });
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/file_uuid/);
    }
  });

  it('requires a login to create', async () => {
    const res = await anonymous.post('/api/card', { card_html: html(uniqueText()), link: '', private: false });
    expect(res.status).toBe(401);
  });
});

describe('POST /api/card with an Idempotency-Key', () => {
  const create = (user: TestUser, key: string, text = uniqueText()) =>
    user.client.request('POST', '/api/card', { card_html: html(text), link: 'https://example.com/a', private: false }, { 'idempotency-key': key });

  it('answers a repeated request (a retry after a lost answer, a second click) with the card the first one created', async () => {
    const key = `k-${Date.now()}-${Math.random()}`;
    const text = uniqueText();
    const first = await create(alice, key, text);
    const again = await create(alice, key, text);
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.json.card_metadata.id).toBe(first.json.card_metadata.id);
    expect([first.json.duplicate, again.json.duplicate]).toEqual([false, false]);
    // Another body under the key is another request: refused (idempotency.test.ts).
    expect((await create(alice, key)).status).toBe(422);
    const mine = (await alice.client.get(`/api/user/${alice.id}/1`)).json.cards.filter((c: any) => c.content === first.json.card_metadata.content);
    expect(mine).toHaveLength(1);
  });

  it("keeps each user's keys apart, and a new key creates a new card", async () => {
    const key = `shared-${Date.now()}`;
    const text = uniqueText();
    const [a, b] = [await create(alice, key, text), await create(bob, key, text)];
    expect(b.json.card_metadata.id).not.toBe(a.json.card_metadata.id);
    const other = await create(alice, `${key}-2`, text);
    expect(other.json.card_metadata.id).not.toBe(a.json.card_metadata.id);
    expect(other.json.duplicate).toBe(true);
  });

  it('refuses a key that is not 1 to 255 visible ASCII characters', async () => {
    for (const key of ['x'.repeat(256), 'two words', 'é']) {
      const res = await alice.client.request('POST', '/api/card', { card_html: html(uniqueText()), link: '', private: false }, { 'idempotency-key': key });
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/Idempotency-Key/);
    }
  });
});

describe('private cards', () => {
  it('are readable by their owner only; others and anonymous get 404', async () => {
    const { card_metadata: card } = await createCard(alice, { private: true });
    expect((await alice.client.get(`/api/card/${card.id}`)).json.private).toBe(true);
    const byBob = await bob.client.get(`/api/card/${card.id}`);
    expect(byBob.status).toBe(404);
    expect(byBob.json.message).toEqual(expect.any(String));
    expect((await anonymous.get(`/api/card/${card.id}`)).status).toBe(404);
    expect((await bob.client.put('/api/card/update', { card_uuid: card.id, link: 'https://x.example' })).status).toBe(404);
    expect((await bob.client.delete(`/api/card/${card.id}`)).status).toBe(404);
  });
});

describe('GET /api/card/:card_id', () => {
  it('is 400 on a bad UUID and 404 on an unknown card', async () => {
    expect((await anonymous.get('/api/card/not-a-uuid')).status).toBe(400);
    expect((await anonymous.get('/api/card/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });
});

describe('PUT /api/card/update', () => {
  it('updates html (re-deriving content), link and privacy; answers 204', async () => {
    const { card_metadata: card } = await createCard(alice);
    const text = uniqueText();
    const res = await alice.client.put('/api/card/update', { card_uuid: card.id, card_html: `<p>${text}</p><script>x()</script>`, link: 'https://new.example/', private: true });
    expect(res.status).toBe(204);
    const read = await alice.client.get(`/api/card/${card.id}`);
    expect(read.json).toMatchObject({ content: text, card_html: `<p>${text}</p>`, link: 'https://new.example/', private: true });
    expect(new Date(read.json.updated_at + 'Z').getTime()).toBeGreaterThan(new Date(card.updated_at + 'Z').getTime());
    expect((await bob.client.get(`/api/card/${card.id}`)).status).toBe(404);
  });

  it('keeps the cells and rows of a table and the text of other dropped blocks apart, on create and update (they were glued: "YearRate20194.5%")', async () => {
    const text = uniqueText();
    const table = '<table><caption>Rates</caption><tr><th>Year</th><th>Rate</th></tr><tr><td>2019</td><td>4.5%</td></tr><tr><td></td><td> </td></tr></table>';
    const created = await alice.client.post('/api/card', { card_html: `<p>${text}</p>${table}`, link: '', private: false });
    expect(created.status).toBe(200);
    expect(created.json.card_metadata).toMatchObject({ card_html: `<p>${text}</p><p>Rates</p><p>Year | Rate</p><p>2019 | 4.5%</p>`, content: `${text}\nRates\nYear | Rate\n2019 | 4.5%` });
    const id = created.json.card_metadata.id as string;
    const other = uniqueText();
    const blocks = `<div>${other}</div><div>next</div><dl><dt>Term</dt><dd>Definition</dd></dl>x<hr>y`;
    expect((await alice.client.put('/api/card/update', { card_uuid: id, card_html: blocks })).status).toBe(204);
    const read = await alice.client.get(`/api/card/${id}`);
    expect(read.json).toMatchObject({ card_html: `${other}<br />next<br />Term<br />Definition<br />x<br />y`, content: `${other}\nnext\nTerm\nDefinition\nx\ny` });
  });

  it("is 403 on someone else's visible card, and changes nothing", async () => {
    const { card_metadata: card } = await createCard(alice);
    const res = await bob.client.put('/api/card/update', { card_uuid: card.id, link: 'https://bob.example' });
    expect(res.status).toBe(403);
    expect((await anonymous.get(`/api/card/${card.id}`)).json.link).toBe(card.link);
  });

  it('rejects bad input with 400 and keeps the card', async () => {
    const { card_metadata: card } = await createCard(alice);
    for (const body of [
      { card_uuid: 'x' },
      {},
      { card_uuid: card.id, card_html: html(uniqueText(10)) },
      { card_uuid: card.id, link: 'javascript:alert(1)' },
      { card_uuid: card.id, private: 'perhaps' },
    ]) {
      const res = await alice.client.put('/api/card/update', body);
      expect(res.status).toBe(400);
      expect(res.json.message).toEqual(expect.any(String));
    }
    expect((await alice.client.get(`/api/card/${card.id}`)).json.content).toBe(card.content);
    expect((await anonymous.put('/api/card/update', { card_uuid: card.id, link: '' })).status).toBe(401);
  });
});

describe('PUT /api/card/update with If-Match (the ETag of GET /api/card/:card_id)', () => {
  const update = (user: TestUser, body: object, ifMatch?: string) =>
    user.client.request('PUT', '/api/card/update', body, ifMatch === undefined ? {} : { 'if-match': ifMatch });

  it('answers the same strong ETag to every caller who sees the card (votes are not part of it), and a new one after an edit', async () => {
    const { card_metadata: card } = await createCard(alice);
    // Strong; a compressed answer carries it weak (W/"…", as every strong ETag of a compressed API answer), which
    // If-Match takes as the same version (the other tests send that form: fetch asks for gzip).
    const identity = await alice.client.request('GET', `/api/card/${card.id}`, undefined, { 'accept-encoding': 'identity' });
    expect(identity.headers.get('etag')).toMatch(/^"[^"]+"$/);
    const read = await alice.client.get(`/api/card/${card.id}`);
    expect(read.headers.get('etag')).toBe(`W/${identity.headers.get('etag')}`);
    expect((await bob.client.post('/api/vote', { card_metadata_id: card.id, vote: true })).status).toBe(200);
    expect((await bob.client.get(`/api/card/${card.id}`)).headers.get('etag')).toBe(read.headers.get('etag'));
    expect((await anonymous.get(`/api/card/${card.id}`)).headers.get('etag')).toBe(read.headers.get('etag'));
    expect((await update(alice, { card_uuid: card.id, link: 'https://example.com/edited' })).status).toBe(204);
    expect((await alice.client.get(`/api/card/${card.id}`)).headers.get('etag')).not.toBe(read.headers.get('etag'));
  });

  it('is 412 with a message on a stale ETag and changes nothing; 204 with the current one', async () => {
    const { card_metadata: card } = await createCard(alice);
    const stale = (await alice.client.get(`/api/card/${card.id}`)).headers.get('etag')!;
    expect((await update(alice, { card_uuid: card.id, link: 'https://example.com/other-tab' }, stale)).status).toBe(204);
    const refused = await update(alice, { card_uuid: card.id, link: 'https://example.com/late', private: true }, stale);
    expect(refused.status).toBe(412);
    expect(refused.json.message).toMatch(/changed since you read it/);
    const now = await alice.client.get(`/api/card/${card.id}`);
    expect([now.json.link, now.json.private]).toEqual(['https://example.com/other-tab', false]);
    expect((await update(alice, { card_uuid: card.id, private: true }, now.headers.get('etag')!)).status).toBe(204);
    expect((await alice.client.get(`/api/card/${card.id}`)).json.private).toBe(true);
  });

  it('without If-Match (or with *) updates as before; a tag not of this API is 412, a malformed header 400', async () => {
    const { card_metadata: card } = await createCard(alice);
    const stale = (await alice.client.get(`/api/card/${card.id}`)).headers.get('etag')!;
    expect((await update(alice, { card_uuid: card.id, link: 'https://example.com/one' })).status).toBe(204);
    expect((await update(alice, { card_uuid: card.id, link: 'https://example.com/two' })).status).toBe(204);
    expect((await update(alice, { card_uuid: card.id, link: 'https://example.com/three' }, '*')).status).toBe(204);
    expect((await update(alice, { card_uuid: card.id, link: 'https://example.com/four' }, '"not-a-version"')).status).toBe(412);
    const malformed = await update(alice, { card_uuid: card.id, link: 'https://example.com/five' }, 'no quotes');
    expect(malformed.status).toBe(400);
    expect(malformed.json.message).toMatch(/^If-Match: /);
    expect((await alice.client.get(`/api/card/${card.id}`)).json.link).toBe('https://example.com/three');
    expect(stale).not.toBe((await alice.client.get(`/api/card/${card.id}`)).headers.get('etag'));
  });

  it("answers the card's new ETag with the 204 of an update, the one GET answers: a second save with it needs no read between", async () => {
    const { card_metadata: card } = await createCard(alice);
    const read = (await alice.client.get(`/api/card/${card.id}`)).headers.get('etag')!;
    const first = await update(alice, { card_uuid: card.id, link: 'https://example.com/first-save' }, read);
    expect(first.status).toBe(204);
    const next = first.headers.get('etag');
    expect(next).toMatch(/^"\d+"$/);
    expect(next).not.toBe(read.replace(/^W\//, ''));
    expect((await alice.client.request('GET', `/api/card/${card.id}`, undefined, { 'accept-encoding': 'identity' })).headers.get('etag')).toBe(next);
    // The second save of the same form, on its first save's tag: written, not refused 412 by that first save.
    const second = await update(alice, { card_uuid: card.id, private: true }, next!);
    expect(second.status).toBe(204);
    const now = await alice.client.request('GET', `/api/card/${card.id}`, undefined, { 'accept-encoding': 'identity' });
    expect([now.json.link, now.json.private]).toEqual(['https://example.com/first-save', true]);
    expect(now.headers.get('etag')).toBe(second.headers.get('etag'));
    // A save that changes nothing answers the version it found; a stale tag is still refused.
    const unchanged = await update(alice, { card_uuid: card.id, private: true });
    expect([unchanged.status, unchanged.headers.get('etag')]).toEqual([204, second.headers.get('etag')]);
    expect((await update(alice, { card_uuid: card.id, link: 'https://example.com/stale' }, next!)).status).toBe(412);
  });
});

describe('DELETE /api/card/:card_id', () => {
  it('deletes own cards (204, then 404); 403 for others; 400 bad id; 401 anonymous', async () => {
    const { card_metadata: card } = await createCard(alice);
    expect((await bob.client.delete(`/api/card/${card.id}`)).status).toBe(403);
    expect((await anonymous.delete(`/api/card/${card.id}`)).status).toBe(401);
    expect((await alice.client.delete('/api/card/123')).status).toBe(400);
    expect((await alice.client.delete(`/api/card/${card.id}`)).status).toBe(204);
    expect((await anonymous.get(`/api/card/${card.id}`)).status).toBe(404);
    expect((await alice.client.delete(`/api/card/${card.id}`)).status).toBe(404);
  });
});

describe('duplicates', () => {
  it('an exact copy (modulo case, spacing, punctuation and markup) is a collision; deleting the root promotes it', async () => {
    const text = uniqueText(90);
    const root = await createCard(alice, { card_html: html(text) });
    expect(root.duplicate).toBe(false);
    const copy = await createCard(bob, { card_html: `<h1>${text.toUpperCase().replace(/ /g, ',  ')}!</h1>` });
    expect(copy.duplicate).toBe(true);
    expect(copy.card_metadata.vector_point_id).toBeNull();

    expect((await alice.client.delete(`/api/card/${root.card_metadata.id}`)).status).toBe(204);
    const third = await createCard(alice, { card_html: html(text) });
    expect(third.duplicate).toBe(true);
    const promoted = await anonymous.get(`/api/card/${copy.card_metadata.id}`);
    expect(promoted.status).toBe(200);
  });

  it('a near copy (word-shingle Jaccard >= 0.9) is a collision, a distinct card on the same topic is not', async () => {
    const words = uniqueText(300).split(' ');
    const root = await createCard(alice, { card_html: html(words.join(' ')) });
    const near = [...words];
    near[150] = 'changedword';
    const copy = await createCard(bob, { card_html: html(near.join(' ')) });
    expect(copy.duplicate).toBe(true);
    const distinct = await createCard(bob, { card_html: html(`${words.slice(0, 60).join(' ')} ${uniqueText(240)}`) });
    expect(distinct.duplicate).toBe(false);
    expect(root.duplicate).toBe(false);
  });

  it("another user's private card is never a duplicate root, and a private duplicate cannot be made public", async () => {
    const text = uniqueText();
    await createCard(alice, { card_html: html(text), private: true });
    const bobs = await createCard(bob, { card_html: html(text) });
    expect(bobs.duplicate).toBe(false);

    const privateCopy = await createCard(alice, { card_html: html(`${text}.`), private: true });
    expect(privateCopy.duplicate).toBe(true);
    const res = await alice.client.put('/api/card/update', { card_uuid: privateCopy.card_metadata.id, private: false });
    expect(res.status).toBe(400);
    expect(res.json.message).toMatch(/private/);
    expect((await alice.client.get(`/api/card/${privateCopy.card_metadata.id}`)).json.private).toBe(true);
  });
});

describe('duplicates and privacy', () => {
  let carol: TestUser;
  beforeAll(async () => {
    carol = await signUp(system.baseUrl, mailbox, 'carol');
  });

  /** The full-text search groups ([root id, ...collision ids]) holding any of `ids`, as `viewer` sees them, in id order. */
  async function groupsFound(viewer: ApiClient, word: string, ids: readonly string[]): Promise<string[][]> {
    const res = await viewer.post('/api/card/fulltextsearch/1', { content: word });
    expect(res.status).toBe(200);
    const groups = (res.json.score_cards as { metadata: { id: string }[] }[]).map((e) => e.metadata.map((c) => c.id)).filter((g) => g.some((id) => ids.includes(id)));
    return groups.sort((a, b) => a[0]!.localeCompare(b[0]!));
  }
  /** Waits until the viewer's search shows exactly these groups (the index catches up asynchronously). */
  async function expectGroups(viewer: ApiClient, word: string, ids: readonly string[], expected: string[][]): Promise<void> {
    const want = [...expected].sort((a, b) => a[0]!.localeCompare(b[0]!));
    const deadline = Date.now() + 30_000;
    let found = await groupsFound(viewer, word, ids);
    while (JSON.stringify(found) !== JSON.stringify(want) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      found = await groupsFound(viewer, word, ids);
    }
    expect(found).toEqual(want);
  }

  it('a public copy of a private root, of the same author or of another, is a root of its own that everyone finds', async () => {
    const text = uniqueText(90);
    const word = text.split(' ')[0]!;
    const secret = (await createCard(alice, { card_html: html(text), private: true })).card_metadata.id as string;
    const bobFirst = await createCard(bob, { card_html: html(text) });
    expect(bobFirst.duplicate).toBe(false);
    const ownPublic = await createCard(alice, { card_html: html(`${text}.`) });
    // Alice's public copy attaches to Bob's public card (visible to her), not to her own private one.
    expect(ownPublic.duplicate).toBe(true);
    const ids = [secret, bobFirst.card_metadata.id, ownPublic.card_metadata.id];
    const publicGroup = [bobFirst.card_metadata.id, ownPublic.card_metadata.id];
    await expectGroups(anonymous, word, ids, [publicGroup]);
    await expectGroups(carol.client, word, ids, [publicGroup]);
    await expectGroups(alice.client, word, ids, [publicGroup, [secret]]);

    // The same author alone: her public copy of her private card is a root, found by everyone.
    const text2 = uniqueText(90);
    const word2 = text2.split(' ')[0]!;
    const secret2 = (await createCard(alice, { card_html: html(text2), private: true })).card_metadata.id as string;
    const own2 = await createCard(alice, { card_html: html(text2.toUpperCase()) });
    expect(own2.duplicate).toBe(false);
    await expectGroups(bob.client, word2, [secret2, own2.card_metadata.id], [[own2.card_metadata.id]]);
    await expectGroups(alice.client, word2, [secret2, own2.card_metadata.id], [[own2.card_metadata.id], [secret2]]);
  });

  it('a root made private lets go of public and other authors\' collisions: they stay findable, the private root reaches nobody else', async () => {
    const text = uniqueText(90);
    const word = text.split(' ')[0]!;
    const root = (await createCard(alice, { card_html: html(text) })).card_metadata.id as string;
    const alicePrivate = await createCard(alice, { card_html: html(text), private: true });
    const bobPrivate = await createCard(bob, { card_html: html(text), private: true });
    const bobPublic = await createCard(bob, { card_html: html(text) });
    const carolPublic = await createCard(carol, { card_html: html(text) });
    for (const c of [alicePrivate, bobPrivate, bobPublic, carolPublic]) expect(c.duplicate).toBe(true);
    const ids = [root, alicePrivate, bobPrivate, bobPublic, carolPublic].map((c) => (typeof c === 'string' ? c : (c.card_metadata.id as string)));
    const [, alicePrivateId, bobPrivateId, bobPublicId, carolPublicId] = ids as [string, string, string, string, string];
    await expectGroups(anonymous, word, ids, [[root, bobPublicId, carolPublicId]]);

    expect((await alice.client.put('/api/card/update', { card_uuid: root, private: true })).status).toBe(204);
    await expectGroups(anonymous, word, ids, [[bobPublicId, carolPublicId]]);
    await expectGroups(carol.client, word, ids, [[bobPublicId, carolPublicId]]);
    await expectGroups(bob.client, word, ids, [[bobPublicId, bobPrivateId, carolPublicId]]);
    await expectGroups(alice.client, word, ids, [[root, alicePrivateId], [bobPublicId, carolPublicId]]);
    expect((await carol.client.get(`/api/card/${root}`)).status).toBe(404);
    const search = await carol.client.post('/api/card/fulltextsearch/1', { content: word });
    expect(JSON.stringify(search.json)).not.toContain(root);

    // Public again: a root of its own (the others stay where they went); nothing was lost on the way.
    expect((await alice.client.put('/api/card/update', { card_uuid: root, private: false })).status).toBe(204);
    await expectGroups(anonymous, word, ids, [[root], [bobPublicId, carolPublicId]]);
    for (const id of ids) expect((await alice.client.get(`/api/card/${id}`)).status === 200 || id === bobPrivateId).toBe(true);
    expect((await bob.client.get(`/api/card/${bobPrivateId}`)).status).toBe(200);
  });

  it('a card edited into other text leaves its duplicate group: the edited card and the copies of the old text stay findable', async () => {
    const text = uniqueText(90);
    const word = text.split(' ')[0]!;
    const root = (await createCard(alice, { card_html: html(text) })).card_metadata.id as string;
    const bobCopy = (await createCard(bob, { card_html: html(text) })).card_metadata.id as string;
    const carolCopy = (await createCard(carol, { card_html: html(text) })).card_metadata.id as string;
    await expectGroups(anonymous, word, [root, bobCopy, carolCopy], [[root, bobCopy, carolCopy]]);

    // Carol rewrites her copy: it is found by its new text, as a root of its own.
    const carolText = uniqueText(90);
    const carolWord = carolText.split(' ')[0]!;
    expect((await carol.client.put('/api/card/update', { card_uuid: carolCopy, card_html: html(carolText) })).status).toBe(204);
    // (Full-text search is typo-tolerant, so each query may also match the other texts: only the groups are compared.)
    await expectGroups(anonymous, carolWord, [carolCopy], [[carolCopy]]);
    await expectGroups(anonymous, word, [root, bobCopy], [[root, bobCopy]]);

    // Alice rewrites the root: Bob's copy of the old text is still found by that text, as a root now.
    const aliceText = uniqueText(90);
    expect((await alice.client.put('/api/card/update', { card_uuid: root, card_html: html(aliceText) })).status).toBe(204);
    await expectGroups(anonymous, word, [bobCopy], [[bobCopy]]);
    await expectGroups(anonymous, aliceText.split(' ')[0]!, [root], [[root]]);
    const deadline = Date.now() + 30_000;
    while ((await anonymous.get(`/api/card/${bobCopy}`)).json.vector_point_id === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect((await anonymous.get(`/api/card/${bobCopy}`)).json.vector_point_id).toEqual(expect.any(String));
  });

  it('a deleted root with only private copies of several authors leaves each author\'s copies findable by that author only', async () => {
    const text = uniqueText(90);
    const word = text.split(' ')[0]!;
    const root = (await createCard(alice, { card_html: html(text) })).card_metadata.id as string;
    const bob1 = (await createCard(bob, { card_html: html(text), private: true })).card_metadata.id as string;
    const carols = (await createCard(carol, { card_html: html(text), private: true })).card_metadata.id as string;
    const bob2 = (await createCard(bob, { card_html: html(text), private: true })).card_metadata.id as string;
    const ids = [root, bob1, carols, bob2];
    await expectGroups(bob.client, word, ids, [[root, bob1, bob2]]);
    expect((await alice.client.delete(`/api/card/${root}`)).status).toBe(204);
    await expectGroups(bob.client, word, ids, [[bob1, bob2]]);
    await expectGroups(carol.client, word, ids, [[carols]]);
    await expectGroups(anonymous, word, ids, []);
    await expectGroups(alice.client, word, ids, []);
  });
});

describe('GET /api/card/count', () => {
  it('counts every card, collisions and private ones included', async () => {
    const before = (await anonymous.get('/api/card/count')).json.total_count as number;
    const text = uniqueText();
    await createCard(alice, { card_html: html(text) });
    await createCard(bob, { card_html: html(text) });
    await createCard(bob, { private: true });
    const after = await anonymous.get('/api/card/count');
    expect(after.status).toBe(200);
    expect(after.json).toEqual({ total_count: before + 3 });
  });
});

describe('indexing (with the search service)', () => {
  it('a root card gets its vector_point_id once indexed; its collision keeps null', async () => {
    const text = uniqueText();
    const root = await createCard(alice, { card_html: html(text) });
    const copy = await createCard(bob, { card_html: html(text) });
    expect(copy.duplicate).toBe(true);
    const deadline = Date.now() + 30_000;
    let read = await anonymous.get(`/api/card/${root.card_metadata.id}`);
    while (read.json.vector_point_id === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      read = await anonymous.get(`/api/card/${root.card_metadata.id}`);
    }
    expect(read.json.vector_point_id).toEqual(expect.any(String));
    expect((await anonymous.get(`/api/card/${copy.card_metadata.id}`)).json.vector_point_id).toBeNull();
  });
});
