import { createServer } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { uploadAdmission, type UploadAdmissionLimits } from '../src/http/upload-admission';
import { HttpError } from '../src/http/http-error';
import { listening } from './app-without-services';

/** An app whose upload route holds each admitted upload until the test answers it; the caller is named by x-user. */
async function serve(limits: UploadAdmissionLimits) {
  const admitted: Response[] = [];
  const waiters: Array<() => void> = [];
  const app = express();
  app.use((req, _res, next) => {
    req.user = { id: String(req.headers['x-user']) } as Request['user'];
    next();
  });
  app.post('/upload', uploadAdmission(limits), (_req, res) => {
    admitted.push(res);
    waiters.shift()?.();
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const http = err as HttpError;
    res.status(http.status).set(http.headers).json({ message: http.message });
  });
  const { server } = await listening(createServer(app));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/upload`;
  return {
    /** Sends an upload of `bytes` as `user`; resolves with the answer once there is one. */
    upload: (user: string, bytes: number) => fetch(url, { method: 'POST', headers: { 'x-user': user, 'content-type': 'text/plain' }, body: 'x'.repeat(bytes) }),
    /** Resolves when the number of admitted uploads reaches `count`. */
    admittedCount: (count: number) => (admitted.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    answer: (index: number) => admitted[index]!.json({ ok: true }),
    close: () => new Promise<void>((resolve) => {
      for (const res of admitted) if (!res.writableEnded) res.end();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

describe('uploadAdmission: one user holds at most half the bound beyond their first upload', () => {
  it('admits another user while one user is refused a second upload beyond their share', async () => {
    const app = await serve({ bodyLimitBytes: 1000, uploadsAtOnce: 2, maxQueued: 0, maxWaitMs: 60_000 });
    try {
      const alice1 = app.upload('alice', 600);
      await app.admittedCount(1);
      const alice2 = await app.upload('alice', 600);
      expect(alice2.status).toBe(429);
      expect(alice2.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await alice2.json()).toEqual({ message: expect.stringMatching(/^You have too many uploads under way/) });

      // Bob still finds room; before, Alice's second upload took it and Bob was answered 503.
      const bob = app.upload('bob', 600);
      await app.admittedCount(2);
      app.answer(0);
      app.answer(1);
      expect((await alice1).status).toBe(200);
      expect((await bob).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('refuses a user\'s further upload at once instead of letting it take the waiting line, and admits it once theirs is answered', async () => {
    const app = await serve({ bodyLimitBytes: 1000, uploadsAtOnce: 1, maxQueued: 1, maxWaitMs: 2_000 });
    try {
      // A user's first upload is admitted whatever its size, even above their share.
      const alice1 = app.upload('alice', 1000);
      await app.admittedCount(1);
      const alice2 = await app.upload('alice', 100);
      expect(alice2.status).toBe(429);

      // The waiting line is left to others: Bob waits, and is admitted when Alice's upload is answered.
      const bob = app.upload('bob', 100);
      app.answer(0);
      expect((await alice1).status).toBe(200);
      await app.admittedCount(2);
      app.answer(1);
      expect((await bob).status).toBe(200);

      // Alice's share is hers again.
      const alice3 = app.upload('alice', 100);
      await app.admittedCount(3);
      app.answer(2);
      expect((await alice3).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});
