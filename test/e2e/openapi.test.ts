import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';
import { ResponseValidator, eventually, typedClient } from './openapi-support';
import type { CardsClient } from '@cards/client';

let system: RunningSystem;
let mailbox: Mailbox;
let alice: TestUser;
let bob: TestUser;
let validator: ResponseValidator;
const problems: string[] = [];

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'oa-alice'), signUp(system.baseUrl, mailbox, 'oa-bob')]);
  validator = await ResponseValidator.load(system.baseUrl);
}, 120_000);

afterAll(async () => {
  await system?.stop();
  await mailbox?.stop();
});

type Answer = { data?: unknown; error?: unknown; response: Response };

/** Records whether a real answer matches the document for `METHOD /path/{template}`; returns it for further use. */
async function checked<A extends Answer>(method: string, path: string, call: Promise<A>): Promise<A> {
  const answer = await call;
  problems.push(...validator.problems(method, path, answer.response.status, answer.data ?? answer.error, answer.response.headers.get('content-type')));
  return answer;
}

describe('the served document', () => {
  it('is the committed one the typed client was generated from', async () => {
    const served = (await (await fetch(`${system.baseUrl}/api/openapi.json`)).json()) as { openapi: string };
    const committed = JSON.parse(readFileSync(join(__dirname, '../../packages/client/openapi.json'), 'utf8'));
    expect(served).toEqual(committed);
    expect(served.openapi).toBe('3.1.0');
  });

  it('has a docs page built from npm assets only (no CDN)', async () => {
    const page = await fetch(`${system.baseUrl}/api/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const text = await page.text();
    const urls = [...text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(urls.length).toBeGreaterThanOrEqual(3);
    for (const url of urls) {
      expect(url.startsWith('/api/docs/')).toBe(true);
      const asset = await fetch(`${system.baseUrl}${url}`);
      expect(asset.status).toBe(200);
      await asset.arrayBuffer();
    }
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const other = await fetch(`${system.baseUrl}/api/docs/swagger-initializer.js`);
    expect(other.status).toBe(404);
  });
});

describe('real responses validate against the document', () => {
  let api: CardsClient;
  let bobApi: CardsClient;
  let anon: CardsClient;

  beforeAll(() => {
    api = typedClient(system.baseUrl, alice);
    bobApi = typedClient(system.baseUrl, bob);
    anon = typedClient(system.baseUrl);
  });

  it('accounts, cards, votes, users, collections, search, notifications, files and errors', async () => {
    await checked('GET', '/api/auth', api.GET('/api/auth'));
    await checked('GET', '/api/auth', anon.GET('/api/auth'));
    await checked('PUT', '/api/user', api.PUT('/api/user', { body: { username: `alice_${Date.now() % 100000}`, website: 'https://alice.example', visible_email: false } }));
    await checked('PUT', '/api/user', api.PUT('/api/user', { body: { website: 'not a url' } }));
    await checked('POST', '/api/invitation', anon.POST('/api/invitation', { body: { email: 'not-an-email', referral_tokens: [] } }));
    await checked('GET', '/api/password/{email}', anon.GET('/api/password/{email}', { params: { path: { email: 'nobody@example.com' } } }));
    await checked('POST', '/api/auth', anon.POST('/api/auth', { body: { email: alice.email, password: 'wrong password' } }));

    const text = uniqueText(90);
    const created = await checked('POST', '/api/card', api.POST('/api/card', { body: { card_html: html(text), link: 'https://example.com/a', private: false, tag_set: ['alpha', 'beta'] } }));
    expect(created.response.status).toBe(200);
    const cardId = created.data!.card_metadata.id;
    await checked('POST', '/api/card', api.POST('/api/card', { body: { card_html: '<p>too short</p>', link: '', private: false } }));
    await checked('POST', '/api/card', anon.POST('/api/card', { body: { card_html: html(uniqueText()), link: '', private: false } }));
    const privateCard = await checked('POST', '/api/card', api.POST('/api/card', { body: { card_html: html(uniqueText()), link: '', private: true } }));
    await checked('GET', '/api/card/{card_id}', anon.GET('/api/card/{card_id}', { params: { path: { card_id: cardId } } }));
    await checked('GET', '/api/card/{card_id}', bobApi.GET('/api/card/{card_id}', { params: { path: { card_id: privateCard.data!.card_metadata.id } } }));
    await checked('GET', '/api/card/{card_id}', api.GET('/api/card/{card_id}', { params: { path: { card_id: 'not-a-uuid' } } }));
    await checked('GET', '/api/card/count', anon.GET('/api/card/count'));
    await checked('PUT', '/api/card/update', api.PUT('/api/card/update', { body: { card_uuid: cardId, link: 'https://example.com/b' } }));
    await checked('PUT', '/api/card/update', bobApi.PUT('/api/card/update', { body: { card_uuid: cardId, private: true } }));

    const vote = await checked('POST', '/api/vote', bobApi.POST('/api/vote', { body: { card_metadata_id: cardId, vote: true } }));
    expect(vote.response.status).toBe(200);
    await checked('GET', '/api/card/{card_id}', bobApi.GET('/api/card/{card_id}', { params: { path: { card_id: cardId } } }));
    await checked('GET', '/api/top_users/{page}', anon.GET('/api/top_users/{page}', { params: { path: { page: 1 } } }));
    await checked('GET', '/api/user/{user_id}/{page}', bobApi.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: alice.id, page: 1 } } }));
    await checked('GET', '/api/user/{user_id}/{page}', api.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: alice.id, page: 1 } } }));
    await checked('DELETE', '/api/vote/{card_id}', bobApi.DELETE('/api/vote/{card_id}', { params: { path: { card_id: cardId } } }));
    await checked('DELETE', '/api/vote/{card_id}', bobApi.DELETE('/api/vote/{card_id}', { params: { path: { card_id: cardId } } }));

    const made = await checked('POST', '/api/card_collection', api.POST('/api/card_collection', { body: { name: 'Reading list', is_public: true, description: 'things' } }));
    expect(made.response.status).toBe(204);
    const collectionId = made.response.headers.get('location')!.split('/').pop()!;
    await checked('POST', '/api/card_collection/{collection_id}', api.POST('/api/card_collection/{collection_id}', { params: { path: { collection_id: collectionId } }, body: { card_metadata_id: cardId } }));
    await checked('GET', '/api/card_collection', api.GET('/api/card_collection'));
    await checked('GET', '/api/user/collections/{user_id}', anon.GET('/api/user/collections/{user_id}', { params: { path: { user_id: alice.id } } }));
    await checked('GET', '/api/card_collection/{collection_id}/{page}', anon.GET('/api/card_collection/{collection_id}/{page}', { params: { path: { collection_id: collectionId, page: 1 } } }));
    await checked('POST', '/api/card_collection/bookmark', api.POST('/api/card_collection/bookmark', { body: { collection_ids: cardId } }));
    await checked('PUT', '/api/card_collection', api.PUT('/api/card_collection', { body: { collection_id: collectionId, description: 'renamed' } }));
    await checked('PUT', '/api/card_collection', bobApi.PUT('/api/card_collection', { body: { collection_id: collectionId, description: 'mine now' } }));

    // Search answers once the index has caught up with the new card.
    const word = text.split(' ')[0]!;
    await eventually('the new card in full-text search', async () => {
      const res = await checked('POST', '/api/card/fulltextsearch/{page}', anon.POST('/api/card/fulltextsearch/{page}', { params: { path: { page: 1 } }, body: { content: word } }));
      return (res.data?.score_cards ?? []).some((e) => e.metadata[0]!.id === cardId);
    });
    await checked('POST', '/api/card/search/{page}', anon.POST('/api/card/search/{page}', { params: { path: { page: 1 } }, body: { content: text.slice(0, 200), tag_set: ['alpha'] } }));
    await checked('POST', '/api/card/search/{page}', anon.POST('/api/card/search/{page}', { params: { path: { page: 0 } }, body: { content: 'x' } }));
    await eventually('the card in collection search', async () => {
      const res = await checked('POST', '/api/card_collection/fulltextsearch/{page}', anon.POST('/api/card_collection/fulltextsearch/{page}', { params: { path: { page: 1 } }, body: { content: word, collection_id: collectionId } }));
      return (res.data?.bookmarks ?? []).length > 0;
    });
    await checked('POST', '/api/card_collection/search/{page}', anon.POST('/api/card_collection/search/{page}', { params: { path: { page: 1 } }, body: { content: text.slice(0, 100), collection_id: collectionId } }));

    await checked('DELETE', '/api/card_collection/{collection_id}', api.DELETE('/api/card_collection/{collection_id}', { params: { path: { collection_id: collectionId } }, body: { card_metadata_id: cardId } }));
    await eventually('a collection-created notification', async () => {
      const res = await checked('GET', '/api/notifications', api.GET('/api/notifications'));
      return (res.data ?? []).length > 0;
    });
    const list = await api.GET('/api/notifications');
    await checked('PUT', '/api/notifications', api.PUT('/api/notifications', { body: { notification_id: list.data![0]!.id } }));
    await checked('PUT', '/api/notifications/all', api.PUT('/api/notifications/all'));
    await checked('DELETE', '/api/card_collection', api.DELETE('/api/card_collection', { body: { collection_id: collectionId } }));

    const bytes = readFileSync(join(__dirname, '../fixtures/documents/short.odt'));
    const upload = await checked('POST', '/api/file', api.POST('/api/file', { body: { base64_docx_file: bytes.toString('base64url'), file_name: 'short.odt', file_mime_type: 'application/vnd.oasis.opendocument.text', private: false } }));
    expect(upload.response.status).toBe(200);
    const fileId = upload.data!.id;
    await checked('POST', '/api/file', api.POST('/api/file', { body: { base64_docx_file: Buffer.from('plain text').toString('base64url'), file_name: 'x.pdf', file_mime_type: 'application/pdf', private: false } }));
    await checked('GET', '/api/file/{file_id}', anon.GET('/api/file/{file_id}', { params: { path: { file_id: fileId } } }));
    await checked('GET', '/api/user/files/{user_id}', anon.GET('/api/user/files/{user_id}', { params: { path: { user_id: alice.id } } }));
    // The document declares the download as any media type (*/*): the file's own MIME type comes back, read as bytes.
    const download = await anon.GET('/api/file/{file_id}/download', { params: { path: { file_id: fileId } }, parseAs: 'arrayBuffer' });
    expect(download.response.status).toBe(200);
    expect(download.response.headers.get('content-type')).toMatch(/^application\/vnd\.oasis\.opendocument\.text\b/);
    expect(Buffer.from(download.data!).equals(bytes)).toBe(true);
    await checked('PUT', '/api/file', api.PUT('/api/file', { body: { file_id: fileId, private: true } }));
    await checked('GET', '/api/file/{file_id}', anon.GET('/api/file/{file_id}', { params: { path: { file_id: fileId } } }));
    await checked('DELETE', '/api/file/{file_id}', bobApi.DELETE('/api/file/{file_id}', { params: { path: { file_id: fileId } } }));
    await checked('DELETE', '/api/file/{file_id}', api.DELETE('/api/file/{file_id}', { params: { path: { file_id: fileId } } }));

    await checked('DELETE', '/api/card/{card_id}', bobApi.DELETE('/api/card/{card_id}', { params: { path: { card_id: cardId } } }));
    await checked('DELETE', '/api/card/{card_id}', api.DELETE('/api/card/{card_id}', { params: { path: { card_id: cardId } } }));
    await checked('GET', '/healthz', anon.GET('/healthz'));

    expect(problems).toEqual([]);
    // Success and error answers of most operations were seen.
    expect(validator.checked.size).toBeGreaterThan(45);
  }, 120_000);
});
