import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import express from 'express';
import { createLogger } from '@cards/platform';
import { errorHandler } from '../src/http/error-handler';
import { HttpError } from '../src/http/http-error';
import { listening } from './app-without-services';

/** A gateway-shaped app whose routes throw the given errors, logging into `lines`. */
async function appThrowing(lines: { level: number; msg: string; err?: unknown }[]): Promise<{ url: string; server: Server }> {
  const logger = createLogger(
    'gateway',
    'info',
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  );
  const app = express();
  app.get('/busy', () => {
    throw new HttpError(503, 'Too many uploads are under way; upload the file again in a few seconds');
  });
  app.get('/broken', () => {
    throw new Error('database password is hunter2');
  });
  app.use(errorHandler(logger));
  const { server } = await listening(createServer(app));
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, server };
}

describe('the error handler log', () => {
  const lines: { level: number; msg: string; err?: unknown }[] = [];
  let url: string;
  let server: Server;
  beforeAll(async () => ({ url, server } = await appThrowing(lines)));
  afterAll(() => new Promise((resolve) => server.close(resolve)));
  beforeEach(() => (lines.length = 0));

  it("logs the gateway's own overload 503 as one warn line without a stack, and answers it with its message", async () => {
    const res = await fetch(`${url}/busy`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ message: 'Too many uploads are under way; upload the file again in a few seconds' });
    expect(lines.map((line) => ({ level: line.level, msg: line.msg, hasErr: line.err !== undefined }))).toEqual([{ level: 40, msg: 'request refused: server busy', hasErr: false }]);
  });

  it('logs an unexpected failure as an error with its cause, and answers 500 without internals', async () => {
    const res = await fetch(`${url}/broken`);
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ message: 'Internal error' });
    expect(lines.map((line) => ({ level: line.level, msg: line.msg, hasErr: line.err !== undefined }))).toEqual([{ level: 50, msg: 'request failed', hasErr: true }]);
  });
});
