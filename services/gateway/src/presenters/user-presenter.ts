import { toApiTimestamp } from '@cards/platform';
import type { identity } from '@cards/proto';

/** SlimUser: registration and GET /api/auth answer it to the user about themselves. */
export function presentSlimUser(u: identity.User) {
  return { id: u.id, email: u.email, username: u.username ?? null, website: u.website ?? null, visible_email: u.visibleEmail };
}

/** User as others see it: the e-mail only when visible (or when the viewer is that user). */
export function presentUser(u: identity.User, viewerId: string | undefined) {
  return {
    id: u.id,
    email: u.visibleEmail || u.id === viewerId ? u.email : null,
    username: u.username ?? null,
    website: u.website ?? null,
    visible_email: u.visibleEmail,
    created_at: toApiTimestamp(u.createdAt),
  };
}

export type PresentedUser = ReturnType<typeof presentUser>;
