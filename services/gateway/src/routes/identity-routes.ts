import type { Response, Router } from 'express';
import { z } from 'zod';
import { SESSION_COOKIE, requireUser } from '../http/session';
import { badRequest } from '../http/http-error';
import { parseBody, uuidParam, uuidString } from '../http/validation';
import { authRateLimits, type RateLimitConfig } from '../http/rate-limits';
import { presentSlimUser } from '../presenters/user-presenter';
import type { GatewayClients } from '../clients';

export const invitationBody = z.object({
  email: z.string().max(254),
  referral_tokens: z.array(z.string().max(512)).max(100),
});
export const registerBody = z.object({
  password: z.string().max(1024),
  password_confirmation: z.string().max(1024),
});
export const loginBody = z.object({
  email: z.string().max(254),
  password: z.string().max(1024),
});
export const passwordResetBody = z.object({
  password_reset_id: uuidString,
  password: z.string().max(1024),
  password_confirmation: z.string().max(1024),
});
/** The interface's example sends only the e-mail: that asks for the reset mail. */
export const passwordResetRequestBody = z.object({ email: z.string().max(254) });
export const updateUserBody = z.object({
  username: z.string().max(64).nullable().optional(),
  website: z.string().max(2048).nullable().optional(),
  visible_email: z.boolean().optional(),
});

export interface IdentityRouteOptions {
  clients: GatewayClients;
  rateLimits: RateLimitConfig;
  cookieSecure: boolean;
}

function clearSessionCookie(res: Response, secure: boolean) {
  res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', path: '/', secure });
}

/** Accounts and sessions: invitation, registration, login, logout, password reset, profile. */
export function registerIdentityRoutes(router: Router, { clients, rateLimits, cookieSecure }: IdentityRouteOptions): void {
  const { identity } = clients;
  // GET /password/:email and POST /password ask for the same mail: one count per address for both.
  const resetLimits = authRateLimits('reset', rateLimits);

  router.post('/invitation', ...authRateLimits('invitation', rateLimits), async (req, res) => {
    const body = parseBody(invitationBody, req);
    await identity.createInvitation({ email: body.email, referralTokens: body.referral_tokens });
    res.status(200).end();
  });

  router.post('/register/:invitation_id', async (req, res) => {
    const invitationId = uuidParam(req, 'invitation_id');
    const body = parseBody(registerBody, req);
    const user = await identity.register({ invitationId, password: body.password, passwordConfirmation: body.password_confirmation });
    res.json(presentSlimUser(user));
  });

  router.post('/auth', ...authRateLimits('login', rateLimits), async (req, res) => {
    const body = parseBody(loginBody, req, { comparedOnly: true });
    const session = await identity.login({ email: body.email, password: body.password });
    res.cookie(SESSION_COOKIE, session.token, {
      httpOnly: true,
      sameSite: 'lax',
      path: '/',
      secure: cookieSecure,
      // Max-Age as well as Expires (express derives both): a client whose clock is off still keeps it 24 h.
      maxAge: session.expiresAt ? Math.max(0, session.expiresAt.getTime() - Date.now()) : undefined,
    });
    res.status(204).end();
  });

  router.delete('/auth', async (req, res) => {
    if (req.sessionToken) await identity.logout({ token: req.sessionToken });
    clearSessionCookie(res, cookieSecure);
    res.status(204).end();
  });

  router.get('/auth', (req, res) => {
    res.json(presentSlimUser(requireUser(req)));
  });

  router.get('/password/:email', ...resetLimits, async (req, res) => {
    const email = typeof req.params.email === 'string' ? req.params.email : '';
    if (email.length > 254) throw badRequest('email: not a valid e-mail address');
    await identity.requestPasswordReset({ email });
    res.status(204).end();
  });

  router.post('/password', ...resetLimits, async (req, res) => {
    const raw = (req.body ?? {}) as Record<string, unknown>;
    if (raw.password_reset_id === undefined && raw.email !== undefined) {
      await identity.requestPasswordReset({ email: parseBody(passwordResetRequestBody, req).email });
    } else {
      const body = parseBody(passwordResetBody, req);
      await identity.resetPassword({ passwordResetId: body.password_reset_id, password: body.password, passwordConfirmation: body.password_confirmation });
    }
    res.status(204).end();
  });

  router.put('/user', async (req, res) => {
    const caller = requireUser(req);
    const body = parseBody(updateUserBody, req);
    const user = await identity.updateUser({
      userId: caller.id,
      username: body.username === null ? '' : body.username,
      website: body.website === null ? '' : body.website,
      visibleEmail: body.visible_email,
    });
    res.json(presentSlimUser(user));
  });
}
