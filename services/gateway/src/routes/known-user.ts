import type { identity } from '@cards/proto';
import type { GatewayClients } from '../clients';
import { notFound } from '../http/http-error';

/**
 * A listing of a user's things, asked alongside the user: an unknown user is 404 'User not found' (the listing
 * alone cannot tell one from a user with nothing to list).
 */
export async function forKnownUser<T>(clients: GatewayClients, userId: string, listing: Promise<T>): Promise<[identity.User, T]> {
  const [{ users }, listed] = await Promise.all([clients.identity.getUsers({ ids: [userId] }, { idempotent: true }), listing]);
  const user = users[0];
  if (!user) throw notFound('User not found');
  return [user, listed];
}
