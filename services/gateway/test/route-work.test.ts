import { createServer, type ServerResponse } from 'node:http';
import express, { Router } from 'express';
import { createLogger } from '@cards/platform';
import { Registry } from 'prom-client';
import { errorHandler } from '../src/http/error-handler';
import { requestAdmission } from '../src/http/request-admission';
import { endRouteWorkWhenHandlersReturn } from '../src/http/route-work';
import { closed, listening, until } from './app-without-services';

/**
 * A write's slot is held while its route works on without its client (request-admission.ts), and given back once that
 * work is over, however the route ends: here a route that returns without answering once its client has gone, as a
 * future early return could. The app is the gateway's admission, error handler and route-work hooks around a route of
 * the test's own (no route of the gateway returns so today); the gate ends it when the test says.
 */
describe("a write's slot comes back when its route returns without answering, its client gone", () => {
  test('the only slot is free for the next write once the route has returned', async () => {
    let release!: () => void;
    const mayReturn = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    const registry = new Registry();
    const admission = requestAdmission({ atOnce: 1, heavyAtOnce: 1, queue: 0, queueWaitMs: 600_000, perClient: 4 }, createLogger('route-work-test', 'silent'), registry);
    const app = express();
    app.use('/api', express.json(), admission.share, admission.slot);
    const api = Router();
    // A write (POST, not a search: its work goes on without its client) that returns early, answering nothing, once its
    // client has gone; the next one answers.
    api.post('/thing', async (_req, res) => {
      started += 1;
      if (started > 1) {
        res.status(204).end();
        return;
      }
      await mayReturn;
      if (res.destroyed) return;
      res.status(204).end();
    });
    endRouteWorkWhenHandlersReturn(api);
    app.use('/api', api);
    app.use(errorHandler(createLogger('route-work-test', 'silent')));
    const { server, base } = await listening(createServer(app));
    let answersClosed = 0;
    server.on('request', (_req, res: ServerResponse) => res.once('close', () => (answersClosed += 1)));
    const post = (signal?: AbortSignal) => fetch(`${base}/api/thing`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', signal });
    try {
      const leaving = new AbortController();
      const first = post(leaving.signal).catch((err: unknown) => err);
      await until(() => started === 1);
      leaving.abort();
      await until(() => answersClosed === 1);
      await first;
      // Its work goes on without its client: the only slot is still held (no line: the next write is refused at once).
      expect((await post()).status).toBe(503);
      release();
      // The route returned without ending or destroying its answer. Before, only res.end or res.destroy ended a write's
      // work: the slot was held for good and every later request was refused 503.
      const next = await post();
      expect(next.status).toBe(204);
      expect(await registry.getSingleMetricAsString('http_requests_in_flight')).toMatch(/^http_requests_in_flight\{line="light"\} 0$/m);
    } finally {
      await closed(server);
    }
  });
});
