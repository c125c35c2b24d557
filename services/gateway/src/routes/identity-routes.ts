import type { Request, RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import { MAX_USERNAME_CHARS, MAX_WEBSITE_CHARS, MIN_USERNAME_CHARS, MIN_PASSWORD_CHARS, USERNAME_PATTERN, usernameProblem } from '@cards/card-rules';
import { identityCouldNotAnswer, SESSION_COOKIE, requireUser } from '../http/session';
import { AnsweredRefusal, badRequest, HttpError } from '../http/http-error';
import { characterString, looseBoolean, parseBody, refuseUnreadableBody, uuidParam, uuidString } from '../http/validation';
import { authRateLimits, mailRateLimit, type RateLimitConfig } from '../http/rate-limits';
import { refuseCrossSite, type CrossOriginOptions } from '../http/cross-origin';
import { noHead } from '../http/unmatched';
import { presentSlimUser } from '../presenters/user-presenter';
import type { GatewayClients } from '../clients';

/** The longest address identity accepts, trimmed and in NFC (its rule, which the document states). */
const MAX_EMAIL_CHARS = 254;
/**
 * What the gateway lets through to identity: only a bound on size, since spaces around an address and a decomposed
 * (NFD) spelling may be longer than the address identity stores and checks (NFD takes at most 4 units a character).
 */
const EMAIL_SIZE_BOUND = 4 * MAX_EMAIL_CHARS;
const emailField = () => z.string().max(EMAIL_SIZE_BOUND, `must be at most ${MAX_EMAIL_CHARS} characters`).openapi({ maxLength: MAX_EMAIL_CHARS });
/** A new password: identity counts its characters as code points, as the document's minLength does. */
const newPassword = () => z.string().max(1024).openapi({ minLength: MIN_PASSWORD_CHARS });

export const invitationBody = z.object({
  email: emailField(),
  referral_tokens: z.array(z.string().max(512), { required_error: 'is required', invalid_type_error: 'must be an array of strings' }).max(100),
});
export const registerBody = z.object({
  password: newPassword(),
  password_confirmation: z.string().max(1024),
});
export const loginBody = z.object({
  email: emailField(),
  password: z.string().max(1024),
});
export const passwordResetBody = z.object({
  password_reset_id: uuidString,
  password: newPassword(),
  password_confirmation: z.string().max(1024),
});
/** The interface's example sends only the e-mail: that asks for the reset mail. */
export const passwordResetRequestBody = z.object({ email: emailField() });
/** What usernameProblem and identity's usernameKey hold a username to, beyond what the pattern can say. */
export const USERNAME_DESCRIPTION =
  `Letters/digits of one script (Han with kana or Hangul), _, -, ${MIN_USERNAME_CHARS}–${MAX_USERNAME_CHARS} code points in NFC; ` +
  'no invisible or compatibility characters, no tatweel; "" or null clears it. ' +
  'Unique ignoring case and look-alike letters (the confusable skeleton, of the name case-folded and as written: Cyrillic "сосо" is "coco", "adrnin" is "admin", "wiII" is "will"): 409 \'username: already taken\'.';
export const updateUserBody = z.object({
  // "" clears it, as null does.
  // Identity's whole rule (usernameProblem: one script, nothing invisible...) on the NFC form parseBody gives; the
  // document states the characters and the length (USERNAME_PATTERN, read with the u flag as JSON Schema does).
  username: z
    .string({ invalid_type_error: 'must be a string' })
    .superRefine((value, ctx) => {
      const problem = value === '' ? null : usernameProblem(value);
      if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
    })
    .openapi({
      maxLength: MAX_USERNAME_CHARS,
      pattern: `^(${USERNAME_PATTERN.slice(1, -1)})?$`,
      description: USERNAME_DESCRIPTION,
    })
    .nullable()
    .optional(),
  website: characterString(MAX_WEBSITE_CHARS, { trim: true }).nullable().optional(),
  visible_email: looseBoolean.optional(),
});

export interface IdentityRouteOptions {
  clients: GatewayClients;
  rateLimits: RateLimitConfig;
  cookieSecure: boolean;
  /** The origins the CSRF check allows: GET /password/:email, which sends mail, is refused from other sites. */
  crossOrigin: CrossOriginOptions;
}

/** Only a POST /password body with nothing of a reset in it asks for the mail. */
function asksForMail(body: unknown): boolean {
  const raw = (body ?? {}) as Record<string, unknown>;
  return raw.email !== undefined && raw.password_reset_id === undefined && raw.password === undefined && raw.password_confirmation === undefined;
}

/** DELETE /api/auth's 503 when identity could not revoke the session: the cookie is cleared, the session is not. */
export const LOGOUT_NOT_REVOKED_MESSAGE =
  'You are signed out in this browser, but the server could not end the session (it is unavailable or its storage is full); the session ends by itself when it expires';

/** DELETE /api/auth, as the /api router matches it (any case, a trailing slash): the requests whose route answers a session lookup identity could not make. */
export function isLogout(req: Request): boolean {
  return req.method === 'DELETE' && /^\/auth\/?$/i.test(req.path);
}

function clearSessionCookie(res: Response, secure: boolean) {
  res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', path: '/', secure });
}

/** Accounts and sessions: invitation, registration, login, logout, password reset, profile. */
export function registerIdentityRoutes(router: Router, { clients, rateLimits, cookieSecure, crossOrigin }: IdentityRouteOptions): void {
  const { identity } = clients;
  // GET /password/:email and POST /password ask for the same mail: one count per address for both.
  const resetLimits = authRateLimits('reset', rateLimits);
  // Every request that mails someone, one count per client address over all of them.
  const mailLimit = mailRateLimit(rateLimits);

  router.post('/invitation', ...authRateLimits('invitation', rateLimits), mailLimit, async (req, res) => {
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
    refuseUnreadableBody(req);
    // The cookie's live session; or, when identity could not be asked whether it is one (the session middleware let the
    // logout through: isLogout), the cookie itself, which identity revokes only if it signed it.
    const token = req.sessionToken ?? (req.sessionLookupError ? (req.cookies?.[SESSION_COOKIE] as string) : undefined);
    if (token) {
      try {
        await identity.logout({ token });
      } catch (err) {
        // Identity could not revoke the session (its storage full, or it is unavailable): the cookie is cleared all the
        // same, so whoever uses this browser next is not signed in as this user; the 503 says the session itself lives
        // on until it expires (docs/decisions.md, logout when the session cannot be revoked).
        if (!identityCouldNotAnswer(err)) throw err;
        clearSessionCookie(res, cookieSecure);
        throw new AnsweredRefusal(503, LOGOUT_NOT_REVOKED_MESSAGE, err);
      }
    }
    clearSessionCookie(res, cookieSecure);
    res.status(204).end();
  });

  router.get('/auth', (req, res) => {
    // A session cookie that is no live session (revoked, expired at identity) goes with the 401, so the next page load
    // carries none and the web app does not ask again (web-app.ts SESSION_HINT_COOKIE).
    if (!req.user && req.cookies?.[SESSION_COOKIE] !== undefined) clearSessionCookie(res, cookieSecure);
    res.json(presentSlimUser(requireUser(req)));
  });

  // GET only: a HEAD (a link checker, a prefetch) is 405 before the CSRF check, the limits' counts and the mail.
  router.get('/password/:email', noHead(), refuseCrossSite(crossOrigin), ...resetLimits, mailLimit, async (req, res) => {
    // In NFC as a body's text is (parseBody); identity puts it in NFC too, this keeps the size bound on that form.
    const email = typeof req.params.email === 'string' ? req.params.email.normalize('NFC') : '';
    if (email.length > EMAIL_SIZE_BOUND) throw badRequest(`email: must be at most ${MAX_EMAIL_CHARS} characters`);
    await identity.requestPasswordReset({ email });
    res.status(204).end();
  });

  const mailLimitWhenAsked: RequestHandler = (req, res, next) => (asksForMail(req.body) ? mailLimit(req, res, next) : next());
  router.post('/password', ...resetLimits, mailLimitWhenAsked, async (req, res) => {
    // Only a body with nothing of a reset in it asks for the mail: one carrying a new password without its reset id
    // would otherwise answer 204 and leave the password as it was.
    if (asksForMail(req.body)) {
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
