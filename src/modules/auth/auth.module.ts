import type { AppContext, AppModule } from '../../app-context.ts';
import type { AccessTokenVerifier } from '../../http/auth.ts';
import { HOUSEKEEPING_RETRY } from '../../jobs/queue.ts';
import { retentionCutoff } from '../../jobs/retention.ts';
import { purgeExpiredEmailTokens, purgeSettledEmailChanges } from '../users/email-tokens.repository.ts';
import type { UsersModule } from '../users/users.module.ts';
import { purgeExpiredRefreshTokens, purgeExpiredResetTokens, revokeRefreshTokens, revokeUserResetTokens } from './auth.repository.ts';
import { registerAuthRoutes, registerJwksRoute } from './auth.routes.ts';
import { AuthService } from './auth.service.ts';
import { deleteUserDeviceTokens, purgeExpiredDeviceTokens } from './device-tokens.ts';
import { LoginThrottle } from './login-throttle.ts';
import { PasswordRecoveryService } from './password-recovery.service.ts';
import { TokenService } from './token.service.ts';

export interface AuthModule extends AppModule {
  readonly verifyAccessToken: AccessTokenVerifier;
}

/** The hourly purges of expired tokens, in order, each with its log line; all but the device tokens' keep a day's grace. */
const PURGES = [
  [purgeExpiredRefreshTokens, 'purged expired refresh tokens'],
  [purgeExpiredResetTokens, 'purged expired password reset tokens'],
  [purgeExpiredEmailTokens, 'purged expired e-mail confirmation and revert tokens'],
  // after the tokens: a change goes once no token names it
  [purgeSettledEmailChanges, 'purged e-mail changes no token names'],
  [purgeExpiredDeviceTokens, 'purged expired device tokens'],
] as const;

/** Sign-in: tokens, login and its throttle, refresh, logout, password change and recovery by e-mail. */
export async function createAuthModule(ctx: AppContext, deps: { users: UsersModule }): Promise<AuthModule> {
  const { db, queue, log } = ctx;
  const tokens = await TokenService.create(ctx.config);
  const throttle = new LoginThrottle({ config: ctx.config, counters: ctx.counters });
  const users = deps.users.service;
  const auth = new AuthService({ db, tokens, hasher: deps.users.hasher, users, throttle });
  const recovery = new PasswordRecoveryService({ db, queue, mailer: ctx.mailer, users, config: ctx.config, throttle, log, counters: ctx.counters });
  // ending a user's sessions revokes its refresh, reset and device tokens in the same transaction
  users.endSessionsWith(revokeRefreshTokens, revokeUserResetTokens, deleteUserDeviceTokens);
  // the notice of an e-mail revert carries a reset link: the revert ended the password
  deps.users.emailChange.resetLinksWith((user) => recovery.resetLinkAfterRevert(user));
  queue.define({ name: 'refresh-tokens-purge', ...HOUSEKEEPING_RETRY });
  queue.work('refresh-tokens-purge', async () => {
    const dayAgo = retentionCutoff(1)!;
    for (const [purge, done] of PURGES) {
      const purged = await purge(db, dayAgo);
      if (purged > 0) log.info({ purged }, done);
    }
  });
  queue.scheduleCron('refresh-tokens-purge', '17 * * * *');
  queue.define({ name: 'password-recovery-email' });
  queue.work('password-recovery-email', async (job) => {
    await recovery.sendResetEmail(job.data.email);
  });
  return {
    verifyAccessToken: (token) => tokens.verify(token, 'access'),
    routes: (api) => registerAuthRoutes(api, auth, recovery, deps.users),
    rootRoutes: (app) => {
      if (tokens.asymmetric) registerJwksRoute(app, tokens);
    },
  };
}
