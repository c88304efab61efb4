import type { AppContext, AppModule } from '../../app-context.ts';
import type { UserRow } from '../../db/schema.ts';
import { EmailChangeService } from './email-change.service.ts';
import { PasswordHasher } from './passwords.ts';
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
  const { db, queue, mailer } = ctx;
  const hasher = new PasswordHasher(ctx.config.bcryptRounds);
  const service = new UsersService({ db, queue, hasher, userCache: ctx.userCache });
  const emailChange = new EmailChangeService({ db, mailer, users: service });
  queue.define({ name: 'user-welcome-email' });
  queue.work('user-welcome-email', async (job) => {
    const user = await findUserById(db, job.data.userId);
    if (!user) return; // deleted before the mail went out: nothing to send
    await mailer.send({
      to: user.email,
      subject: 'Welcome to the Order Service',
      text: `Hello ${user.full_name},\n\nYour account (${user.email}) has been created. Sign in to start placing orders.\n`,
    });
  });
  // the notices of a change and of a revert go out whatever happened since: it did happen, and the addresses must learn of it
  queue.define({ name: 'user-email-changed' });
  queue.work('user-email-changed', async (job) => emailChange.sendChangeNotice(job.data));
  queue.define({ name: 'user-email-verification' });
  queue.work('user-email-verification', async (job) => emailChange.sendVerification(job.data.userId, job.data.email, job.data.changeId));
  queue.define({ name: 'user-email-reverted' });
  queue.work('user-email-reverted', async (job) => emailChange.sendRevertNotice(job.data));
  return {
    service,
    emailChange,
    hasher,
    loadUser: (id) => findUserById(db, id),
    routes: (api) => registerUserRoutes(api, service),
  };
}
