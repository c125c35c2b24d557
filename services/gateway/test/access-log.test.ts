import type { AddressInfo } from 'node:net';
import { createServer, request } from 'node:http';
import { Writable } from 'node:stream';
import express, { Router } from 'express';
import { createLogger } from '@cards/platform';
import { accessLog, type AccessLogLevel } from '../src/http/access-log';
import { observeRequestEnds } from '../src/http/request-end';
import { recordMountPath } from '../src/http/route-label';
import { listening } from './app-without-services';

/** A gateway-shaped app (access log first, routes in a router mounted at /api) whose log lines land in `lines`. */
async function appLoggingTo(loggerLevel: string, accessLevel: AccessLogLevel) {
  const lines: Array<Record<string, unknown>> = [];
  let lineWritten!: () => void;
  const firstLine = new Promise<void>((resolve) => (lineWritten = resolve));
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      lineWritten();
      done();
    },
  });
  const logger = createLogger('gateway', loggerLevel, sink);
  const app = express();
  app.use((_req, res, next) => {
    res.setHeader('x-request-id', 'req-1');
    next();
  });
  app.use(observeRequestEnds([accessLog(logger, accessLevel)]));
  const api = Router();
  api.use(recordMountPath('/api'));
  api.get('/card/:card_id', (_req, res) => void res.status(404).json({ message: 'No such card' }));
  let slowArrived!: () => void;
  const slowRequestIn = new Promise<void>((resolve) => (slowArrived = resolve));
  api.get('/slow', () => slowArrived());
  app.use('/api', api);
  const { server } = await listening(createServer(app));
  const { port } = server.address() as AddressInfo;
  return { lines, firstLine, port, slowRequestIn, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('access log', () => {
  it('writes one line per answered request at the configured level: route pattern, status, duration, request id', async () => {
    const app = await appLoggingTo('info', 'info');
    const res = await fetch(`http://127.0.0.1:${app.port}/api/card/0f3c9c1e-1111-4222-8333-444455556666?token=abc`);
    expect(res.status).toBe(404);
    await app.firstLine;
    await app.close();
    expect(app.lines).toEqual([{ level: 30, time: expect.any(Number), service: 'gateway', name: 'gateway', reqId: 'req-1', method: 'GET', route: '/api/card/:card_id', status: 404, ms: expect.any(Number), reason: 'not-found', msg: 'http request' }]);
  });

  it('marks a request whose client left before the answer as aborted', async () => {
    const app = await appLoggingTo('info', 'info');
    const req = request(`http://127.0.0.1:${app.port}/api/slow`);
    const gone = new Promise<void>((resolve) => req.on('error', () => resolve()));
    req.end();
    // The handler never answers: once the request is in, the client gives up.
    await app.slowRequestIn;
    req.destroy();
    await gone;
    await app.close();
    // The response's 'close' can follow the server's.
    await app.firstLine;
    // Nothing was sent: not the 200 Node's statusCode holds until an answer is set, but nginx's 499 for a client gone.
    expect(app.lines).toEqual([expect.objectContaining({ route: '/api/slow', aborted: true, status: 499, reason: 'client-gone' })]);
  });

  it('writes nothing when ACCESS_LOG_LEVEL is silent, or below what LOG_LEVEL lets through', async () => {
    for (const [loggerLevel, accessLevel] of [['info', 'silent'], ['warn', 'info'], ['info', 'debug']] as const) {
      const app = await appLoggingTo(loggerLevel, accessLevel);
      // By the time the second answer is in, the first request's line would have been written.
      for (let i = 0; i < 2; i++) expect((await fetch(`http://127.0.0.1:${app.port}/api/card/x`)).status).toBe(404);
      await app.close();
      expect({ loggerLevel, accessLevel, lines: app.lines }).toEqual({ loggerLevel, accessLevel, lines: [] });
    }
  });
});
