import type { identity } from '@cards/proto';
import type { IdentityService } from '../application/identity-service';
import { InvalidArgumentError } from '@cards/platform';
import type { User } from '../domain/model';
import { shownEmail } from '../domain/rules';

const MAX_TOKENS_PER_CALL = 500;

/** A user as the other services and the API see it: the e-mail's domain in Unicode, as its owner knows it (shownEmail). */
function toProto(u: User): identity.User {
  return { id: u.id, email: shownEmail(u.email), username: u.username ?? undefined, website: u.website ?? undefined, visibleEmail: u.visibleEmail, createdAt: u.createdAt };
}

/** gRPC face of the identity use cases; no rules here. */
export function identityHandlers(service: IdentityService): identity.IdentityServiceImplementation {
  return {
    async createInvitation(req) {
      return { invitationId: await service.invite(req.email, req.referralTokens) };
    },
    async register(req) {
      return toProto(await service.register(req.invitationId, req.password, req.passwordConfirmation));
    },
    async login(req) {
      const result = await service.login(req.email, req.password);
      return { token: result.token, expiresAt: result.expiresAt, user: toProto(result.user) };
    },
    async logout(req) {
      await service.logout(req.token);
      return {};
    },
    async resolveSession(req) {
      return toProto(await service.resolveSession(req.token));
    },
    async resolveSessions(req) {
      if (req.tokens.length > MAX_TOKENS_PER_CALL) throw new InvalidArgumentError(`tokens: at most ${MAX_TOKENS_PER_CALL} per call`);
      const users = await service.resolveSessions(req.tokens);
      return { resolutions: users.map((user) => (user ? { user: toProto(user) } : {})) };
    },
    async requestPasswordReset(req) {
      await service.requestPasswordReset(req.email);
      return {};
    },
    async resetPassword(req) {
      await service.resetPassword(req.passwordResetId, req.password, req.passwordConfirmation);
      return {};
    },
    async updateUser(req) {
      return toProto(await service.updateProfile(req.userId, { username: req.username, website: req.website, visibleEmail: req.visibleEmail }));
    },
    async getUsers(req) {
      return { users: (await service.getUsers(req.ids)).map(toProto) };
    },
  };
}
