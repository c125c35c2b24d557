import { loadConfig, createLogger } from '@cards/platform';
import { searchConfigSchema } from '../src/config';
import { createEmbedder } from '../src/main';

describe('an EMBEDDINGS_URL with credentials in it', () => {
  it('is logged without its password or query values', () => {
    const lines: string[] = [];
    const logger = createLogger('search', 'info', { write: (line: string) => void lines.push(line) });
    const config = loadConfig(searchConfigSchema, { EMBEDDINGS_URL: 'http://user:KEY-in-url@embeddings.example/v1?api_key=QKEY-in-url' });
    createEmbedder(config, logger);
    expect(lines.map((line) => JSON.parse(line) as { url?: string })).toEqual([expect.objectContaining({ url: 'http://user:***@embeddings.example/v1?api_key=***' })]);
    expect(lines.join('')).not.toMatch(/KEY-in-url/);
  });
});
