import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths } from './schema.js';
/** The API's named response shapes: `Schemas['Card']`, `Schemas['Collection']`, ... */
export type Schemas = components['schemas'];

export const SESSION_COOKIE = 'ai-editor';

/** Keeps the ai-editor session cookie between calls, as a browser would (one jar = one person). */
export class SessionJar {
  /** `ai-editor=<token>`, or undefined before login and after logout. */
  cookie: string | undefined;

  constructor(cookie?: string | undefined) {
    this.cookie = cookie;
  }

  /** Takes the session cookie from a response's Set-Cookie headers (an emptied cookie logs out). */
  update(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const [pair] = header.split(';');
      if (!pair?.startsWith(`${SESSION_COOKIE}=`)) continue;
      this.cookie = pair === `${SESSION_COOKIE}=` ? undefined : pair;
    }
  }
}

export interface CardsClientOptions {
  /** `ai-editor=<token>` of an existing session. */
  cookie?: string | undefined;
  /** Extra headers on every request (e.g. Origin, to exercise the CSRF check). */
  headers?: Record<string, string> | undefined;
  fetch?: typeof fetch | undefined;
}

export type CardsClient = Client<paths> & { session: SessionJar };

/**
 * A typed client of the Card Library API (openapi-fetch over the generated `paths`): paths, path
 * parameters, bodies and answers are checked against the gateway's OpenAPI document at compile time.
 *
 * ```ts
 * const api = createCardsClient('http://localhost:8090');
 * await api.POST('/api/auth', { body: { email, password } });
 * const { data } = await api.GET('/api/card/{card_id}', { params: { path: { card_id } } });
 * ```
 */
export function createCardsClient(baseUrl: string, options: CardsClientOptions = {}): CardsClient {
  const session = new SessionJar(options.cookie);
  const client = createClient<paths>({
    baseUrl,
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const cookies: Middleware = {
    onRequest({ request }) {
      if (session.cookie) request.headers.set('cookie', session.cookie);
      return request;
    },
    onResponse({ response }) {
      session.update(response);
      return response;
    },
  };
  client.use(cookies);
  return Object.assign(client, { session });
}

/** The success body type of an operation, e.g. `SuccessBody<'getCard'>`. */
export type SuccessBody<Op extends keyof operations> = operations[Op]['responses'] extends { 200: { content: { 'application/json': infer B } } } ? B : never;
