import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { createCardsClient, type CardsClient } from '@cards/client';
import type { TestUser } from '../support/accounts';

/** The typed client (generated from the OpenAPI document) with a signed-up user's session. */
export function typedClient(baseUrl: string, user?: TestUser, headers?: Record<string, string>): CardsClient {
  return createCardsClient(baseUrl, { cookie: user?.client.cookie, headers });
}

type DocResponse = { $ref?: string; content?: Record<string, { schema: unknown }> };
type Doc = { paths: Record<string, Record<string, { responses: Record<string, DocResponse> }>>; components: { responses?: Record<string, DocResponse> } };

/**
 * Checks real responses against the served OpenAPI document: the status must be documented for the
 * operation (or fall under `default`) and a JSON body must validate against that response's schema.
 */
export class ResponseValidator {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly validators = new Map<string, ReturnType<Ajv2020['compile']>>();
  readonly checked = new Set<string>();

  constructor(private readonly doc: Doc) {
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: 'doc', components: doc.components } as object);
  }

  static async load(baseUrl: string): Promise<ResponseValidator> {
    const res = await fetch(`${baseUrl}/api/openapi.json`);
    if (res.status !== 200) throw new Error(`GET /api/openapi.json: ${res.status}`);
    return new ResponseValidator((await res.json()) as Doc);
  }

  /** Problems with this response, or [] when it matches the document. `path` is the document's path template. */
  problems(method: string, path: string, status: number, body: unknown, contentType: string | null): string[] {
    const op = this.doc.paths[path]?.[method.toLowerCase()];
    if (!op) return [`${method} ${path} is not in the document`];
    const documented = op.responses[String(status)] ? String(status) : status >= 400 && op.responses.default ? 'default' : undefined;
    if (!documented) return [`${method} ${path} answered ${status}, which the document does not list (${Object.keys(op.responses).join(', ')})`];
    this.checked.add(`${method.toUpperCase()} ${path} ${documented}`);
    const content = this.response(op.responses[documented]!).content;
    if (!content) return body === undefined || body === '' ? [] : [`${method} ${path} ${status}: the document says no body, got ${JSON.stringify(body).slice(0, 200)}`];
    const json = content['application/json'];
    if (!json) return [];
    if (!contentType?.includes('application/json')) return [`${method} ${path} ${status}: expected JSON, got ${contentType}`];
    const key = `${method} ${path} ${documented}`;
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(rewriteRefs(json.schema) as object);
      this.validators.set(key, validate);
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).slice(0, 5).map((e) => `${method} ${path} ${status}: ${e.instancePath || '(body)'} ${e.message} ${JSON.stringify(e.params)}`);
  }

  /** A response written once under components.responses (405, 415) and referenced by each operation. */
  private response(response: DocResponse): DocResponse {
    const name = response.$ref?.match(/^#\/components\/responses\/(.+)$/)?.[1];
    return name ? (this.doc.components.responses?.[name] ?? {}) : response;
  }
}

/** `#/components/...` refs point into the registered document (`doc#/components/...`). */
function rewriteRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rewriteRefs);
  if (schema && typeof schema === 'object') {
    return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `doc${v}` : rewriteRefs(v)]));
  }
  return schema;
}

/** Polls until `check` resolves true (index catching up, ingestion finishing), failing after `timeoutMs`. */
export async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 30_000, intervalMs = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
