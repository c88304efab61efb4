import type { AppContext, AppModule } from '../../app-context.ts';
import type { UserRow } from '../../db/schema.ts';
import { EmailChangeService } from './email-change.service.ts';
import { PasswordHasher } from './passwords.ts';
import { registerUserJobs } from './users.jobs.ts';
import { findUserById } from './users.repository.ts';
import { registerUserRoutes } from './users.routes.ts';
import { UsersService } from './users.service.ts';

export interface UsersModule extends AppModule {
  readonly service: UsersService;
  readonly emailChange: EmailChangeService;
  readonly hasher: PasswordHasher;
  /** a live user by id, from the database (the authentication hook caches it) */
  loadUser(id: number): Promise<UserRow | undefined>;
}

/** Users: accounts, their passwords, their e-mail addresses (confirmed, changed, restored) and the welcome e-mail. */
export function createUsersModule(ctx: AppContext): UsersModule {
  const hasher = new PasswordHasher(ctx.config.bcryptRounds);
  const service = new UsersService({ db: ctx.db, queue: ctx.queue, hasher, userCache: ctx.userCache });
  const emailChange = new EmailChangeService({ db: ctx.db, mailer: ctx.mailer, users: service });
  registerUserJobs(ctx.queue, { db: ctx.db, mailer: ctx.mailer, emailChange });
  return {
    service,
    emailChange,
    hasher,
    loadUser: (id) => findUserById(ctx.db, id),
    routes: (api) => registerUserRoutes(api, service),
  };
}
