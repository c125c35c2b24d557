import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, indexed, postCard, uniqueText } from './cards-support';

// Names whose signs are part of them (C++, C#, .NET, node.js) are words of their own to full-text search as well as
// their parts (decisions.md, "Names written with signs"): "C++" finds the card about C++ first, "C#" the one about C#,
// and "C" still finds the card saying C. The cards about C++ and C# are posted first, so before the change, when every
// one of these queries read only "c" and all three cards tied, the newest (the card about C) came first.

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let anonymous: ApiClient;
let cpp: string;
let sharp: string;
let c: string;

type Entry = { metadata: { id: string }[]; score: number };
const hits = (res: { status: number; json: { score_cards: Entry[] } }) => (res.status === 200 ? res.json.score_cards.map((e) => ({ id: e.metadata[0]!.id, score: e.score })) : [{ id: `status ${res.status}`, score: 0 }]);

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  alice = await signUp(system.baseUrl, mailbox, 'signs');
  anonymous = new ApiClient(system.baseUrl);
  cpp = await postCard(alice, { card_html: html(`${uniqueText(80)} Templates and RAII in modern C++ keep resource handling safe.`) });
  sharp = await postCard(alice, { card_html: html(`${uniqueText(80)} LINQ queries in C# read like SQL over collections.`) });
  c = await postCard(alice, { card_html: html(`${uniqueText(80)} The C language leaves memory management to the programmer.`) });
  for (const id of [cpp, sharp, c]) await indexed(alice, id);
}, 180_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

describe('full-text search of names written with signs', () => {
  it('"C++" finds the card about C++ first, above the cards holding only its part C', async () => {
    const found = hits(await anonymous.post('/api/card/fulltextsearch/1', { content: 'C++' }));
    expect(found.map((h) => h.id)).toEqual([cpp, c, sharp]);
    expect(found[0]!.score).toBeGreaterThan(found[1]!.score);
  });

  it('"C#" finds the card about C# first', async () => {
    const found = hits(await anonymous.post('/api/card/fulltextsearch/1', { content: 'C#' }));
    expect(found.map((h) => h.id)).toEqual([sharp, c, cpp]);
    expect(found[0]!.score).toBeGreaterThan(found[1]!.score);
  });

  it('"C" alone still finds the card saying C, with the cards about C++ and C#, alike', async () => {
    const found = hits(await anonymous.post('/api/card/fulltextsearch/1', { content: 'C' }));
    expect(found.map((h) => h.id)).toEqual([c, sharp, cpp]);
    expect(new Set(found.map((h) => h.score)).size).toBe(1);
  });
});
