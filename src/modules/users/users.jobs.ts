import type { Db } from '../../db/database.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Mailer } from '../../mail/mailer.ts';
import { findUserById } from './users.repository.ts';

export const WELCOME_EMAIL_QUEUE = 'user-welcome-email';

export function registerUserJobs(queue: JobQueue, deps: { db: Db; mailer: Mailer }): void {
  queue.define({ name: WELCOME_EMAIL_QUEUE });
  queue.work<{ userId: number }>(WELCOME_EMAIL_QUEUE, async (job) => {
    const user = await findUserById(deps.db, job.data.userId);
    if (!user) return; // deleted before the mail went out: nothing to send
    await deps.mailer.send({
      to: user.email,
      subject: 'Welcome to the Order Service',
      text: `Hello ${user.full_name},\n\nYour account (${user.email}) has been created. Sign in to start placing orders.\n`,
    });
  });
}
