import { randomUUID } from 'node:crypto';
import { ApiClient, type ApiResponse } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp } from '../support/accounts';
import { withinOneWindow } from '../support/rate-window';

let system: RunningSystem;
const mailbox = new Mailbox();

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, PUBLIC_URL: 'http://cards.test', RATE_LIMIT_AUTH_PER_EMAIL: '10' } });
});
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

const invitationIdFrom = (text: string | undefined) => /auth\/register\/([0-9a-f-]{36})/.exec(text ?? '')![1]!;
const resetIdFrom = (text: string | undefined) => /auth\/password\/([0-9a-f-]{36})/.exec(text ?? '')![1]!;

describe('accounts and sessions', () => {
  it('invite -> mail -> register -> login -> GET /api/auth -> logout revokes the old cookie', async () => {
    const client = new ApiClient(system.baseUrl);
    const email = `Alice-${Date.now()}@Example.com`;
    expect((await client.post('/api/invitation', { email, referral_tokens: ['r1'] })).status).toBe(200);
    const mail = await mailbox.waitFor(email, /auth\/register\//);
    expect(mail.text).toContain(`http://cards.test/auth/register/`);
    expect(mail.text).toContain(`?email=${encodeURIComponent(email.toLowerCase())}`);

    const password = 'correct horse battery';
    const registered = await client.post(`/api/register/${invitationIdFrom(mail.text)}`, { password, password_confirmation: password });
    expect(registered.status).toBe(200);
    expect(registered.json).toEqual({ id: expect.any(String), email: email.toLowerCase(), username: null, website: null, visible_email: true });

    const login = await client.post('/api/auth', { email, password });
    expect(login.status).toBe(204);
    const cookie = login.setCookie.find((c) => c.startsWith('ai-editor='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).toMatch(/Expires=/);
    const maxAge = Number(/Max-Age=(\d+)/.exec(cookie)?.[1]);
    expect(maxAge).toBeGreaterThan(24 * 3600 - 60);
    expect(maxAge).toBeLessThanOrEqual(24 * 3600);

    const me = await client.get('/api/auth');
    expect(me.status).toBe(200);
    expect(me.json.id).toBe(registered.json.id);

    const oldCookie = client.cookie;
    expect((await client.delete('/api/auth')).status).toBe(204);
    const replay = new ApiClient(system.baseUrl);
    replay.cookie = oldCookie;
    const after = await replay.get('/api/auth');
    expect(after.status).toBe(401);
    expect(after.json.message).toEqual(expect.any(String));
  });

  it('an invitation works once', async () => {
    const client = new ApiClient(system.baseUrl);
    const email = `once-${Date.now()}@example.com`;
    await client.post('/api/invitation', { email, referral_tokens: [] });
    const id = invitationIdFrom((await mailbox.waitFor(email, /register/)).text);
    expect((await client.post(`/api/register/${id}`, { password: 'password1', password_confirmation: 'password1' })).status).toBe(200);
    const again = await client.post(`/api/register/${id}`, { password: 'password1', password_confirmation: 'password1' });
    expect(again.status).toBe(400);
    expect(again.json.message).toMatch(/already been used/);
  });

  it('an invitation answers the same whether or not the address has an account; the holder is told by mail', async () => {
    const client = new ApiClient(system.baseUrl);
    const email = `holder-${Date.now()}@example.com`;
    await client.post('/api/invitation', { email, referral_tokens: [] });
    const id = invitationIdFrom((await mailbox.waitFor(email, /register/)).text);
    expect((await client.post(`/api/register/${id}`, { password: 'password1', password_confirmation: 'password1' })).status).toBe(200);

    const forAccount = await client.post('/api/invitation', { email: email.toUpperCase(), referral_tokens: [] });
    const forNobody = await client.post('/api/invitation', { email: `nobody-${Date.now()}@example.com`, referral_tokens: [] });
    expect({ status: forAccount.status, body: forAccount.text }).toEqual({ status: forNobody.status, body: forNobody.text });
    expect(forAccount.status).toBe(200);
    const notice = await mailbox.waitFor(email, /already has an account/);
    expect(notice.text).toContain('http://cards.test/auth/forgot');
    expect(notice.text).not.toMatch(/auth\/register\//);
    // The account is untouched: the old password still logs in.
    expect((await client.post('/api/auth', { email, password: 'password1' })).status).toBe(204);
  });

  it('rejects bad registration input with 4xx and a message', async () => {
    const client = new ApiClient(system.baseUrl);
    const email = `bad-${Date.now()}@example.com`;
    await client.post('/api/invitation', { email, referral_tokens: [] });
    const id = invitationIdFrom((await mailbox.waitFor(email, /register/)).text);
    const short = await client.post(`/api/register/${id}`, { password: 'short', password_confirmation: 'short' });
    expect(short.status).toBe(400);
    expect(short.json.message).toMatch(/password/);
    const mismatch = await client.post(`/api/register/${id}`, { password: 'password1', password_confirmation: 'password2' });
    expect(mismatch.status).toBe(400);
    expect(mismatch.json.message).toMatch(/password_confirmation/);
    expect((await client.post(`/api/register/not-a-uuid`, { password: 'password1', password_confirmation: 'password1' })).status).toBe(400);
    // Unknown: never sent, or expired and deleted.
    expect((await client.post(`/api/register/00000000-0000-4000-8000-000000000000`, { password: 'password1', password_confirmation: 'password1' })).status).toBe(404);
    // The invitation is still good after all that.
    expect((await client.post(`/api/register/${id}`, { password: 'password1', password_confirmation: 'password1' })).status).toBe(200);
  });

  it('answers malformed bodies, wrong types and huge bodies with 4xx JSON, never 500', async () => {
    const client = new ApiClient(system.baseUrl);
    const cases = [
      await client.request('POST', '/api/auth', '{"email": '),
      await client.request('POST', '/api/auth', '[1,2,3]'),
      await client.post('/api/auth', { email: 42, password: true }),
      await client.post('/api/invitation', { email: 'not-an-email', referral_tokens: [] }),
      await client.post('/api/invitation', { email: 'x@example.com' }),
      await client.post('/api/invitation', { email: 'x@example.com', referral_tokens: 'nope' }),
      await client.request('POST', '/api/auth', JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(3_000_000) })),
      await client.post('/api/password', { password_reset_id: 'zzz', password: 'password1', password_confirmation: 'password1' }),
    ];
    for (const res of cases) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(typeof res.json.message).toBe('string');
    }
    expect(cases[0]!.status).toBe(400);
    expect(cases[6]!.status).toBe(413);
    expect((await client.get('/healthz')).status).toBe(200);
  });

  it('ignores unknown fields (tolerant reader)', async () => {
    const client = new ApiClient(system.baseUrl);
    const res = await client.post('/api/invitation', { email: `tolerant-${Date.now()}@example.com`, referral_tokens: [], from_the_future: { x: 1 } });
    expect(res.status).toBe(200);
  });

  it('one account per address however its accents are encoded (NFC or NFD): invitation, registration, login and reset agree', async () => {
    const client = new ApiClient(system.baseUrl);
    const composed = `J\u00d6rg-${Date.now()}@Ex\u00e4mple.com`;
    const decomposed = composed.normalize('NFD');
    const stored = composed.toLowerCase();
    expect((await client.post('/api/invitation', { email: decomposed, referral_tokens: [] })).status).toBe(200);
    const invitation = await mailbox.waitFor(stored, /auth\/register\//);
    const registered = await client.post(`/api/register/${invitationIdFrom(invitation.text)}`, { password: 'password1', password_confirmation: 'password1' });
    // Stored with its domain in IDNA's ASCII form (the address its mail goes to), shown as typed: in Unicode.
    expect(registered.json.email).toBe(stored);
    expect((await client.post('/api/auth', { email: composed, password: 'password1' })).status).toBe(204);
    expect((await client.post('/api/auth', { email: decomposed, password: 'password1' })).status).toBe(204);
    // The other spelling invites the same account: its holder is told they have one, no second account is offered.
    expect((await client.post('/api/invitation', { email: composed, referral_tokens: [] })).status).toBe(200);
    await mailbox.waitFor(stored, /already has an account/);
    expect((await client.get(`/api/password/${encodeURIComponent(decomposed)}`)).status).toBe(204);
    await mailbox.waitFor(stored, /auth\/password\//);
  });

  it("shows an address's domain in Unicode, however it was typed, where the address is shown; mails the ASCII form", async () => {
    const local = `idn-shown-${Date.now()}`;
    const shown = `${local}@b\u00fccher.example`;
    for (const [typed, expected] of [
      [`${local}@B\u00dcCHER.example`, shown],
      [`${local}-p@XN--BCHER-KVA.example`, `${local}-p@b\u00fccher.example`],
    ] as const) {
      const client = new ApiClient(system.baseUrl);
      expect((await client.post('/api/invitation', { email: typed, referral_tokens: [] })).status).toBe(200);
      const mail = await mailbox.waitFor(`${expected.split('@')[0]}@`, /auth\/register\//);
      // Sent to the ASCII form; the registration page shows the address the link carries.
      expect(mail.headerLines.find((h) => h.key === 'to')?.line).toBe(`To: ${expected.replace('b\u00fccher.example', 'xn--bcher-kva.example')}`);
      expect(mail.text).toContain(`?email=${encodeURIComponent(expected)}`);
      const registered = await client.post(`/api/register/${invitationIdFrom(mail.text)}`, { password: 'password1', password_confirmation: 'password1' });
      expect([registered.status, registered.json.email]).toEqual([200, expected]);
      expect((await client.post('/api/auth', { email: expected.replace('b\u00fccher', 'xn--bcher-kva'), password: 'password1' })).status).toBe(204);
      expect((await client.get('/api/auth')).json.email).toBe(expected);
      expect((await new ApiClient(system.baseUrl).get(`/api/user/${registered.json.id}/1`)).json.email).toBe(expected);
    }
  });

  it('shows a look-alike or mixed-script domain in its ASCII (xn--) form, as browsers do; the invitation is accepted', async () => {
    const local = `idn-look-alike-${Date.now()}`;
    for (const [typed, expected] of [
      [`${local}@xn--80ak6aa92e.com`, `${local}@xn--80ak6aa92e.com`],
      [`${local}-m@p\u0430ypal.com`, `${local}-m@xn--pypal-4ve.com`],
    ] as const) {
      const client = new ApiClient(system.baseUrl);
      expect((await client.post('/api/invitation', { email: typed, referral_tokens: [] })).status).toBe(200);
      const mail = await mailbox.waitFor(`${expected.split('@')[0]}@`, /auth\/register\//);
      expect(mail.text).toContain(`?email=${encodeURIComponent(expected)}`);
      const registered = await client.post(`/api/register/${invitationIdFrom(mail.text)}`, { password: 'password1', password_confirmation: 'password1' });
      expect([registered.status, registered.json.email]).toEqual([200, expected]);
      expect((await client.post('/api/auth', { email: typed, password: 'password1' })).status).toBe(204);
      expect((await client.get('/api/auth')).json.email).toBe(expected);
    }
  });

  it('login failure says "Incorrect email or password" for both unknown e-mail and wrong password', async () => {
    const user = await signUp(system.baseUrl, mailbox, 'login');
    const client = new ApiClient(system.baseUrl);
    const wrong = await client.post('/api/auth', { email: user.email, password: 'wrong password' });
    const unknown = await client.post('/api/auth', { email: 'nobody@example.com', password: 'whatever1' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.json.message).toBe('Incorrect email or password');
    expect(unknown.json.message).toBe('Incorrect email or password');
  });

  it('password reset: mail, new password works, old one stops, old sessions are revoked, link is single-use', async () => {
    const user = await signUp(system.baseUrl, mailbox, 'reset');
    const anon = new ApiClient(system.baseUrl);
    expect((await anon.get(`/api/password/${encodeURIComponent(user.email)}`)).status).toBe(204);
    expect((await anon.get(`/api/password/nobody-${Date.now()}@example.com`)).status).toBe(204);
    const mail = await mailbox.waitFor(user.email, /auth\/password\//);
    expect(mail.text).toContain('http://cards.test/auth/password/');
    const resetId = resetIdFrom(mail.text);

    const mismatch = await anon.post('/api/password', { password_reset_id: resetId, password: 'new password 1', password_confirmation: 'other' });
    expect(mismatch.status).toBe(400);
    const done = await anon.post('/api/password', { password_reset_id: resetId, password: 'new password 1', password_confirmation: 'new password 1' });
    expect(done.status).toBe(204);

    expect((await user.client.get('/api/auth')).status).toBe(401);
    expect((await anon.post('/api/auth', { email: user.email, password: user.password })).status).toBe(401);
    expect((await anon.post('/api/auth', { email: user.email, password: 'new password 1' })).status).toBe(204);
    const reused = await anon.post('/api/password', { password_reset_id: resetId, password: 'new password 2', password_confirmation: 'new password 2' });
    expect(reused.status).toBe(400);
  });

  it('a reset link cancelled because another link of the account was used says so, without claiming it was used itself', async () => {
    const user = await signUp(system.baseUrl, mailbox, 'reset-two');
    const anon = new ApiClient(system.baseUrl);
    expect((await anon.get(`/api/password/${encodeURIComponent(user.email)}`)).status).toBe(204);
    const first = resetIdFrom((await mailbox.waitFor(user.email, /auth\/password\//)).text);
    expect((await anon.get(`/api/password/${encodeURIComponent(user.email)}`)).status).toBe(204);
    const second = resetIdFrom((await mailbox.waitFor(user.email, new RegExp(`auth/password/(?!${first})`))).text);
    expect((await anon.post('/api/password', { password_reset_id: second, password: 'new password 1', password_confirmation: 'new password 1' })).status).toBe(204);
    const cancelled = await anon.post('/api/password', { password_reset_id: first, password: 'new password 2', password_confirmation: 'new password 2' });
    const reused = await anon.post('/api/password', { password_reset_id: second, password: 'new password 2', password_confirmation: 'new password 2' });
    expect(cancelled.status).toBe(400);
    expect(cancelled.json.message).toMatch(/another reset link/);
    // The used link answers the same words: the answer does not tell which link was the one used.
    expect(reused.json).toEqual(cancelled.json);
  });

  it('rate-limits reset requests per e-mail address with 429 JSON', async () => {
    const client = new ApiClient(system.baseUrl);
    const { email, statuses, limited } = await withinOneWindow(60_000, async () => {
      const email = `limited-${randomUUID()}@example.com`;
      const statuses: number[] = [];
      let limited: ApiResponse | undefined;
      for (let i = 0; i < 11; i++) {
        const res = await client.get(`/api/password/${i % 2 === 0 ? email : email.toUpperCase()}`);
        statuses.push(res.status);
        if (res.status === 429) limited = res;
      }
      return { email, statuses, limited };
    });
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(204));
    expect(statuses[10]).toBe(429);
    expect(limited!.json).toEqual({ message: expect.any(String) });
    expect((await client.get(`/api/password/other-${email}`)).status).toBe(204);
  });

  it('counts the NFC and NFD spellings of an address against one per-address limit', async () => {
    const client = new ApiClient(system.baseUrl);
    const statuses = await withinOneWindow(60_000, async () => {
      const email = `j\u00f6rg-limited-${randomUUID()}@example.com`;
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await client.get(`/api/password/${encodeURIComponent(i % 2 === 0 ? email : email.normalize('NFD'))}`)).status);
      return statuses;
    });
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(204));
    expect(statuses[10]).toBe(429);
  });

  it('takes a final dot in the domain as the same address (one account, one per-address count); refuses an empty label', async () => {
    const user = await signUp(system.baseUrl, mailbox, 'final-dot');
    const client = new ApiClient(system.baseUrl);
    // The same mailbox: no second account is offered, its holder is told they have one.
    const toUser = () => mailbox.messages.filter((mail) => JSON.stringify(mail.to).toLowerCase().includes(user.email));
    for (const spelling of [`${user.email}.`, `${user.email.toUpperCase()}.`]) {
      const before = toUser().length;
      expect((await client.post('/api/invitation', { email: spelling, referral_tokens: [] })).status).toBe(200);
      await mailbox.waitFor(user.email, /already has an account/);
      for (let i = 0; i < 50 && toUser().length === before; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(toUser().slice(before).map((mail) => /auth\/register\//.test(mail.text ?? ''))).toEqual([false]);
    }
    expect((await client.post('/api/auth', { email: `${user.email}.`, password: user.password })).status).toBe(204);
    for (const email of [`${user.email}..`, user.email.replace('@', '@a..'), user.email.replace('@', '@.')]) {
      const refused = await client.post('/api/invitation', { email, referral_tokens: [] });
      expect({ email, status: refused.status, message: refused.json.message }).toEqual({ email, status: 400, message: expect.stringMatching(/^email: the domain has an empty part/) });
    }
    const statuses = await withinOneWindow(60_000, async () => {
      const local = `final-dot-limited-${randomUUID()}`;
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await client.get(`/api/password/${encodeURIComponent(i % 2 === 0 ? `${local}@example.com.` : `${local}@example.com`)}`)).status);
      return statuses;
    });
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(204));
    expect(statuses[10]).toBe(429);
  });

  it("counts an address's Unicode and punycode domain spellings against one per-address limit", async () => {
    const client = new ApiClient(system.baseUrl);
    const statuses = await withinOneWindow(60_000, async () => {
      const local = `idn-limited-${randomUUID()}`;
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await client.get(`/api/password/${encodeURIComponent(i % 2 === 0 ? `${local}@ex\u00e4mple.com` : `${local}@xn--exmple-cua.com`)}`)).status);
      return statuses;
    });
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(204));
    expect(statuses[10]).toBe(429);
  });

  it('counts reset requests by GET and by POST against one per-address limit', async () => {
    const client = new ApiClient(system.baseUrl);
    const statuses = await withinOneWindow(60_000, async () => {
      const email = `both-ways-${randomUUID()}@example.com`;
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) {
        statuses.push((i % 2 === 0 ? await client.get(`/api/password/${email}`) : await client.post('/api/password', { email })).status);
      }
      return statuses;
    });
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(204));
    expect(statuses[10]).toBe(429);
  });

  it('POST /api/password carrying a new password without its reset id is 400, not a reset mail request', async () => {
    const user = await signUp(system.baseUrl, mailbox, 'reset-no-id');
    const anon = new ApiClient(system.baseUrl);
    for (const body of [
      { email: user.email, password: 'changed password', password_confirmation: 'changed password' },
      { email: user.email, password: 'changed password' },
      { email: user.email, password_confirmation: 'changed password' },
      { password: 'changed password', password_confirmation: 'changed password' },
    ]) {
      const res = await anon.post('/api/password', body);
      expect({ body, status: res.status, message: res.json.message }).toEqual({ body, status: 400, message: expect.stringMatching(/^password_reset_id: is required/) });
    }
    expect((await anon.post('/api/auth', { email: user.email, password: user.password })).status).toBe(204);
    // Only the e-mail (and fields of nothing else) still asks for the mail.
    expect((await anon.post('/api/password', { email: user.email, from_the_future: 1 })).status).toBe(204);
    await mailbox.waitFor(user.email, /auth\/password\//);
  });

  it('an address of 254 characters is invited with spaces around it, one of 255 is refused', async () => {
    const client = new ApiClient(system.baseUrl);
    // Within SMTP's limits too: a local part of at most 64 characters, domain labels of at most 63.
    const address = (length: number) => {
      const local = `pad-${Date.now()}`;
      const labels = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.`;
      return `${local}@${labels}${'d'.repeat(length - local.length - 1 - labels.length - 4)}.com`;
    };
    const longest = address(254);
    expect(longest).toHaveLength(254);
    expect((await client.post('/api/invitation', { email: `  ${longest}\t`, referral_tokens: [] })).status).toBe(200);
    await mailbox.waitFor(longest, /auth\/register\//);
    const tooLong = await client.post('/api/invitation', { email: ` ${address(255)} `, referral_tokens: [] });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.message).toMatch(/^email: /);
  });

  it('a username too long gets the one username message whatever its length', async () => {
    const a = await signUp(system.baseUrl, mailbox, 'long-name');
    const messages = new Set<string>();
    for (const length of [2, 33, 64, 65, 500]) {
      const res = await a.client.put('/api/user', { username: 'n'.repeat(length) });
      expect(res.status).toBe(400);
      messages.add(res.json.message);
    }
    expect([...messages]).toEqual(['username: must be 3 to 32 letters or digits of one script (Han may go with Hiragana, Katakana or Hangul), "_" or "-"']);
  });

  it('PUT /api/user validates and updates the profile; username is unique; e-mail hidden only behind a username', async () => {
    const a = await signUp(system.baseUrl, mailbox, 'profile-a');
    const b = await signUp(system.baseUrl, mailbox, 'profile-b');
    expect((await new ApiClient(system.baseUrl).put('/api/user', { username: 'nobody' })).status).toBe(401);
    expect((await a.client.put('/api/user', { visible_email: false })).status).toBe(400);
    expect((await a.client.put('/api/user', { username: 'ab' })).status).toBe(400);
    expect((await a.client.put('/api/user', { username: 'has space' })).status).toBe(400);
    expect((await a.client.put('/api/user', { website: 'ftp://example.com' })).status).toBe(400);
    expect((await a.client.put('/api/user', { visible_email: 'no' })).status).toBe(400);
    const name = `alice_${Date.now()}`;
    const updated = await a.client.put('/api/user', { username: name, website: 'https://alice.example', visible_email: false });
    expect(updated.status).toBe(200);
    expect(updated.json).toEqual({ id: a.id, email: a.email, username: name, website: 'https://alice.example', visible_email: false });
    const taken = await b.client.put('/api/user', { username: name.toUpperCase() });
    expect(taken.status).toBe(409);
    expect((await a.client.get('/api/auth')).json.username).toBe(name);
    // A website with credentials or a host that is no DNS name is refused naming the field; the profile keeps its website.
    for (const website of ['https://u:p@x.com', 'https://x..com', 'https://-x-.com', `https://${'a'.repeat(64)}.com`, 'https://paypal.com\u2215login', 'https://аррӏе.com']) {
      const refused = await a.client.put('/api/user', { website });
      expect({ website, status: refused.status, message: refused.json.message }).toEqual({ website, status: 400, message: expect.stringMatching(/^website: must be an http or https URL (without a user name or password|whose host is a domain name|whose host reads as the site it opens)/) });
    }
    expect((await a.client.get('/api/auth')).json.website).toBe('https://alice.example');
    // The strings "true" and "false" pass, as for every other boolean of the interface (is_public, private, vote).
    expect((await a.client.put('/api/user', { visible_email: 'true' })).json.visible_email).toBe(true);
    expect((await a.client.put('/api/user', { visible_email: 'false' })).json.visible_email).toBe(false);
  });

  it('usernames in any one script: stored in NFC, unique under Unicode case folding, look-alikes refused with a 400', async () => {
    const a = await signUp(system.baseUrl, mailbox, 'unicode-a');
    const b = await signUp(system.baseUrl, mailbox, 'unicode-b');
    const tag = String(Date.now() % 100000);
    const korean = `\uae40\ucca0\uc218${tag}`; // 김철수
    expect((await a.client.put('/api/user', { username: korean })).json).toMatchObject({ username: korean });
    expect((await b.client.put('/api/user', { username: korean })).status).toBe(409);
    // "Zoë" sent decomposed is stored composed; "ZOË" is the same name.
    const zoe = `Zo\u00eb${tag}`;
    expect((await a.client.put('/api/user', { username: zoe.normalize('NFD') })).json).toMatchObject({ username: zoe });
    expect((await a.client.get('/api/auth')).json.username).toBe(zoe);
    const taken = await b.client.put('/api/user', { username: `ZO\u00cb${tag}` });
    expect(taken.status).toBe(409);
    expect(taken.json.message).toBe('username: already taken');
    const strasse = `Stra\u00dfe${tag}`;
    expect((await b.client.put('/api/user', { username: strasse })).json).toMatchObject({ username: strasse });
    expect((await a.client.put('/api/user', { username: `STRASSE${tag}` })).status).toBe(409);
    // A name wholly in another script that looks like a taken one is the same name (UTS #39 confusable skeleton).
    expect((await a.client.put('/api/user', { username: `coco${tag}` })).json).toMatchObject({ username: `coco${tag}` });
    const cyrillic = await b.client.put('/api/user', { username: `\u0441\u043e\u0441\u043e${tag}` }); // сосо
    expect([cyrillic.status, cyrillic.json.message]).toEqual([409, 'username: already taken']);
    // "pаypal" with a Cyrillic а, a zero-width joiner, fullwidth letters: refused, each with its reason.
    const refused: Array<[unknown, RegExp]> = [
      ['p\u0430ypal', /^username: must be written in one script .*Latin "p" \(U\+0070\) and Cyrillic "\u0430" \(U\+0430\)$/],
      ['ad\u200dmin', /^username: must not contain invisible characters \(found U\+200D\)$/],
      ['\uff41\uff44\uff4d\uff49\uff4e', /^username: must not contain compatibility characters/],
      ['12\u0663', /^username: must not mix digits of different systems/],
      ['\u0645\u0640\u062d\u0645\u062f', /^username: must not contain the Arabic tatweel "\u0640" \(U\+0640\)/], // مـحمد
      [42, /^username: must be a string$/],
    ];
    for (const [username, message] of refused) {
      const res = await b.client.put('/api/user', { username });
      expect([username, res.status, res.json.message]).toEqual([username, 400, expect.stringMatching(message)]);
    }
    expect((await b.client.get('/api/auth')).json.username).toBe(strasse);
  });
});
