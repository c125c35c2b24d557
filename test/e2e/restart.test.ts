import { rmSync } from 'node:fs';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem } from '../support/service';
import { signUp } from '../support/accounts';
import { testTempDir } from '../support/cleanup';

it('SIGKILL and restart keep users and sessions', async () => {
  const mailbox = new Mailbox();
  await mailbox.start();
  const dataDir = testTempDir('cards-restart-');
  try {
    const first = await startSystem({ dataDir, env: { SMTP_URL: mailbox.url } });
    const user = await signUp(first.baseUrl, mailbox, 'restart');
    await first.kill();

    const second = await startSystem({ dataDir, env: { SMTP_URL: mailbox.url } });
    try {
      const session = new ApiClient(second.baseUrl);
      session.cookie = user.client.cookie;
      const me = await session.get('/api/auth');
      expect(me.status).toBe(200);
      expect(me.json.email).toBe(user.email);
      expect((await new ApiClient(second.baseUrl).post('/api/auth', { email: user.email, password: user.password })).status).toBe(204);
    } finally {
      await second.stop();
    }
  } finally {
    await mailbox.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
