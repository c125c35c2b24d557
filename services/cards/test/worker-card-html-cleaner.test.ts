import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { InvalidArgumentError, ResourceExhaustedError, SERVICE_BUSY, ServiceBusyError, UnavailableError } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { CARD_HTML_BUSY_MESSAGE, DEFAULT_CARD_HTML_CLEANING_LIMITS, OWN_CARD_HTML_BUSY_MESSAGE, tsxCjsApiPath, WorkerCardHtmlCleaner } from '../src/adapters/worker-threads/worker-card-html-cleaner';
import { CardService } from '../src/application/card-service';
import { cardTextFromHtml } from '../src/domain/rules';
import { sqliteCardServiceDeps } from './uninvolved-deps';

/** ~300 KB of nested inline markup around 3,400 words (a valid card): ~60 ms of cleaning on the calling thread. */
function largeNestedHtml(tag: string): string {
  let out = '';
  for (let i = 0; out.length < 300_000; i++) out += `<p><span><b><i><em><strong><u><mark>${tag}${i % 100}</mark></u></strong></em></i></b></span></p>`;
  return out;
}

const words = (n: number, prefix = 'word') => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ');

/** What the rules answer for `html`: the cleaned HTML and text, or the refusal. */
function inline(html: string): unknown {
  try {
    return cardTextFromHtml(html);
  } catch (err) {
    return { refused: (err as Error).name, message: (err as Error).message };
  }
}

async function viaWorker(cleaner: WorkerCardHtmlCleaner, html: string): Promise<unknown> {
  try {
    return await cleaner.clean(html);
  } catch (err) {
    return { refused: (err as Error).name, message: (err as Error).message };
  }
}

const TOKENS = [
  '<p>', '</p>', '<b>', '</b>', '<i>', '</I>', '<span style="x">', '</span>', '<div id=d>', '</div>', '<h2>', '</h2>', '<ul>', '<li>',
  '</li>', '</ul>', '<ol start="3" type="a">', '</ol>', '<blockquote>', '<br>', '<img src=x alt="a &amp; b">', '<a href="https://e.com/?a=1&amp;b=2">',
  '<a href="javascript:x()">', '</a>', '<table><tr><td>', '<script>if (a < b) x("</p>")</script>', '<style>p{}</style>', '<!-- c -->', '<textarea>',
  '</textarea>', '<title>t</title>', '&amp;', '&lt;', '&#1;', '&#xD800;', '&nbsp;', '&shy;', 'soft\u00adhyphen ', '\u0000', '\u000b', '\u0085',
  '\t', '\n', '\u{1F600}', '한국어 ', '日本語', 'word ', 'more words ', '"quoted" ', '</nope>', '<', '>', '&', '<!doctype html>', '<b/>', '<svg><path d="1"/></svg>',
];

describe('WorkerCardHtmlCleaner', () => {
  let cleaner: WorkerCardHtmlCleaner;
  afterEach(() => cleaner?.close());

  it('answers what the rules answer on the calling thread, cleaned HTML, text and refusals alike', async () => {
    // Every card through the worker, however small.
    cleaner = new WorkerCardHtmlCleaner({ ...DEFAULT_CARD_HTML_CLEANING_LIMITS, minWorkerChars: 0 });
    const corpus = [
      largeNestedHtml('w'),
      `${'<b>'.repeat(20_000)}${words(100)}${'</i>'.repeat(20_000)}`,
      `${'<span>'.repeat(600)}${words(80)}${'</span>'.repeat(600)}`,
      `<p>${'lorem ipsum dolor sit amet '.repeat(1074)}</p>`,
      `<p>${words(70)}</p>`,
      `<p>${words(5001)}</p>`,
      `<p>${words(80)} half\ud800</p>`,
      `<p>${words(80)}</p>${'x'.repeat(500_001)}`,
      `<p>${'\u{1F600}'.repeat(30_000)}</p>`,
      '',
    ];
    for (const html of corpus) expect(await viaWorker(cleaner, html)).toEqual(inline(html));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...TOKENS), { minLength: 60, maxLength: 400 }), async (tokens) => {
        const html = tokens.join('');
        expect(await viaWorker(cleaner, html)).toEqual(inline(html));
      }),
      { numRuns: 150 },
    );
    expect(cleaner.workerCount).toBe(1);
  });

  it('refuses bad HTML with the 400 the rules give, not a failure of the service', async () => {
    cleaner = new WorkerCardHtmlCleaner({ ...DEFAULT_CARD_HTML_CLEANING_LIMITS, minWorkerChars: 0 });
    await expect(cleaner.clean(`<p>${words(70)}</p>`)).rejects.toThrow(new InvalidArgumentError('card_html: must contain more than 70 words of text (found 70; a word holds a letter or a digit; punctuation, symbols and emoji alone are not counted)'));
    await expect(cleaner.clean(`<p>${words(70)}</p>`)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('creates a small card sent while a large one is being cleaned first, the service not waiting for the large one', async () => {
    cleaner = new WorkerCardHtmlCleaner();
    await cleaner.clean(largeNestedHtml('warm')); // the worker started
    const db = openCardsDatabase(':memory:');
    const service = new CardService({
      ...sqliteCardServiceDeps(db),
      htmlCleaner: cleaner,
    });
    const answered: string[] = [];
    const create = (name: string, cardHtml: string) =>
      service.createCard({ callerId: 'alice', cardHtml, link: '', private: false, tags: [] }).then((created) => {
        answered.push(name);
        return created;
      });
    const large = create('large', largeNestedHtml('l'));
    const small = create('small', `<p>${words(80, 'small')}</p>`);
    const [largeCard, smallCard] = await Promise.all([large, small]);
    expect(answered).toEqual(['small', 'large']);
    expect(largeCard.card.cardHtml).toBe(cardTextFromHtml(largeNestedHtml('l')).cardHtml);
    expect(smallCard.card.content).toBe(words(80, 'small'));
    db.close();
  });

  it('cleans at most `workers` large cards at once and refuses one more than the line holds with 503 (busy), at once', async () => {
    cleaner = new WorkerCardHtmlCleaner({ minWorkerChars: 16_384, workers: 1, maxQueued: 1, maxWaitMs: 30_000, perUser: 1 });
    const html = largeNestedHtml('w');
    const first = cleaner.clean(html);
    const second = cleaner.clean(html);
    const third = cleaner.clean(html);
    await expect(third).rejects.toThrow(new UnavailableError(CARD_HTML_BUSY_MESSAGE));
    await expect(third).rejects.toBeInstanceOf(UnavailableError);
    // Told apart from a service that cannot answer, so the gateway answers it 503 with its message and Retry-After.
    await expect(third).rejects.toBeInstanceOf(ServiceBusyError);
    await expect(third).rejects.toMatchObject({ reason: SERVICE_BUSY });
    // A small card is not in the line at all.
    await expect(cleaner.clean(`<p>${words(80)}</p>`)).resolves.toEqual(cardTextFromHtml(`<p>${words(80)}</p>`));
    expect(cleaner.workerCount).toBe(1);
    await expect(Promise.all([first, second])).resolves.toEqual([cardTextFromHtml(html), cardTextFromHtml(html)]);
    expect(cleaner.workerCount).toBe(1);
  });

  it("waits its turn for a file's ingestion instead of refusing it", async () => {
    cleaner = new WorkerCardHtmlCleaner({ minWorkerChars: 16_384, workers: 1, maxQueued: 0, maxWaitMs: 30_000, perUser: 1 });
    const html = largeNestedHtml('w');
    const first = cleaner.clean(html);
    await expect(cleaner.clean(html)).rejects.toThrow(new UnavailableError(CARD_HTML_BUSY_MESSAGE));
    await expect(Promise.all([first, cleaner.clean(html, { patient: true })])).resolves.toEqual([cardTextFromHtml(html), cardTextFromHtml(html)]);

    // The cards service asks so for the cards of an ingestion (the only caller taking the file's privacy).
    const asked: unknown[] = [];
    const db = openCardsDatabase(':memory:');
    const service = new CardService({
      ...sqliteCardServiceDeps(db),
      htmlCleaner: { clean: async (rawHtml, options) => (asked.push(options), cardTextFromHtml(rawHtml)) },
    });
    const card = (extra: object) => service.createCard({ callerId: 'alice', cardHtml: `<p>${words(80, `c${asked.length}x`)}</p>`, link: '', private: false, tags: [], ...extra });
    await card({});
    await card({ privacyFromFile: true });
    expect(asked).toEqual([{ patient: false, caller: 'alice' }, { patient: true, caller: 'alice' }]);
    db.close();
  });

  it("cleans another user's large card while one user floods the cleaner: the flooder's cards beyond their share are refused 429 at once", async () => {
    // One worker and a line of two: three of one user's cards at once would take every place (security review, starve.mjs).
    cleaner = new WorkerCardHtmlCleaner({ minWorkerChars: 16_384, workers: 1, maxQueued: 2, maxWaitMs: 30_000, perUser: 1 });
    const db = openCardsDatabase(':memory:');
    const service = new CardService({
      ...sqliteCardServiceDeps(db),
      htmlCleaner: cleaner,
    });
    const outcome = (answer: Promise<unknown>) =>
      answer.then(
        () => 'created',
        (err: Error) => `${err.name}: ${err.message}`,
      );
    // Mallory's large cards, sent at once, as a client keeping many connections does; then Bob's.
    const mallory = Array.from({ length: 6 }, (_, i) => outcome(service.createCard({ callerId: 'mallory', cardHtml: largeNestedHtml(`m${i}x`), link: '', private: true, tags: [] })));
    const bob = service.createCard({ callerId: 'bob', cardHtml: largeNestedHtml('bob'), link: '', private: true, tags: [] });
    const bobsCard = (await bob).card;
    expect(bobsCard.cardHtml).toBe(cardTextFromHtml(largeNestedHtml('bob')).cardHtml);
    const refused = `ResourceExhaustedError: ${OWN_CARD_HTML_BUSY_MESSAGE}`;
    expect(await Promise.all(mallory)).toEqual(['created', refused, refused, refused, refused, refused]);

    // An update counts toward its author's share as a create does; once Mallory's card is done, her next one is cleaned.
    const first = service.updateCard({ callerId: 'bob', cardId: bobsCard.id, cardHtml: largeNestedHtml('bob2') });
    await expect(service.updateCard({ callerId: 'bob', cardId: bobsCard.id, cardHtml: largeNestedHtml('bob3') })).rejects.toThrow(new ResourceExhaustedError(OWN_CARD_HTML_BUSY_MESSAGE));
    await expect(outcome(service.createCard({ callerId: 'mallory', cardHtml: largeNestedHtml('m9x'), link: '', private: true, tags: [] }))).resolves.toBe('created');
    await first;
    db.close();
  });

  it("takes no share for a file's ingestion, nor counts it against its owner's own cards", async () => {
    cleaner = new WorkerCardHtmlCleaner({ minWorkerChars: 16_384, workers: 1, maxQueued: 4, maxWaitMs: 30_000, perUser: 1 });
    const html = largeNestedHtml('w');
    const ingested = [cleaner.clean(html, { patient: true, caller: 'alice' }), cleaner.clean(html, { patient: true, caller: 'alice' })];
    const own = cleaner.clean(html, { caller: 'alice' });
    await expect(cleaner.clean(html, { caller: 'alice' })).rejects.toBeInstanceOf(ResourceExhaustedError);
    await expect(Promise.all([...ingested, own])).resolves.toEqual([cardTextFromHtml(html), cardTextFromHtml(html), cardTextFromHtml(html)]);
    // The share is given back after each card, refused or not.
    await expect(cleaner.clean(html, { caller: 'alice' })).resolves.toEqual(cardTextFromHtml(html));
  });

  it('finds tsx beside the one the process was started with when the workspace has none (the images run a global tsx)', () => {
    const preflight = require.resolve('tsx/preflight');
    expect(tsxCjsApiPath(['--require', preflight, '--import', 'file:///nowhere/tsx/dist/loader.mjs'], ['/'])).toBe(require.resolve('tsx/cjs/api'));
    expect(tsxCjsApiPath([], ['/'])).toBeUndefined();
    // The images' start: node with an --import of the loader's absolute path, no preflight.
    const loader = join(dirname(require.resolve('tsx/package.json')), 'dist/loader.mjs');
    expect(tsxCjsApiPath(['--import', loader], ['/'])).toBe(require.resolve('tsx/cjs/api'));
  });
});
