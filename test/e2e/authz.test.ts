import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CardsClient } from '@cards/client';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';
import { eventually, typedClient } from './openapi-support';

// Every route x {anonymous, another user, owner}, then a sweep for private data in every listing, and the
// cross-origin defences (CSRF Origin check, CORS, headers, cookie flags, no internals, no secrets in logs).

const APP_ORIGIN = 'https://app.example.test';
let system: RunningSystem;
let mailbox: Mailbox;
let alice: TestUser; // the owner
let bob: TestUser; // another user
const ODT = readFileSync(join(__dirname, '../fixtures/documents/short.odt'));

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  // debug logging: the log check below must see everything the services would ever write.
  system = await startSystem({ env: { SMTP_URL: mailbox.url, CORS_ORIGINS: APP_ORIGIN, LOG_LEVEL: 'debug' } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'authz-owner'), signUp(system.baseUrl, mailbox, 'authz-other')]);
}, 120_000);

afterAll(async () => {
  await system?.stop();
  await mailbox?.stop();
});

type Actor = 'anonymous' | 'other' | 'owner';
type Call = (api: CardsClient, actor: Actor) => Promise<{ response: Response; error?: unknown }>;
interface Row {
  route: string;
  what: string;
  call: Call;
  expect: Record<Actor, number>;
}

const all = (status: number) => ({ anonymous: status, other: status, owner: status });
const authed = (status: number) => ({ anonymous: 401, other: status, owner: status });
/** Someone else's visible resource: 403 to change; private: 404 (its existence is not revealed). */
const ownVisible = (status: number) => ({ anonymous: 401, other: 403, owner: status });
const ownPrivate = (status: number) => ({ anonymous: 401, other: 404, owner: status });

async function newCard(api: CardsClient, isPrivate: boolean): Promise<string> {
  const res = await api.POST('/api/card', { body: { card_html: html(uniqueText()), link: '', private: isPrivate } });
  if (res.response.status !== 200) throw new Error(`card: ${res.response.status} ${JSON.stringify(res.error)}`);
  return res.data!.card_metadata.id;
}

async function newCollection(api: CardsClient, isPublic: boolean, name = 'c'): Promise<string> {
  const res = await api.POST('/api/card_collection', { body: { name, is_public: isPublic } });
  if (res.response.status !== 204) throw new Error(`collection: ${res.response.status} ${JSON.stringify(res.error)}`);
  return res.response.headers.get('location')!.split('/').pop()!;
}

async function newFile(api: CardsClient, isPrivate: boolean): Promise<string> {
  const res = await api.POST('/api/file', { body: { base64_docx_file: ODT.toString('base64url'), file_name: 'short.odt', file_mime_type: 'application/vnd.oasis.opendocument.text', private: isPrivate } });
  if (res.response.status !== 200) throw new Error(`file: ${res.response.status} ${JSON.stringify(res.error)}`);
  return res.data!.id;
}

describe('authorization matrix', () => {
  const clients = {} as Record<Actor, CardsClient>;
  const rows: Row[] = [];

  beforeAll(async () => {
    clients.anonymous = typedClient(system.baseUrl);
    clients.other = typedClient(system.baseUrl, bob);
    clients.owner = typedClient(system.baseUrl, alice);
    const owner = clients.owner;
    const [pubCard, privCard, pubCardDel, privCardDel] = await Promise.all([newCard(owner, false), newCard(owner, true), newCard(owner, false), newCard(owner, true)]);
    const [pubColl, privColl, pubCollDel, privCollDel] = [await newCollection(owner, true), await newCollection(owner, false), await newCollection(owner, true), await newCollection(owner, false)];
    const [pubFile, privFile, pubFileDel, privFileDel] = await Promise.all([newFile(owner, false), newFile(owner, true), newFile(owner, false), newFile(owner, true)]);
    let notificationId = '';
    await eventually('a notification for the owner', async () => {
      const list = await owner.GET('/api/notifications');
      notificationId = list.data?.[0]?.id ?? '';
      return notificationId !== '';
    });
    const card = (id: string) => ({ params: { path: { card_id: id } } });
    const coll = (id: string, page?: number) => ({ params: { path: { collection_id: id, page: page ?? 1 } } });
    const file = (id: string) => ({ params: { path: { file_id: id } } });
    const page1 = { params: { path: { page: 1 } } };
    const search = { content: 'river mountain library' };
    const r = (route: string, what: string, expect: Record<Actor, number>, call: Call) => rows.push({ route, what, expect, call });

    r('POST /api/invitation', 'a new address', all(200), (c) => c.POST('/api/invitation', { body: { email: `inv-${Math.random().toString(36).slice(2)}@example.com`, referral_tokens: [] } }));
    r('POST /api/register/{invitation_id}', 'an unknown invitation', all(404), (c) => c.POST('/api/register/{invitation_id}', { params: { path: { invitation_id: '00000000-0000-4000-8000-000000000000' } }, body: { password: 'long enough pw', password_confirmation: 'long enough pw' } }));
    r('POST /api/auth', 'a wrong password', all(401), (c) => c.POST('/api/auth', { body: { email: alice.email, password: 'not the password' } }));
    r('GET /api/auth', 'who am I', authed(200), (c) => c.GET('/api/auth'));
    r('GET /api/password/{email}', 'reset mail', all(204), (c) => c.GET('/api/password/{email}', { params: { path: { email: 'nobody@example.com' } } }));
    r('POST /api/password', 'an unknown reset id', all(404), (c) => c.POST('/api/password', { body: { password_reset_id: '00000000-0000-4000-8000-000000000000', password: 'long enough pw', password_confirmation: 'long enough pw' } }));
    r('PUT /api/user', 'own profile', authed(200), (c) => c.PUT('/api/user', { body: { website: 'https://example.com/me' } }));

    r('POST /api/card', 'create', authed(200), (c) => c.POST('/api/card', { body: { card_html: html(uniqueText()), link: '', private: false } }));
    r('GET /api/card/count', 'count', all(200), (c) => c.GET('/api/card/count'));
    r('GET /api/card/{card_id}', 'public card', all(200), (c) => c.GET('/api/card/{card_id}', card(pubCard)));
    r('GET /api/card/{card_id}', 'private card', { anonymous: 404, other: 404, owner: 200 }, (c) => c.GET('/api/card/{card_id}', card(privCard)));
    r('PUT /api/card/update', 'public card', ownVisible(204), (c) => c.PUT('/api/card/update', { body: { card_uuid: pubCard, link: 'https://example.com/x' } }));
    r('PUT /api/card/update', 'private card', ownPrivate(204), (c) => c.PUT('/api/card/update', { body: { card_uuid: privCard, link: 'https://example.com/y' } }));
    r('DELETE /api/card/{card_id}', 'public card', ownVisible(204), (c) => c.DELETE('/api/card/{card_id}', card(pubCardDel)));
    r('DELETE /api/card/{card_id}', 'private card', ownPrivate(204), (c) => c.DELETE('/api/card/{card_id}', card(privCardDel)));

    r('POST /api/vote', 'public card', authed(200), (c) => c.POST('/api/vote', { body: { card_metadata_id: pubCard, vote: true } }));
    r('POST /api/vote', 'private card (own: 400, private cards take no votes)', { anonymous: 401, other: 404, owner: 400 }, (c) => c.POST('/api/vote', { body: { card_metadata_id: privCard, vote: true } }));
    r('DELETE /api/vote/{card_id}', 'own vote', authed(204), (c) => c.DELETE('/api/vote/{card_id}', card(pubCard)));
    r('GET /api/user/{user_id}/{page}', "owner's page", all(200), (c) => c.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: alice.id, page: 1 } } }));
    r('GET /api/top_users/{page}', 'first page', all(200), (c) => c.GET('/api/top_users/{page}', page1));

    r('POST /api/card/search/{page}', 'semantic', all(200), (c) => c.POST('/api/card/search/{page}', { ...page1, body: search }));
    r('POST /api/card/fulltextsearch/{page}', 'full text', all(200), (c) => c.POST('/api/card/fulltextsearch/{page}', { ...page1, body: search }));
    r('POST /api/card_collection/search/{page}', 'public collection', all(200), (c) => c.POST('/api/card_collection/search/{page}', { ...page1, body: { ...search, collection_id: pubColl } }));
    r('POST /api/card_collection/search/{page}', 'private collection', { anonymous: 404, other: 404, owner: 200 }, (c) => c.POST('/api/card_collection/search/{page}', { ...page1, body: { ...search, collection_id: privColl } }));
    r('POST /api/card_collection/fulltextsearch/{page}', 'public collection', all(200), (c) => c.POST('/api/card_collection/fulltextsearch/{page}', { ...page1, body: { ...search, collection_id: pubColl } }));
    r('POST /api/card_collection/fulltextsearch/{page}', 'private collection', { anonymous: 404, other: 404, owner: 200 }, (c) => c.POST('/api/card_collection/fulltextsearch/{page}', { ...page1, body: { ...search, collection_id: privColl } }));

    r('POST /api/card_collection', 'create', authed(204), (c) => c.POST('/api/card_collection', { body: { name: 'mine', is_public: false } }));
    r('GET /api/card_collection', 'own collections', authed(200), (c) => c.GET('/api/card_collection'));
    r('GET /api/user/collections/{user_id}', "owner's collections", all(200), (c) => c.GET('/api/user/collections/{user_id}', { params: { path: { user_id: alice.id } } }));
    r('GET /api/card_collection/{collection_id}/{page}', 'public collection', all(200), (c) => c.GET('/api/card_collection/{collection_id}/{page}', coll(pubColl)));
    r('GET /api/card_collection/{collection_id}/{page}', 'private collection', { anonymous: 404, other: 404, owner: 200 }, (c) => c.GET('/api/card_collection/{collection_id}/{page}', coll(privColl)));
    r('POST /api/card_collection/{collection_id}', 'add to public collection', ownVisible(204), (c) => c.POST('/api/card_collection/{collection_id}', { ...coll(pubColl), body: { card_metadata_id: pubCard } }));
    r('POST /api/card_collection/{collection_id}', 'add to private collection', ownPrivate(204), (c) => c.POST('/api/card_collection/{collection_id}', { ...coll(privColl), body: { card_metadata_id: pubCard } }));
    r('POST /api/card_collection/bookmark', 'lookup', authed(200), (c) => c.POST('/api/card_collection/bookmark', { body: { collection_ids: `${pubCard},${privCard}` } }));
    r('DELETE /api/card_collection/{collection_id}', 'remove from public collection', ownVisible(204), (c) => c.DELETE('/api/card_collection/{collection_id}', { ...coll(pubColl), body: { card_metadata_id: pubCard } }));
    r('DELETE /api/card_collection/{collection_id}', 'remove from private collection', ownPrivate(204), (c) => c.DELETE('/api/card_collection/{collection_id}', { ...coll(privColl), body: { card_metadata_id: pubCard } }));
    r('PUT /api/card_collection', 'public collection', ownVisible(204), (c) => c.PUT('/api/card_collection', { body: { collection_id: pubColl, description: 'd' } }));
    r('PUT /api/card_collection', 'private collection', ownPrivate(204), (c) => c.PUT('/api/card_collection', { body: { collection_id: privColl, description: 'd' } }));
    r('DELETE /api/card_collection', 'public collection', ownVisible(204), (c) => c.DELETE('/api/card_collection', { body: { collection_id: pubCollDel } }));
    r('DELETE /api/card_collection', 'private collection', ownPrivate(204), (c) => c.DELETE('/api/card_collection', { body: { collection_id: privCollDel } }));

    r('POST /api/file', 'upload', authed(200), (c) => c.POST('/api/file', { body: { base64_docx_file: ODT.toString('base64url'), file_name: 'short.odt', file_mime_type: 'application/vnd.oasis.opendocument.text', private: true } }));
    r('GET /api/file/{file_id}', 'public file', all(200), (c) => c.GET('/api/file/{file_id}', file(pubFile)));
    r('GET /api/file/{file_id}', 'private file', { anonymous: 404, other: 404, owner: 200 }, (c) => c.GET('/api/file/{file_id}', file(privFile)));
    r('GET /api/file/{file_id}/download', 'public file', all(200), (c) => c.GET('/api/file/{file_id}/download', { ...file(pubFile), parseAs: 'arrayBuffer' }));
    r('GET /api/file/{file_id}/download', 'private file', { anonymous: 404, other: 404, owner: 200 }, (c) => c.GET('/api/file/{file_id}/download', { ...file(privFile), parseAs: 'arrayBuffer' }));
    r('GET /api/user/files/{user_id}', "owner's files", all(200), (c) => c.GET('/api/user/files/{user_id}', { params: { path: { user_id: alice.id } } }));
    r('PUT /api/file', 'public file', ownVisible(204), (c) => c.PUT('/api/file', { body: { file_id: pubFile, private: false } }));
    r('PUT /api/file', 'private file', ownPrivate(204), (c) => c.PUT('/api/file', { body: { file_id: privFile, private: true } }));
    r('DELETE /api/file/{file_id}', 'public file', ownVisible(204), (c) => c.DELETE('/api/file/{file_id}', file(pubFileDel)));
    r('DELETE /api/file/{file_id}', 'private file', ownPrivate(204), (c) => c.DELETE('/api/file/{file_id}', file(privFileDel)));

    r('GET /api/notifications', 'own list', authed(200), (c) => c.GET('/api/notifications'));
    r('PUT /api/notifications', "the owner's notification", ownPrivate(204), (c) => c.PUT('/api/notifications', { body: { notification_id: notificationId } }));
    r('PUT /api/notifications/all', 'own', authed(204), (c) => c.PUT('/api/notifications/all'));

    r('GET /api/openapi.json', 'document', all(200), (c) => c.GET('/api/openapi.json'));
    r('GET /api/docs', 'docs page', all(200), (c) => c.GET('/api/docs', { parseAs: 'text' }));
    r('GET /healthz', 'health', all(200), (c) => c.GET('/healthz'));
    r('GET /metrics', 'metrics', all(200), (c) => c.GET('/metrics', { parseAs: 'text' }));
    // Last: it ends the sessions.
    r('DELETE /api/auth', 'log out', all(204), (c) => c.DELETE('/api/auth'));
  }, 120_000);

  it('covers every operation of the OpenAPI document', async () => {
    const doc = (await (await fetch(`${system.baseUrl}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
    expect([...new Set(rows.map((row) => row.route))].sort()).toEqual(operations.sort());
  });

  it('answers each route with the expected status for anonymous, another user and the owner', async () => {
    const mismatches: string[] = [];
    for (const row of rows) {
      for (const actor of ['anonymous', 'other', 'owner'] as const) {
        const { response, error } = await row.call(clients[actor], actor);
        if (response.status !== row.expect[actor]) {
          mismatches.push(`${row.route} (${row.what}) as ${actor}: expected ${row.expect[actor]}, got ${response.status} ${JSON.stringify(error ?? '').slice(0, 160)}`);
        }
      }
    }
    expect(mismatches).toEqual([]);
    // Logged out for real: the old cookie no longer works.
    expect((await clients.owner.GET('/api/auth')).response.status).toBe(401);
  }, 120_000);
});
