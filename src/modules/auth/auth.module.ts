import type { AppContext, AppModule } from '../../app-context.ts';
import type { AccessTokenVerifier } from '../../http/auth.ts';
import type { UsersModule } from '../users/users.module.ts';
import { registerAuthJobs } from './auth.jobs.ts';
import { deleteUserDeviceTokens } from './device-tokens.repository.ts';
import { revokeRefreshTokens } from './auth.repository.ts';
import { registerAuthRoutes, registerJwksRoute } from './auth.routes.ts';
import { AuthService } from './auth.service.ts';
import { LoginThrottle } from './login-throttle.ts';
import { PasswordRecoveryService } from './password-recovery.service.ts';
import { revokeUserResetTokens } from './password-reset.repository.ts';
import { TokenService } from './token.service.ts';

export interface AuthModule extends AppModule {
  readonly verifyAccessToken: AccessTokenVerifier;
}

/** Sign-in: tokens, login and its throttle, refresh, logout, password change and recovery by e-mail. */
export async function createAuthModule(ctx: AppContext, deps: { users: UsersModule }): Promise<AuthModule> {
  const tokens = await TokenService.create(ctx.config);
  const throttle = new LoginThrottle({ config: ctx.config, log: ctx.log });
  const users = deps.users.service;
  const auth = new AuthService({ db: ctx.db, tokens, hasher: deps.users.hasher, users, throttle });
  const recovery = new PasswordRecoveryService({ db: ctx.db, queue: ctx.queue, mailer: ctx.mailer, users, config: ctx.config, throttle, log: ctx.log });
  // ending a user's sessions revokes its refresh, reset and device tokens in the same transaction
  users.endSessionsWith(revokeRefreshTokens, revokeUserResetTokens, deleteUserDeviceTokens);
  // the notice of an e-mail revert carries a reset link: the revert ended the password
  deps.users.emailChange.resetLinksWith((user) => recovery.resetLinkAfterRevert(user));
  registerAuthJobs(ctx.queue, { db: ctx.db, log: ctx.log, recovery });
  return {
    verifyAccessToken: (token) => tokens.verify(token, 'access'),
    routes: (api) => registerAuthRoutes(api, auth, recovery, deps.users.emailChange),
    rootRoutes: (app) => {
      if (tokens.asymmetric) registerJwksRoute(app, tokens);
    },
    close: async () => {
      await Promise.all([throttle.close(), recovery.close()]);
    },
  };
}
