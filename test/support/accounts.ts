import { randomUUID } from 'node:crypto';
import { ApiClient } from './http';
import type { Mailbox } from './mailbox';

export interface TestUser {
  id: string;
  email: string;
  password: string;
  client: ApiClient;
}

/** Invitation -> mail -> registration -> login, through the gateway, as a person would. */
export async function signUp(baseUrl: string, mailbox: Mailbox, prefix = 'user'): Promise<TestUser> {
  const client = new ApiClient(baseUrl);
  const email = `${prefix}-${randomUUID().slice(0, 8)}@example.com`;
  const password = `pw-${randomUUID()}`;
  const invited = await client.post('/api/invitation', { email, referral_tokens: [] });
  if (invited.status !== 200) throw new Error(`invitation failed: ${invited.status} ${invited.text}`);
  const mail = await mailbox.waitFor(email, /auth\/register\//);
  const invitationId = /auth\/register\/([0-9a-f-]{36})/.exec(mail.text ?? '')![1]!;
  const registered = await client.post(`/api/register/${invitationId}`, { password, password_confirmation: password });
  if (registered.status !== 200) throw new Error(`registration failed: ${registered.status} ${registered.text}`);
  const login = await client.post('/api/auth', { email, password });
  if (login.status !== 204) throw new Error(`login failed: ${login.status} ${login.text}`);
  return { id: registered.json.id, email, password, client };
}
