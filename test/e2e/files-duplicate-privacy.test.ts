import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiClient, type ApiResponse } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';

// Audit finding: a file whose cards are duplicates of cards already stored (the same document uploaded twice), made
// private and public again, left those cards private for good. Made public, the file gives back every card it hid.

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const energy = readFileSync(join(__dirname, '../fixtures/documents/energy.docx')).toString('base64url');
const normalized = (text: string) => text.replace(/\s+/g, ' ').trim();

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'alice'), signUp(system.baseUrl, mailbox, 'bob')]);
}, 120_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

async function waitUntil<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Uploads energy.docx (public) under `name` and waits for its three cards. */
async function uploadEnergy(name: string): Promise<{ fileId: string; cards: any[] }> {
  const res = await alice.client.post('/api/file', { base64_docx_file: energy, file_name: name, file_mime_type: DOCX, private: false });
  expect(res.status).toBe(200);
  const fileId = res.json.id as string;
  await waitUntil(`ingestion of ${name}`, async () => ((await alice.client.get(`/api/file/${fileId}`)).json?.ingestion_status === 'done' ? true : undefined));
  const cards = await waitUntil(`the cards of ${name}`, async () => {
    const page = await alice.client.get(`/api/user/${alice.id}/1`);
    const mine = (page.json.cards as any[]).filter((c) => c.file_id === fileId);
    return mine.length === 3 ? mine : undefined;
  });
  return { fileId, cards };
}

describe('a file whose cards are duplicates, made private and public again', () => {
  it('gives back every card it hid: public on the user page, in its root\'s collisions in search results and in the file\'s collection, for others and anonymous callers', async () => {
    const first = await uploadEnergy('e1.docx');
    const second = await uploadEnergy('e2.docx');
    const collectionId = await waitUntil("the second file's collection", async () => {
      const listing = await alice.client.get(`/api/user/collections/${alice.id}`);
      return (listing.json as any[]).find((c) => c.file_id === second.fileId)?.id as string | undefined;
    });
    const anonymous = new ApiClient(system.baseUrl);
    const copyIds = second.cards.map((c) => c.id as string).sort();
    const phrases = first.cards.map((c) => normalized(c.content).split(' ').slice(0, 12).join(' '));

    /** What a reader sees of the second file's cards, in every view. */
    const seenBy = async (client: ApiClient) => {
      const [userPage, collectionPage, ...searches] = await Promise.all([
        client.get(`/api/user/${alice.id}/1`),
        client.get(`/api/card_collection/${collectionId}/1`),
        ...phrases.map((content) => client.post('/api/card/fulltextsearch/1', { content })),
      ]);
      const inResults = (res: ApiResponse) => (res.json.score_cards as any[]).flatMap((e) => (e.metadata as any[]).slice(1).map((c) => c.id));
      return {
        onUserPage: (userPage.json.cards as any[]).filter((c) => c.file_id === second.fileId && c.private === false).map((c) => c.id).sort(),
        inCollection: collectionPage.status === 200 ? (collectionPage.json.bookmarks as any[]).flatMap((b) => (b.metadata as any[]).map((c) => c.id)).filter((id: string) => copyIds.includes(id)).sort() : [],
        collisionsInSearch: [...new Set(searches.flatMap(inResults))].filter((id) => copyIds.includes(id)).sort(),
      };
    };
    const visible = { onUserPage: copyIds, inCollection: copyIds, collisionsInSearch: copyIds };
    const hidden = { onUserPage: [], inCollection: [], collisionsInSearch: [] };
    const settles = (what: string, expected: object) =>
      waitUntil(what, async () => {
        const views = await Promise.all([seenBy(bob.client), seenBy(anonymous)]);
        return views.every((v) => JSON.stringify(v) === JSON.stringify(expected)) ? views : undefined;
      });
    // The second upload's cards are collisions of the first's, shown inside their roots' entries.
    await settles('the copies shown as collisions of the first upload', visible);

    expect((await alice.client.put('/api/file', { file_id: second.fileId, private: true })).status).toBe(204);
    await settles('the copies hidden with their file', hidden);
    expect((await alice.client.put('/api/file', { file_id: second.fileId, private: false })).status).toBe(204);
    await settles('the copies given back with their file', visible);
    const own = new Map(((await alice.client.get(`/api/user/${alice.id}/1`)).json.cards as any[]).map((c) => [c.id, c.private]));
    expect(copyIds.map((id) => own.get(id))).toEqual([false, false, false]);

    // A copy its owner makes private by hand stays hers to keep private: publishing it is refused, as before.
    expect((await alice.client.put('/api/card/update', { card_uuid: copyIds[0], private: true })).status).toBe(204);
    const refused = await alice.client.put('/api/card/update', { card_uuid: copyIds[0], private: false });
    expect(refused.status).toBe(400);
    expect(refused.json.message).toBe('private: a private duplicate cannot be made public');
  }, 240_000);
});
