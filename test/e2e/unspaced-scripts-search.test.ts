import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, indexed, postCard, uniqueText } from './cards-support';

// Chinese and Japanese are written without spaces: a passage is one run of letters. The embedded index splits such
// runs into character bigrams (decisions.md, "Full-text search of Chinese and Japanese"), so a word inside a passage
// is found, by full-text search and by a semantic query, which knows no vector for such words and falls back to
// full-text. Each card also carries English filler so it passes the minimum length however its words are counted.

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let anonymous: ApiClient;
let chinese: string;
let japanese: string;

type Entry = { metadata: { id: string }[] };
const ids = (res: { status: number; json: { score_cards: Entry[] } }) => (res.status === 200 ? res.json.score_cards.map((e) => e.metadata[0]!.id) : [`status ${res.status}`]);

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  alice = await signUp(system.baseUrl, mailbox, 'cjk');
  anonymous = new ApiClient(system.baseUrl);
  chinese = await postCard(alice, { card_html: html(`${uniqueText(80)} 我们今天去公园散步，然后在图书馆看书。`) });
  japanese = await postCard(alice, { card_html: html(`${uniqueText(80)} 昨日、東京タワーに行きました。`) });
  for (const id of [chinese, japanese]) await indexed(alice, id);
}, 180_000);
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

describe('search in unspaced scripts (Chinese, Japanese)', () => {
  it.each([
    ['公园', 'chinese'],
    ['图书馆', 'chinese'],
    ['去公园散步', 'chinese'],
    ['タワー', 'japanese'],
    ['東京タワー', 'japanese'],
  ])('full-text and semantic search find %s inside the %s card, and only it', async (query, which) => {
    const card = which === 'chinese' ? chinese : japanese;
    for (const path of ['/api/card/fulltextsearch/1', '/api/card/search/1']) {
      expect([path, query, ids(await anonymous.post(path, { content: query }))]).toEqual([path, query, [card]]);
    }
  });

  // One character is often a whole word (书 book, 人 person): it stands for the indexed bigrams holding it.
  it.each([
    ['书', 'chinese'],
    ['京', 'japanese'],
  ])('full-text and semantic search find the one-character word %s inside the %s card, and only it', async (query, which) => {
    const card = which === 'chinese' ? chinese : japanese;
    for (const path of ['/api/card/fulltextsearch/1', '/api/card/search/1']) {
      expect([path, query, ids(await anonymous.post(path, { content: query }))]).toEqual([path, query, [card]]);
    }
  });

  it('one character changed is another word, not a typo: 公司 (company) finds nothing', async () => {
    for (const path of ['/api/card/fulltextsearch/1', '/api/card/search/1']) {
      expect([path, ids(await anonymous.post(path, { content: '公司' }))]).toEqual([path, []]);
    }
  });
});
