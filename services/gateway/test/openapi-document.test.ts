import type { Express } from 'express';
import { OPERATIONS, buildOpenApiDocument, toOpenApiPath } from '../src/openapi/document';
import { appWithoutServices, counterInOneWindow, listening } from './app-without-services';
import { originCheckJudges } from '../src/http/cross-origin';
import { SESSION_HINT_COOKIE } from '../src/http/web-app';

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  name?: string;
}

/** Every METHOD path the express app answers, found by walking its router stack (nested routers mounted at /api). */
function servedRoutes(app: Express): string[] {
  const out: string[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const [method, on] of Object.entries(layer.route.methods)) if (on && method !== '_all') out.push(`${method.toUpperCase()} ${prefix}${layer.route.path}`);
      } else if (layer.name === 'router' && layer.handle?.stack) {
        // The only nested router is the API router, mounted at /api (app.ts).
        walk(layer.handle.stack, '/api');
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  // POST /api/file appears twice: its own body parser, then the handler.
  return [...new Set(out)];
}

describe('OpenAPI document', () => {
  const document = buildOpenApiDocument();

  it('documents every route the gateway serves, and nothing it does not serve', () => {
    const served = servedRoutes(appWithoutServices());
    expect(served.length).toBeGreaterThan(30);
    const documented = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
      Object.keys(item as object)
        .filter((k) => ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(k))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(served.map((route) => route.replace(/^(\w+) (.*)$/, (_m, method: string, path: string) => `${method} ${toOpenApiPath(path)}`)).sort()).toEqual(documented.sort());
  });

  it('is OpenAPI 3.1 with unique operation ids, a body schema for every route that parses one, and JSON errors', () => {
    expect(document.openapi).toBe('3.1.0');
    const ids = OPERATIONS.map((op) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const op of OPERATIONS) {
      const item = (document.paths as Record<string, Record<string, any>>)[toOpenApiPath(op.path)]![op.method]!;
      expect(item.responses.default.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
      if (op.auth === 'required') expect(item.security).toEqual([{ cookieAuth: [] }]);
      const pathParams = [...op.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
      const named = (where: string) => (item.parameters ?? []).filter((p: { in: string }) => p.in === where).map((p: { name: string }) => p.name).sort();
      expect(named('path')).toEqual(pathParams.sort());
      expect(named('header')).toEqual(Object.keys(op.headers?.shape ?? {}).sort());
      expect((item.parameters ?? []).filter((p: { in: string }) => p.in !== 'path' && p.in !== 'header')).toEqual([]);
    }
  });

  it('describes the request bodies with the routes\' own zod schemas (required fields and limits)', () => {
    const paths = document.paths as Record<string, Record<string, any>>;
    const card = paths['/api/card']!.post.requestBody.content['application/json'].schema;
    expect(card.required).toEqual(expect.arrayContaining(['card_html', 'link', 'private']));
    expect(card.properties.card_html.maxLength).toBe(500_000);
    const vote = paths['/api/vote']!.post.requestBody.content['application/json'].schema;
    expect(vote.required).toEqual(['card_metadata_id', 'vote']);
  });

  it('states the account rules identity enforces: username, website, new passwords, e-mail', () => {
    const paths = document.paths as Record<string, Record<string, any>>;
    const body = (path: string, method: string) => paths[path]![method].requestBody.content['application/json'].schema;
    const user = body('/api/user', 'put').properties;
    const username = user.username.anyOf?.find((s: { type?: string }) => s.type === 'string') ?? user.username;
    expect(username.maxLength).toBe(32);
    // JSON Schema reads a pattern with the u flag: \p{L} is any letter, and {3,32} counts code points as maxLength does.
    const pattern = new RegExp(username.pattern, 'u');
    for (const ok of ['abc', 'A_b-9', 'x'.repeat(32), '', '\u00e9mile', '\uae40\ucca0\uc218', 'Zo\u00eb', '\u5c71\u7530'.repeat(16)]) expect([ok, pattern.test(ok)]).toEqual([ok, true]);
    for (const bad of ['ab', 'x'.repeat(33), 'with space', 'a.b', 'a\u200bb']) expect([bad, pattern.test(bad)]).toEqual([bad, false]);
    // What the pattern cannot say: one script, nothing invisible, and uniqueness by case and look-alike letters (the 409).
    expect(username.description).toMatch(/one script/);
    expect(username.description).toMatch(/no invisible or compatibility characters, no tatweel/);
    expect(username.description).toMatch(/look-alike letters \(the confusable skeleton.*\): 409 'username: already taken'/);
    const website = user.website.anyOf?.find((s: { type?: string }) => s.type === 'string') ?? user.website;
    expect(website.maxLength).toBe(512);
    expect(body('/api/register/{invitation_id}', 'post').properties.password.minLength).toBe(8);
    expect(body('/api/invitation', 'post').properties.email.maxLength).toBe(254);
  });

  it('lists 405 (with Allow) on every operation and 415 on every operation behind the /api body check, written once under components.responses', () => {
    const paths = document.paths as Record<string, Record<string, any>>;
    const responses = (document.components as { responses: Record<string, any> }).responses;
    expect(responses.MethodNotAllowed.headers.Allow.required).toBe(true);
    expect(responses.MethodNotAllowed.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(responses.UnsupportedMediaType.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    for (const op of OPERATIONS) {
      const item = paths[toOpenApiPath(op.path)]![op.method]!;
      const answeredBeforeBodyCheck = !op.path.startsWith('/api/') || op.path === '/api/openapi.json' || op.path === '/api/docs';
      const listed = { operation: op.operationId, 405: item.responses['405'], 415: item.responses['415'] };
      expect(listed).toEqual({
        operation: op.operationId,
        405: { $ref: '#/components/responses/MethodNotAllowed' },
        415: answeredBeforeBodyCheck ? undefined : { $ref: '#/components/responses/UnsupportedMediaType' },
      });
    }
  });

  it('lists on every operation the answers node-server.ts gives before any route: 408 (too slow), 431 (head too large), 503 (connection cap, with Retry-After)', () => {
    const paths = document.paths as Record<string, Record<string, any>>;
    const responses = (document.components as { responses: Record<string, any> }).responses;
    for (const name of ['RequestTimeout', 'RequestHeadTooLarge', 'ServiceUnavailable']) {
      expect({ name, schema: responses[name]?.content['application/json'].schema }).toEqual({ name, schema: { $ref: '#/components/schemas/Error' } });
    }
    expect(responses.ServiceUnavailable.headers['Retry-After']).toEqual(expect.objectContaining({ required: false }));
    // The cards service's busy refusal (error-handler.ts serviceBusy, cards-busy.test.ts) is a 503 with Retry-After too.
    expect(responses.ServiceUnavailable.description).toMatch(/cards service's large-card HTML cleaners .*\(POST \/api\/card, PUT \/api\/card\/update; .*with Retry-After\)/);
    expect(responses.ServiceUnavailable.headers['Retry-After'].description).toMatch(/the cards service's large-card cleaners/);
    // A full store (error-handler.ts, storage-full.test.ts): its 503 names it, with Retry-After 30.
    expect(responses.ServiceUnavailable.description).toMatch(/the server's storage is full: nothing was saved \(any write.*with Retry-After/);
    expect(responses.ServiceUnavailable.headers['Retry-After'].description).toMatch(/the server's storage is full \(30\)/);
    for (const op of OPERATIONS) {
      const item = paths[toOpenApiPath(op.path)]![op.method]!;
      expect({ operation: op.operationId, 408: item.responses['408'], 431: item.responses['431'], 503: item.responses['503'] }).toEqual({
        operation: op.operationId,
        408: { $ref: '#/components/responses/RequestTimeout' },
        431: { $ref: '#/components/responses/RequestHeadTooLarge' },
        // DELETE /api/auth describes its own 503 (below), the connection cap included.
        503: op.operationId === 'logout' ? expect.objectContaining({ description: expect.stringMatching(/too many open connections/) }) : { $ref: '#/components/responses/ServiceUnavailable' },
      });
    }
  });

  it("describes DELETE /api/auth's own 503: the cookie cleared all the same, the server's session alive until it expires", () => {
    const logout = (document.paths as Record<string, Record<string, any>>)['/api/auth']!.delete!;
    expect(logout.responses['503'].description).toMatch(/the ai-editor cookie is cleared all the same, so this browser is signed out, but the server keeps the session until it expires/);
    expect(logout.responses['503'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(logout.responses['503'].headers['Set-Cookie']).toEqual(expect.objectContaining({ required: false, description: expect.stringMatching(/^Sent when .*ai-editor=; Path=\/; Expires=Thu, 01 Jan 1970/) }));
  });

  it('lists 429 with Retry-After on every API operation (the client\'s share of the request bound), and describes the shares of the auth rate limits, uploads, file reads and large cards', () => {
    const paths = document.paths as Record<string, Record<string, any>>;
    const responses = (document.components as { responses: Record<string, any> }).responses;
    expect(responses.TooManyRequests.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(responses.TooManyRequests.headers['Retry-After']).toEqual(expect.objectContaining({ required: true }));
    expect(responses.TooManyRequests.description).toMatch(/FILE_READS_PER_CLIENT/);
    expect(responses.TooManyRequests.description).toMatch(/CARD_HTML_PER_USER/);
    expect(responses.TooManyRequests.description).toMatch(/HTTP_REQUESTS_PER_CLIENT/);
    // requestAdmission's per-client share (request-admission.ts) covers every /api route; /livez, /healthz, /metrics and the docs are outside it.
    for (const op of OPERATIONS) {
      const listed = paths[toOpenApiPath(op.path)]![op.method]!.responses['429'];
      const underBound = op.path.startsWith('/api/') && op.tag !== 'Meta';
      expect({ operation: op.operationId, 429: listed }).toEqual({ operation: op.operationId, 429: underBound ? { $ref: '#/components/responses/TooManyRequests' } : undefined });
    }
  });

  it('lists 504 on every /api operation that calls a backing service, and 502 on the two file reads the files service answers', () => {
    const paths = document.paths as Record<string, Record<string, any>>;
    for (const op of OPERATIONS) {
      const responses = paths[toOpenApiPath(op.path)]![op.method]!.responses;
      const callsServices = op.path.startsWith('/api/') && op.tag !== 'Meta';
      expect({ operation: op.operationId, 504: responses['504'] }).toEqual({ operation: op.operationId, 504: callsServices ? { $ref: '#/components/responses/GatewayTimeout' } : undefined });
      expect({ operation: op.operationId, 502: responses['502'] !== undefined }).toEqual({ operation: op.operationId, 502: ['getFile', 'downloadFile'].includes(op.operationId) });
    }
  });

  it('lists 403 on every operation the cross-site origin check refuses (a foreign Origin with the cookie), as the app answers', async () => {
    const paths = document.paths as Record<string, Record<string, any>>;
    const responses = (document.components as { responses: Record<string, any> }).responses;
    const described = (listed: any): string | undefined => (listed?.$ref ? responses[listed.$ref.replace('#/components/responses/', '')] : listed)?.description;
    const { createServer } = await import('node:http');
    const server = createServer(appWithoutServices());
    await listening(server);
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      for (const op of OPERATIONS) {
        const path = op.path.replace(/:page\b/g, '1').replace(/:email\b/g, 'someone%40example.com').replace(/:\w+/g, '00000000-0000-4000-8000-000000000000');
        const res = await fetch(`${base}${path}`, {
          method: op.method.toUpperCase(),
          headers: { cookie: 'ai-editor=some-session', origin: 'https://evil.example', 'content-type': 'application/json' },
          ...(op.method === 'get' ? {} : { body: '{}' }),
        });
        const body = (await res.json().catch(() => undefined)) as { message?: string } | undefined;
        const refused = res.status === 403 && /^Cross-site request refused/.test(body?.message ?? '');
        // The document follows originCheck's own rule; the answers show the rule is the middleware's.
        const judged = op.path.startsWith('/api/') && originCheckJudges(op.method);
        const listed = described(paths[toOpenApiPath(op.path)]![op.method]!.responses['403']);
        expect({ operation: op.operationId, refused, listed: refused ? /cross-site/i.test(listed ?? '') : 'not refused' }).toEqual({
          operation: op.operationId,
          refused: judged || refused,
          listed: judged || refused ? true : 'not refused',
        });
      }
    } finally {
      server.close();
    }
  });

  it('says that HEAD /api/password/{email} is 405 (head-requests.test.ts), so no HEAD sends a mail', () => {
    const reset = OPERATIONS.find((op) => op.operationId === 'requestPasswordReset')!;
    const item = (document.paths as Record<string, Record<string, any>>)[toOpenApiPath(reset.path)]!.get;
    expect(item.description).toMatch(/HEAD is 405 \(Allow: GET, OPTIONS\) before any check, count or mail/);
  });

  it('says that GET /api/auth\'s 401 clears a session cookie that is no live session, and names the readable ai-editor-hint cookie (session-hint.test.ts)', () => {
    const current = OPERATIONS.find((op) => op.operationId === 'currentUser')!;
    const item = (document.paths as Record<string, Record<string, any>>)[toOpenApiPath(current.path)]!.get;
    expect(item.description).toMatch(/A 401 answered to a request that carried an ai-editor cookie .* also clears that cookie/);
    expect(item.responses['401'].description).toMatch(/a cookie sent that is no live session is cleared/);
    expect(item.responses['401'].headers['Set-Cookie'].description).toMatch(/^Sent when the request carried an ai-editor cookie: ai-editor=; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax/);
    expect(item.responses['401'].content['application/json']).toBeDefined();
    const scheme = (document.components as { securitySchemes: Record<string, { description: string }> }).securitySchemes.cookieAuth!;
    expect(scheme.description).toContain(`${SESSION_HINT_COOKIE}=signed-in or signed-out (not HttpOnly, SameSite=Lax, Path=/, 2 minutes)`);
    expect(scheme.description).toMatch(/grants nothing; GET \/api\/auth stays the answer/);
  });

  it('the auth rate limits answer their 429 with Retry-After, as the document says', async () => {
    const { createServer } = await import('node:http');
    const server = createServer(appWithoutServices({ rateLimits: { perIpPerMinute: 2, perEmailPerMinute: 100, counter: counterInOneWindow() } }));
    await listening(server);
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/invitation`;
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 3; i++) {
        last = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
        statuses.push(last.status);
      }
      expect(statuses).toEqual([400, 400, 429]);
      expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
      // The message names the wait Retry-After gives (it said "in a minute" whatever was left of the window).
      const seconds = Number(last!.headers.get('retry-after'));
      const { message } = (await last!.json()) as { message: string };
      const said = Number(/try again in (\d+) seconds?$/.exec(message)?.[1]);
      expect(Math.abs(said - seconds)).toBeLessThanOrEqual(1);
    } finally {
      server.close();
    }
  });

  it('types a file\'s ingestion_status as its three values, says timestamps are UTC, and declares a download as any media type', () => {
    const schemas = (document.components as { schemas: Record<string, any> }).schemas;
    for (const name of ['File', 'FileWithContent']) expect(schemas[name].properties.ingestion_status.enum).toEqual(['pending', 'done', 'failed']);
    // The server's timestamps stay as the spec's examples write them (no offset); the document says they are UTC.
    expect(schemas.Card.properties.created_at.description).toMatch(/^UTC date-time, ISO 8601 without a zone offset/);
    expect(schemas.File.properties.updated_at.description).toMatch(/read it as UTC/);
    expect((document.info as { description: string }).description).toMatch(/Timestamps are UTC, written ISO 8601 without a zone offset/);
    const download = (document.paths as Record<string, Record<string, any>>)['/api/file/{file_id}/download']!.get;
    expect(Object.keys(download.responses['200'].content)).toEqual(['*/*']);
    expect(download.responses['200'].content['*/*'].schema).toMatchObject({ type: 'string', format: 'binary' });
    expect(download.description).toMatch(/Content-Type is the file's own MIME type/);
    expect(download.description).toMatch(/parseAs: 'arrayBuffer'/);
  });
});
