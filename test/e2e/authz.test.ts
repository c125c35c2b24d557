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
    // One about a collection the matrix keeps: a deleted thing's notifications go with it.
    await eventually('a notification for the owner', async () => {
      const list = await owner.GET('/api/notifications');
      notificationId = list.data?.find((n) => 'collection_uuid' in n && n.collection_uuid === pubColl)?.id ?? '';
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
    r('GET /livez', 'liveness', all(200), (c) => c.GET('/livez'));
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

describe('private data sweep: private cards, files and collections reach nobody but their owner', () => {
  let owner: CardsClient;
  let viewers: [string, CardsClient][];
  let marker: string;
  let privCard: string;
  let pubCard: string;
  let collisionRoot: string;
  let privCollision: string;
  let pubColl: string;
  let privColl: string;
  let privFile: string;
  let votedThenPrivate: string;

  beforeAll(async () => {
    // The matrix logged everyone out: fresh sessions.
    const login = async (user: TestUser) => {
      const api = typedClient(system.baseUrl);
      const res = await api.POST('/api/auth', { body: { email: user.email, password: user.password } });
      if (res.response.status !== 204) throw new Error(`login ${res.response.status}`);
      return api;
    };
    owner = await login(alice);
    const other = await login(bob);
    viewers = [
      ['anonymous', typedClient(system.baseUrl)],
      ['another user', other],
    ];
    const text = uniqueText(90);
    marker = text.split(' ')[0]!;
    // A private card and a public one sharing the marker word, both in a public collection.
    privCard = (await owner.POST('/api/card', { body: { card_html: html(text), link: 'https://example.com/secret', private: true, tag_set: ['sweep'] } })).data!.card_metadata.id;
    pubCard = (await owner.POST('/api/card', { body: { card_html: html(`${marker} ${uniqueText(85)}`), link: 'https://example.com/open', private: false, tag_set: ['sweep'] } })).data!.card_metadata.id;
    // Another user's public card with a private duplicate of the owner underneath it (a collision).
    const shared = uniqueText(90);
    collisionRoot = (await other.POST('/api/card', { body: { card_html: html(shared), link: '', private: false } })).data!.card_metadata.id;
    const dup = await owner.POST('/api/card', { body: { card_html: html(shared), link: '', private: true } });
    expect(dup.data!.duplicate).toBe(true);
    privCollision = dup.data!.card_metadata.id;
    pubColl = await newCollection(owner, true, 'sweep public');
    privColl = await newCollection(owner, false, `sweep private ${marker}`);
    for (const card of [privCard, pubCard, privCollision]) {
      const add = await owner.POST('/api/card_collection/{collection_id}', { params: { path: { collection_id: pubColl } }, body: { card_metadata_id: card } });
      expect(add.response.status).toBe(204);
    }
    await owner.POST('/api/card_collection/{collection_id}', { params: { path: { collection_id: privColl } }, body: { card_metadata_id: pubCard } });
    privFile = await newFile(owner, true);
    // A card that was voted on while public and made private afterwards.
    votedThenPrivate = await newCard(owner, false);
    expect((await other.POST('/api/vote', { body: { card_metadata_id: votedThenPrivate, vote: true } })).response.status).toBe(200);
    expect((await owner.PUT('/api/card/update', { body: { card_uuid: votedThenPrivate, private: true } })).response.status).toBe(204);
    // The positive control: the owner finds the private card once the index has caught up, so the
    // absence checks below are not vacuous.
    await eventually('the private card in the owner\'s searches', async () => {
      const [s, f] = await Promise.all([
        owner.POST('/api/card/search/{page}', { params: { path: { page: 1 } }, body: { content: text } }),
        owner.POST('/api/card/fulltextsearch/{page}', { params: { path: { page: 1 } }, body: { content: marker } }),
      ]);
      const ids = [...(s.data?.score_cards ?? []), ...(f.data?.score_cards ?? [])].flatMap((e) => e.metadata.map((c) => c.id));
      return ids.filter((id) => id === privCard).length === 2 && ids.includes(pubCard);
    });
    await eventually('the private collision under its root for the owner', async () => {
      const res = await owner.POST('/api/card/fulltextsearch/{page}', { params: { path: { page: 1 } }, body: { content: shared.split(' ')[0]! } });
      return (res.data?.score_cards ?? []).some((e) => e.metadata[0]!.id === collisionRoot && e.metadata.some((c) => c.id === privCollision));
    });
  }, 120_000);

  const secretIds = () => [privCard, privCollision, privColl, privFile, votedThenPrivate];
  /** Any of the private ids anywhere in a response body. */
  const leaks = (body: unknown) => secretIds().filter((id) => JSON.stringify(body ?? null).includes(id));

  it('searches (semantic, full-text, filtered, in a collection) never show them to others', async () => {
    const shared = (await owner.GET('/api/card/{card_id}', { params: { path: { card_id: privCollision } } })).data!.content;
    for (const [who, api] of viewers) {
      const bodies = [
        { content: marker },
        { content: marker, tag_set: ['sweep'] },
        { content: marker, link: ['example.com/secret'] },
        { content: shared.slice(0, 300) },
      ];
      for (const body of bodies) {
        for (const path of ['/api/card/search/{page}', '/api/card/fulltextsearch/{page}'] as const) {
          const res = await api.POST(path, { params: { path: { page: 1 } }, body });
          expect({ who, path, status: res.response.status }).toEqual({ who, path, status: 200 });
          expect({ who, path, body, leaks: leaks(res.data) }).toEqual({ who, path, body, leaks: [] });
        }
        for (const path of ['/api/card_collection/search/{page}', '/api/card_collection/fulltextsearch/{page}'] as const) {
          const res = await api.POST(path, { params: { path: { page: 1 } }, body: { ...body, collection_id: pubColl } });
          expect({ who, path, leaks: leaks(res.data) }).toEqual({ who, path, leaks: [] });
        }
      }
      // The public card with the same word is found: the search itself works for them.
      const found = await api.POST('/api/card/fulltextsearch/{page}', { params: { path: { page: 1 } }, body: { content: marker } });
      expect(found.data!.score_cards.flatMap((e) => e.metadata.map((c) => c.id))).toContain(pubCard);
    }
  });

  it('collection pages, user pages, per-user listings and bookmark lookups never show them to others', async () => {
    const ownerPage = await owner.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: alice.id, page: 1 } } });
    const ownerCollections = await owner.GET('/api/user/collections/{user_id}', { params: { path: { user_id: alice.id } } });
    const ownerFiles = await owner.GET('/api/user/files/{user_id}', { params: { path: { user_id: alice.id } } });
    const ownerCollectionPage = await owner.GET('/api/card_collection/{collection_id}/{page}', { params: { path: { collection_id: pubColl, page: 1 } } });
    // Positive controls: the owner sees every private thing.
    expect(ownerPage.data!.cards.map((c) => c.id)).toEqual(expect.arrayContaining([privCard, privCollision, votedThenPrivate]));
    expect(ownerCollections.data!.map((c) => c.id)).toContain(privColl);
    expect(ownerFiles.data!.map((f) => f.id)).toContain(privFile);
    expect(ownerCollectionPage.data!.bookmarks.flatMap((b) => b.metadata.map((c) => c.id))).toEqual(expect.arrayContaining([privCard, privCollision]));
    const ownerPrivateCount = ownerPage.data!.cards.filter((c) => c.private).length;
    expect(ownerPrivateCount).toBeGreaterThanOrEqual(3);

    for (const [who, api] of viewers) {
      const page = await api.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: alice.id, page: 1 } } });
      expect({ who, leaks: leaks(page.data) }).toEqual({ who, leaks: [] });
      expect(page.data!.cards.every((c) => !c.private)).toBe(true);
      expect({ who, count: page.data!.total_cards_created }).toEqual({ who, count: ownerPage.data!.total_cards_created - ownerPrivateCount });
      for (const res of [
        await api.GET('/api/user/collections/{user_id}', { params: { path: { user_id: alice.id } } }),
        await api.GET('/api/user/files/{user_id}', { params: { path: { user_id: alice.id } } }),
        await api.GET('/api/card_collection/{collection_id}/{page}', { params: { path: { collection_id: pubColl, page: 1 } } }),
        await api.GET('/api/top_users/{page}', { params: { path: { page: 1 } } }),
        await api.GET('/api/card/{card_id}', { params: { path: { card_id: collisionRoot } } }),
      ]) {
        expect({ who, url: res.response.url, leaks: leaks(res.data ?? res.error) }).toEqual({ who, url: res.response.url, leaks: [] });
      }
      const collectionPage = await api.GET('/api/card_collection/{collection_id}/{page}', { params: { path: { collection_id: pubColl, page: 1 } } });
      expect(collectionPage.data!.bookmarks.flatMap((b) => b.metadata.map((c) => c.id))).toContain(pubCard);
    }
    // The lookup echoes the ids it was given; about someone else's private card it says what it says about an unknown id.
    const unknown = '00000000-0000-4000-8000-00000000abcd';
    const lookup = await viewers[1]![1].POST('/api/card_collection/bookmark', { body: { collection_ids: [privCard, pubCard, unknown].join(',') } });
    expect(lookup.data).toEqual([
      { card_uuid: privCard, collection_ids: [] },
      { card_uuid: pubCard, collection_ids: [] },
      { card_uuid: unknown, collection_ids: [] },
    ]);
  });

  // Rule (docs/decisions.md): totals and scores seen by others count only the votes on cards they can see.
  it('a card made private after it was voted on no longer counts in the author\'s totals seen by others', async () => {
    const seenByOther = await viewers[1]![1].GET('/api/user/{user_id}/{page}', { params: { path: { user_id: alice.id, page: 1 } } });
    const ownView = await owner.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: alice.id, page: 1 } } });
    const visibleUpvotes = seenByOther.data!.cards.reduce((n, c) => n + c.total_upvotes, 0);
    const visibleDownvotes = seenByOther.data!.cards.reduce((n, c) => n + c.total_downvotes, 0);
    expect(ownView.data!.total_upvotes_received).toBeGreaterThanOrEqual(1);
    expect(ownView.data!.total_upvotes_received).toBe(ownView.data!.cards.reduce((n, c) => n + c.total_upvotes, 0));
    for (const [who, api] of viewers) {
      const page = await api.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: alice.id, page: 1 } } });
      expect({ who, up: page.data!.total_upvotes_received, down: page.data!.total_downvotes_received }).toEqual({ who, up: visibleUpvotes, down: visibleDownvotes });
      // The top-users score is the same public one for everybody (here: no vote on a visible card, so not ranked).
      const top = await api.GET('/api/top_users/{page}', { params: { path: { page: 1 } } });
      const ranked = top.data!.users.find((u) => u.id === alice.id);
      expect({ who, score: ranked?.score ?? 0 }).toEqual({ who, score: visibleUpvotes - visibleDownvotes });
    }
  });
});

describe("another user's private, made-private or deleted resource answers exactly as an unknown id", () => {
  type Kind = 'card' | 'collection' | 'file' | 'notification';
  const states = ['private', 'madePrivate', 'deleted', 'unknown'] as const;
  const ids = {} as Record<Kind, Partial<Record<(typeof states)[number], string>>>;
  let other: CardsClient;
  let otherCollection: string;

  beforeAll(async () => {
    const login = async (user: TestUser) => {
      const api = typedClient(system.baseUrl);
      expect((await api.POST('/api/auth', { body: { email: user.email, password: user.password } })).response.status).toBe(204);
      return api;
    };
    const owner = await login(alice);
    other = await login(bob);
    otherCollection = await newCollection(other, true, 'the other user\'s');
    const unknown = () => crypto.randomUUID();
    const [privateCard, madePrivateCard, deletedCard] = [await newCard(owner, true), await newCard(owner, false), await newCard(owner, false)];
    // The other user voted on and bookmarked the two while they were public: what they knew of them must not tell
    // a card made private from a deleted one.
    for (const id of [madePrivateCard, deletedCard]) {
      expect((await other.POST('/api/vote', { body: { card_metadata_id: id, vote: true } })).response.status).toBe(200);
      expect((await other.POST('/api/card_collection/{collection_id}', { params: { path: { collection_id: otherCollection } }, body: { card_metadata_id: id } })).response.status).toBe(204);
    }
    expect((await owner.PUT('/api/card/update', { body: { card_uuid: madePrivateCard, private: true } })).response.status).toBe(204);
    expect((await owner.DELETE('/api/card/{card_id}', { params: { path: { card_id: deletedCard } } })).response.status).toBe(204);
    ids.card = { private: privateCard, madePrivate: madePrivateCard, deleted: deletedCard, unknown: unknown() };
    const [privateColl, madePrivateColl, deletedColl] = [await newCollection(owner, false), await newCollection(owner, true), await newCollection(owner, true)];
    await owner.PUT('/api/card_collection', { body: { collection_id: madePrivateColl, is_public: false } });
    await owner.DELETE('/api/card_collection', { body: { collection_id: deletedColl } });
    ids.collection = { private: privateColl, madePrivate: madePrivateColl, deleted: deletedColl, unknown: unknown() };
    const [privateFile, madePrivateFile, deletedFile] = await Promise.all([newFile(owner, true), newFile(owner, false), newFile(owner, false)]);
    await owner.PUT('/api/file', { body: { file_id: madePrivateFile, private: true } });
    await owner.DELETE('/api/file/{file_id}', { params: { path: { file_id: deletedFile } } });
    ids.file = { private: privateFile, madePrivate: madePrivateFile, deleted: deletedFile, unknown: unknown() };
    let notificationId = '';
    await eventually('a notification for the owner', async () => {
      notificationId = (await owner.GET('/api/notifications')).data?.[0]?.id ?? '';
      return notificationId !== '';
    });
    ids.notification = { private: notificationId, unknown: unknown() };
  }, 120_000);

  it('on every operation that takes its id, the same status and message', async () => {
    const card = (id: string) => ({ params: { path: { card_id: id } } });
    const coll = (id: string) => ({ params: { path: { collection_id: id } } });
    const file = (id: string) => ({ params: { path: { file_id: id } } });
    const search = (id: string) => ({ params: { path: { page: 1 } }, body: { content: 'river', collection_id: id } });
    const operations: [Kind, string, (id: string) => Promise<{ response: Response; error?: unknown }>][] = [
      ['card', 'GET /api/card/{card_id}', (id) => other.GET('/api/card/{card_id}', card(id))],
      ['card', 'PUT /api/card/update', (id) => other.PUT('/api/card/update', { body: { card_uuid: id, private: false } })],
      ['card', 'DELETE /api/card/{card_id}', (id) => other.DELETE('/api/card/{card_id}', card(id))],
      ['card', 'POST /api/vote', (id) => other.POST('/api/vote', { body: { card_metadata_id: id, vote: false } })],
      ['card', 'DELETE /api/vote/{card_id}', (id) => other.DELETE('/api/vote/{card_id}', card(id))],
      ['card', 'POST /api/card_collection/{collection_id}', (id) => other.POST('/api/card_collection/{collection_id}', { ...coll(otherCollection), body: { card_metadata_id: id } })],
      ['card', 'DELETE /api/card_collection/{collection_id}', (id) => other.DELETE('/api/card_collection/{collection_id}', { ...coll(otherCollection), body: { card_metadata_id: id } })],
      ['collection', 'GET /api/card_collection/{collection_id}/{page}', (id) => other.GET('/api/card_collection/{collection_id}/{page}', { params: { path: { collection_id: id, page: 1 } } })],
      ['collection', 'POST /api/card_collection/search/{page}', (id) => other.POST('/api/card_collection/search/{page}', search(id))],
      ['collection', 'POST /api/card_collection/fulltextsearch/{page}', (id) => other.POST('/api/card_collection/fulltextsearch/{page}', search(id))],
      ['collection', 'PUT /api/card_collection', (id) => other.PUT('/api/card_collection', { body: { collection_id: id, is_public: true } })],
      ['collection', 'POST /api/card_collection/{collection_id}', (id) => other.POST('/api/card_collection/{collection_id}', { ...coll(id), body: { card_metadata_id: ids.card.unknown! } })],
      ['collection', 'DELETE /api/card_collection/{collection_id}', (id) => other.DELETE('/api/card_collection/{collection_id}', { ...coll(id), body: { card_metadata_id: ids.card.unknown! } })],
      ['collection', 'DELETE /api/card_collection', (id) => other.DELETE('/api/card_collection', { body: { collection_id: id } })],
      ['file', 'GET /api/file/{file_id}', (id) => other.GET('/api/file/{file_id}', file(id))],
      ['file', 'GET /api/file/{file_id}/download', (id) => other.GET('/api/file/{file_id}/download', { ...file(id), parseAs: 'arrayBuffer' })],
      ['file', 'PUT /api/file', (id) => other.PUT('/api/file', { body: { file_id: id, private: false } })],
      ['file', 'DELETE /api/file/{file_id}', (id) => other.DELETE('/api/file/{file_id}', file(id))],
      ['file', 'POST /api/card (file_uuid)', (id) => other.POST('/api/card', { body: { card_html: html(uniqueText()), link: '', private: true, file_uuid: id } })],
      ['notification', 'PUT /api/notifications', (id) => other.PUT('/api/notifications', { body: { notification_id: id } })],
    ];
    const differences: string[] = [];
    for (const [kind, what, call] of operations) {
      const answer = async (id: string) => {
        const { response, error } = await call(id);
        return JSON.stringify({ status: response.status, error: error ?? null });
      };
      const unknown = await answer(ids[kind].unknown!);
      for (const state of states.filter((s) => s !== 'unknown' && ids[kind][s] !== undefined)) {
        const seen = await answer(ids[kind][state]!);
        if (seen !== unknown) differences.push(`${what}, ${state} ${kind}: ${seen}; unknown: ${unknown}`);
      }
    }
    expect(differences).toEqual([]);
  }, 60_000);
});

describe('cross-origin defences and response hygiene', () => {
  let cookie: string;
  let victim: CardsClient;
  const evil = 'https://evil.example';

  beforeAll(async () => {
    victim = typedClient(system.baseUrl);
    await victim.POST('/api/auth', { body: { email: bob.email, password: bob.password } });
    cookie = victim.session.cookie!;
  });

  const cardBody = () => ({ card_html: html(uniqueText()), link: '', private: false });

  it('refuses state-changing requests with the cookie from another site, by Origin or by Referer, and stores nothing', async () => {
    const before = (await victim.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: bob.id, page: 1 } } })).data!.total_cards_created;
    for (const headers of [{ origin: evil }, { origin: 'null' }, { referer: `${evil}/page` }, { origin: `${system.baseUrl}.evil.example` }] as Record<string, string>[]) {
      const forged = typedClient(system.baseUrl, undefined, headers);
      forged.session.cookie = cookie;
      const res = await forged.POST('/api/card', { body: cardBody() });
      expect({ headers, status: res.response.status }).toEqual({ headers, status: 403 });
      expect(res.error).toEqual({ message: expect.stringContaining('Cross-site') });
      const del = await forged.DELETE('/api/auth');
      expect(del.response.status).toBe(403);
    }
    const after = (await victim.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: bob.id, page: 1 } } })).data!.total_cards_created;
    expect(after).toBe(before);
    expect((await victim.GET('/api/auth')).response.status).toBe(200);
  });

  it('lets same-origin pages, configured origins, header-less API clients and cookie-less requests through', async () => {
    for (const headers of [{ origin: system.baseUrl }, { referer: `${system.baseUrl}/card/new` }, { origin: APP_ORIGIN }, {}] as Record<string, string>[]) {
      const api = typedClient(system.baseUrl, undefined, headers);
      api.session.cookie = cookie;
      const res = await api.POST('/api/card', { body: cardBody() });
      expect({ headers, status: res.response.status }).toEqual({ headers, status: 200 });
    }
    // Reads are not state-changing; no cookie means no session to ride on (401, not 403).
    const crossRead = typedClient(system.baseUrl, undefined, { origin: evil });
    crossRead.session.cookie = cookie;
    expect((await crossRead.GET('/api/auth')).response.status).toBe(200);
    const anonymous = typedClient(system.baseUrl, undefined, { origin: evil });
    expect((await anonymous.POST('/api/card', { body: cardBody() })).response.status).toBe(401);
  });

  it('answers CORS with credentials for configured origins only', async () => {
    const preflight = (origin: string) =>
      fetch(`${system.baseUrl}/api/card`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    const allowed = await preflight(APP_ORIGIN);
    expect(allowed.status).toBeLessThan(300);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    expect(allowed.headers.get('access-control-allow-methods')).toContain('POST');
    // A page of that origin may send the headers the API reads: Idempotency-Key on card creation.
    expect(allowed.headers.get('access-control-allow-headers')?.split(',')).toEqual(expect.arrayContaining(['content-type', 'idempotency-key']));
    const refused = await preflight(evil);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    const simple = await fetch(`${system.baseUrl}/api/card/count`, { headers: { origin: evil } });
    expect(simple.headers.get('access-control-allow-origin')).toBeNull();
    const configured = await fetch(`${system.baseUrl}/api/card/count`, { headers: { origin: APP_ORIGIN } });
    expect(configured.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    expect(configured.headers.get('vary')).toMatch(/origin/i);
  });

  it('sends security headers and the session cookie with HttpOnly, SameSite=Lax, Path=/ and a 24 h lifetime', async () => {
    const res = await fetch(`${system.baseUrl}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: bob.email, password: bob.password }) });
    expect(res.status).toBe(204);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(res.headers.get('strict-transport-security')).toContain('max-age=');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-powered-by')).toBeNull();
    const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('ai-editor='))!;
    expect(setCookie).toMatch(/; HttpOnly/i);
    expect(setCookie).toMatch(/; SameSite=Lax/i);
    expect(setCookie).toMatch(/; Path=\//i);
    // PUBLIC_URL is http here, so no Secure flag (docs/decisions.md: Secure follows PUBLIC_URL unless COOKIE_SECURE says otherwise).
    expect(setCookie).not.toMatch(/; Secure/i);
    const expires = Date.parse(/Expires=([^;]+)/i.exec(setCookie)![1]!);
    expect(Math.abs(expires - Date.now() - 24 * 3600_000)).toBeLessThan(120_000);
  });

  it('answers bad requests with a plain {"message"}: no stack traces, file paths or internal names', async () => {
    const answers = await Promise.all([
      fetch(`${system.baseUrl}/api/card`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: '{"card_html": ' }),
      fetch(`${system.baseUrl}/api/card/not-a-uuid`),
      fetch(`${system.baseUrl}/api/nope`),
      fetch(`${system.baseUrl}/api/vote`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ card_metadata_id: '00000000-0000-4000-8000-000000000000', vote: true }) }),
      fetch(`${system.baseUrl}/api/card/search/1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: { $gt: '' } }) }),
      fetch(`${system.baseUrl}/api/file`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ base64_docx_file: 'UEsDBA', file_name: 'a.docx', file_mime_type: 'x', private: false }) }),
    ]);
    for (const res of answers) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      const body = (await res.json()) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(['message']);
      expect(String(body.message)).not.toMatch(/\bat \S+ \(|\.ts:\d+|node_modules|\/work\/|SQLITE|grpc|Error:/i);
    }
  });

  it('writes no passwords, session tokens or secrets to the logs', async () => {
    const logs = system.logs();
    expect(logs.length).toBeGreaterThan(0);
    const token = cookie.split('=')[1]!;
    const jwtSecret = readFileSync(join(system.dataDir, 'identity', 'jwt-secret'), 'utf8').trim();
    expect(jwtSecret.length).toBeGreaterThanOrEqual(32);
    for (const secret of [alice.password, bob.password, token, token.split('.')[2]!, jwtSecret]) expect(logs).not.toContain(secret);
    expect(logs).not.toMatch(/"(password|password_confirmation|token|jwt_secret|JWT_SECRET)":"[^"]/i);
  });
});
