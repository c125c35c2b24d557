// Baseline for bench/auth-bench.ts: a bare express app doing the same cookie check as
// gateway + identity (JWT verify, session row, user row in SQLite), all in one process, no gRPC hop.
import express from 'express';
import cookieParser from 'cookie-parser';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@cards/platform';
import { IdentityService } from '../../services/identity/src/application/identity-service';
import { JwtTokenSigner } from '../../services/identity/src/adapters/crypto/jwt-token-signer';
import { ScryptPasswordHasher } from '../../services/identity/src/adapters/crypto/scrypt-password-hasher';
import { SqliteIdentityRepository } from '../../services/identity/src/adapters/sqlite/sqlite-identity-repository';
import type { Mailer, OutgoingMail } from '../../services/identity/src/domain/ports';

async function main() {
  const sent: OutgoingMail[] = [];
  const mailer: Mailer = { send: async (m) => void sent.push(m), close: async () => undefined };
  const service = new IdentityService({
    repository: new SqliteIdentityRepository(join(mkdtempSync(join(tmpdir(), 'auth-baseline-')), 'identity.db')),
    mailer,
    hasher: new ScryptPasswordHasher(1024),
    tokens: new JwtTokenSigner('x'.repeat(48)),
    publicUrl: 'http://localhost',
    logger: createLogger('baseline', 'warn'),
  });
  const invitation = await service.invite('bench@example.com', []);
  await service.register(invitation, 'password123', 'password123');
  const { token } = await service.login('bench@example.com', 'password123');

  const app = express();
  app.use(cookieParser());
  app.get('/api/auth', async (req, res) => {
    try {
      const u = await service.resolveSession(String(req.cookies['ai-editor'] ?? ''));
      res.json({ id: u.id, email: u.email, username: u.username, website: u.website, visible_email: u.visibleEmail });
    } catch {
      res.status(401).json({ message: 'Not logged in' });
    }
  });
  const server = app.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    process.stdout.write(`${JSON.stringify({ port, cookie: `ai-editor=${token}` })}\n`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

void main();
