import { request } from 'undici';
import { RetryableUnavailableError, UnavailableError } from '@cards/platform';
import { stopIfCancelled } from '../../domain/model';
import type { Embedder } from '../../domain/ports';

export interface OpenAiEmbedderOptions {
  /** Base URL of an OpenAI-compatible API (OpenAI, TEI, Ollama, vLLM); /v1/embeddings is appended unless present. */
  url: string;
  model: string;
  apiKey?: string;
  dimensions: number;
  /** Near-duplicate cosine for texts of at least shortTextLength characters. */
  duplicateThreshold: number;
  /** Near-duplicate cosine for shorter texts (short texts vary less, so the bar is lower). */
  shortDuplicateThreshold: number;
  shortTextLength: number;
  timeoutMs?: number;
  /** Texts per request. */
  batchSize?: number;
}

interface EmbeddingsResponse {
  data?: { index?: number; embedding?: unknown }[];
}

/** Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint; vectors are normalized to unit length. */
export class OpenAiEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  readonly orderAware = true;
  private readonly endpoint: string;

  constructor(private readonly options: OpenAiEmbedderOptions) {
    this.id = `openai:${options.model}:${options.dimensions}`;
    this.dimensions = options.dimensions;
    const base = options.url.replace(/\/+$/, '');
    this.endpoint = base.endsWith('/embeddings') ? base : base.endsWith('/v1') ? `${base}/embeddings` : `${base}/v1/embeddings`;
  }

  async ready(): Promise<void> {}

  /**
   * `signal`: a search's (its call's). Once its caller went away, the request under way is aborted (its connection
   * closed: the model stops working for nobody, and a paid API is not billed for the rest) and no later batch is sent;
   * the search ends with the AbortError of a cancelled call, not an embedder outage.
   */
  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const batch = this.options.batchSize ?? 64;
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += batch) out.push(...(await this.embedBatch(texts.slice(i, i + batch), signal)));
    return out;
  }

  duplicateThreshold(contentLength: number): number {
    return contentLength < this.options.shortTextLength ? this.options.shortDuplicateThreshold : this.options.duplicateThreshold;
  }

  private async embedBatch(texts: string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    stopIfCancelled(signal);
    // An empty input is rejected by most servers; it has no meaning, so it embeds to the zero vector.
    const input = texts.map((t) => (t.trim() === '' ? ' ' : t));
    let body: EmbeddingsResponse;
    try {
      const response = await request(this.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.options.model, input }),
        headersTimeout: this.options.timeoutMs ?? 30_000,
        bodyTimeout: this.options.timeoutMs ?? 30_000,
        ...(signal ? { signal } : {}),
      });
      if (response.statusCode !== 200) {
        const text = await response.body.text();
        const message = `embeddings endpoint answered ${response.statusCode}: ${text.slice(0, 200)}`;
        // Down, overloaded, rate-limiting or refusing our credentials: it passes (or an operator fixes the key), so
        // the cards waiting to be indexed wait too. Any other answer is about these texts, and retrying cannot help.
        throw TRANSIENT_STATUSES.has(response.statusCode) || response.statusCode >= 500 ? new RetryableUnavailableError(message) : new UnavailableError(message);
      }
      body = (await response.body.json()) as EmbeddingsResponse;
    } catch (err) {
      stopIfCancelled(signal);
      if (err instanceof UnavailableError) throw err;
      throw new RetryableUnavailableError(`embeddings endpoint unreachable: ${err instanceof Error ? err.message : String(err)}`);
    }
    const data = Array.isArray(body.data) ? body.data : [];
    if (data.length !== texts.length) throw new UnavailableError(`embeddings endpoint returned ${data.length} vectors for ${texts.length} texts`);
    const ordered = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    return ordered.map((item, i) => {
      const raw = item.embedding;
      if (!Array.isArray(raw) || raw.length !== this.dimensions || !raw.every((x) => typeof x === 'number')) {
        throw new UnavailableError(`embeddings endpoint returned a vector of the wrong shape (expected ${this.dimensions} numbers)`);
      }
      return texts[i]!.trim() === '' ? new Float32Array(this.dimensions) : unit(raw as number[]);
    });
  }
}

/** Statuses under 500 that say nothing about the texts sent: timeout, unauthorized/forbidden (key), rate limit. */
const TRANSIENT_STATUSES = new Set([401, 403, 408, 425, 429]);

function unit(values: number[]): Float32Array {
  let norm = 0;
  for (const v of values) norm += v * v;
  const out = new Float32Array(values.length);
  if (norm === 0) return out;
  const inv = 1 / Math.sqrt(norm);
  for (let i = 0; i < values.length; i++) out[i] = values[i]! * inv;
  return out;
}
