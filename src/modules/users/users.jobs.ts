import type { Db } from '../../db/database.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Mailer } from '../../mail/mailer.ts';
import type { EmailChangeService } from './email-change.service.ts';
import { findUserById } from './users.repository.ts';

export function registerUserJobs(queue: JobQueue, deps: { db: Db; mailer: Mailer; emailChange: EmailChangeService }): void {
  queue.define({ name: 'user-welcome-email' });
  queue.work('user-welcome-email', async (job) => {
    const user = await findUserById(deps.db, job.data.userId);
    if (!user) return; // deleted before the mail went out: nothing to send
    await deps.mailer.send({
      to: user.email,
      subject: 'Welcome to the Order Service',
      text: `Hello ${user.full_name},\n\nYour account (${user.email}) has been created. Sign in to start placing orders.\n`,
    });
  });

  // sent whatever happened since: the change did happen, and the previous address must learn of it
  queue.define({ name: 'user-email-changed' });
  queue.work('user-email-changed', async (job) => deps.emailChange.sendChangeNotice(job.data));

  queue.define({ name: 'user-email-verification' });
  queue.work('user-email-verification', async (job) => deps.emailChange.sendVerification(job.data.userId, job.data.email, job.data.changeId));

  // Both addresses hear of a revert, whatever happened since: it did happen.
  queue.define({ name: 'user-email-reverted' });
  queue.work('user-email-reverted', async (job) => deps.emailChange.sendRevertNotice(job.data));
}
