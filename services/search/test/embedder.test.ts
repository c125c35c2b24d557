import { OpenAiEmbedder } from '../src/adapters/openai/openai-embedder';
import { describeEmbedderContract } from './embedder.contract';
import { cosine, sharedWinkEmbedder } from './shared-model';

describeEmbedderContract('WinkGloveEmbedder (bundled word vectors, SIF)', sharedWinkEmbedder);

const url = process.env.EMBEDDINGS_URL;
if (url) {
  describeEmbedderContract(`OpenAiEmbedder (${url})`, () =>
    new OpenAiEmbedder({
      url,
      model: process.env.EMBEDDINGS_MODEL ?? 'text-embedding-3-small',
      apiKey: process.env.EMBEDDINGS_API_KEY,
      dimensions: Number(process.env.EMBEDDINGS_DIMENSIONS ?? 1536),
      duplicateThreshold: Number(process.env.EMBEDDINGS_DUPLICATE_THRESHOLD ?? 0.95),
      shortDuplicateThreshold: Number(process.env.EMBEDDINGS_SHORT_DUPLICATE_THRESHOLD ?? 0.92),
      shortTextLength: 200,
    }),
  );
} else {
  describe('Embedder contract: OpenAiEmbedder', () => {
    test.skip('skipped: EMBEDDINGS_URL is not set, so no embeddings endpoint is reachable from this machine', () => undefined);
  });
}

describe('WinkGloveEmbedder', () => {
  test('a text with no known words embeds to the zero vector', async () => {
    const [v] = await sharedWinkEmbedder().embed(['qzxv wkpf', '']);
    expect(Array.from(v!).every((x) => x === 0)).toBe(true);
  });

  test('a word with diacritics the vocabulary lacks is looked up without them: café reads as cafe, naïve résumé as naive resume', async () => {
    const [accented, plain, decomposed, plainText, accentedText] = await sharedWinkEmbedder().embed([
      'café',
      'cafe',
      'cafe\u0301',
      'a naive resume from zurich on the facade of the strasse',
      'a naïve résumé from Zürich on the façade of the Straße',
    ]);
    expect(Array.from(plain!).some((x) => x !== 0)).toBe(true);
    expect(Array.from(accented!)).toEqual(Array.from(plain!));
    expect(Array.from(decomposed!)).toEqual(Array.from(plain!));
    expect(Array.from(accentedText!)).toEqual(Array.from(plainText!));
  });

  test('removing the common component keeps unrelated texts far apart (plain averages put them near 0.9)', async () => {
    const [a, b] = await sharedWinkEmbedder().embed([
      'The committee approved the annual budget after a long debate about taxes and public spending.',
      'Bake the cake for forty minutes until a skewer inserted in the middle comes out clean.',
    ]);
    expect(cosine(a!, b!)).toBeLessThan(0.4);
  });
});
