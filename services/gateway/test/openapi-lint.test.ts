import { createServer, type Server } from 'node:http';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { appWithoutServices, closed, listening } from './app-without-services';

type Schema = { type?: string | string[]; $ref?: string; anyOf?: Schema[]; properties?: Record<string, Schema> };
type Operation = { requestBody?: { content: Record<string, { schema: Schema }> } };
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

/** The document as GET /api/openapi.json serves it, as other teams' tools read it. */
let served: string;
let server: Server | undefined;

beforeAll(async () => {
  const started = await listening(createServer(appWithoutServices()));
  server = started.server;
  const res = await fetch(`${started.base}/api/openapi.json`);
  expect(res.status).toBe(200);
  served = await res.text();
});

afterAll(async () => {
  if (server) await closed(server);
});

const bodySchema = (doc: Document, path: string, method: string) => doc.paths[path]![method]!.requestBody!.content['application/json']!.schema;

describe('the served OpenAPI document, read by a standard linter', () => {
  it('passes Redocly\'s recommended-strict rules and the tag, example and path rules a generator trips on', async () => {
    const config = await createConfig({
      extends: ['recommended-strict'],
      rules: {
        // An internal API without a published licence: nothing a consumer's tool needs.
        'info-license': 'off',
        'operation-tag-defined': 'error',
        'no-invalid-schema-examples': 'error',
        'no-ambiguous-paths': 'error',
      },
    });
    const problems = await lintFromString({ source: served, absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`)).toEqual([]);
  });

  it('keeps null beside a named schema rather than in it, so generated clients do not type User as nullable', () => {
    const doc = JSON.parse(served) as Document;
    const nullable = Object.entries(doc.components.schemas)
      .filter(([, s]) => (Array.isArray(s.type) && s.type.includes('null')) || s.anyOf?.some((o) => o.type === 'null'))
      .map(([name]) => name);
    expect(nullable).toEqual([]);
    expect(doc.components.schemas.Card!.properties!.author).toEqual({ anyOf: [{ $ref: '#/components/schemas/User' }, { type: 'null' }] });
  });

  it('names the schemas several operations share, so generators do not name them after the first operation using them', () => {
    const doc = JSON.parse(served) as Document;
    expect(bodySchema(doc, '/api/card/fulltextsearch/{page}', 'post')).toEqual({ $ref: '#/components/schemas/CardSearchRequest' });
    expect(bodySchema(doc, '/api/card/search/{page}', 'post')).toEqual({ $ref: '#/components/schemas/CardSearchRequest' });
    expect(bodySchema(doc, '/api/card_collection/fulltextsearch/{page}', 'post')).toEqual({ $ref: '#/components/schemas/CollectionSearchRequest' });
    expect(bodySchema(doc, '/api/password', 'post').anyOf).toEqual([{ $ref: '#/components/schemas/PasswordReset' }, { $ref: '#/components/schemas/PasswordResetMailRequest' }]);
    const looseBoolean = { $ref: '#/components/schemas/LooseBoolean' };
    expect(bodySchema(doc, '/api/card', 'post').properties!.private).toEqual(looseBoolean);
    expect(bodySchema(doc, '/api/user', 'put').properties!.visible_email).toEqual(looseBoolean);
    expect(bodySchema(doc, '/api/vote', 'post').properties!.vote).toEqual(looseBoolean);
  });
});
