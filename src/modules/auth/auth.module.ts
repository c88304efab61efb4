import type { AppModule } from '../../app-context.ts';
import { UsersService } from '../users/users.service.ts';
import { registerUserRoutes } from '../users/users.routes.ts';
import { registerUserJobs } from '../users/users.jobs.ts';
import { purgeExpiredRefreshTokens } from './refresh-tokens.repository.ts';
import { AuthService } from './auth.service.ts';
import { registerAuthRoutes } from './auth.routes.ts';

export const PURGE_REFRESH_TOKENS_QUEUE = 'refresh-tokens-purge';

/** Sign-in, tokens and users. */
export const accountsModule: AppModule = (api, ctx) => {
  const users = new UsersService({ db: ctx.db, queue: ctx.queue, hasher: ctx.hasher, userCache: ctx.userCache });
  const auth = new AuthService({ db: ctx.db, tokens: ctx.tokens, hasher: ctx.hasher });
  registerAuthRoutes(api, { auth, users });
  registerUserRoutes(api, users);
  registerUserJobs(ctx.queue, { db: ctx.db, mailer: ctx.mailer });

  ctx.queue.define({ name: PURGE_REFRESH_TOKENS_QUEUE });
  ctx.queue.work(PURGE_REFRESH_TOKENS_QUEUE, async () => {
    const purged = await purgeExpiredRefreshTokens(ctx.db);
    if (purged > 0) ctx.log.info({ purged }, 'purged expired refresh tokens');
  });
  ctx.queue.scheduleCron(PURGE_REFRESH_TOKENS_QUEUE, '17 * * * *');
};
