import type { Db } from '../../db/database.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Mailer } from '../../mail/mailer.ts';
import { findUserById } from './users.repository.ts';

export function registerUserJobs(queue: JobQueue, deps: { db: Db; mailer: Mailer }): void {
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

  // Sent whatever happened to the account since: the change did happen, and the previous address
  // is the one that must learn of it.
  queue.define({ name: 'user-email-changed' });
  queue.work('user-email-changed', async (job) => {
    const { previousEmail, newEmail, changedAt } = job.data;
    await deps.mailer.send({
      to: previousEmail,
      subject: 'The e-mail address of your account was changed',
      text: emailChangedText(previousEmail, newEmail, changedAt),
    });
  });
}

function emailChangedText(previousEmail: string, newEmail: string, changedAt: string): string {
  return (
    `Hello,\n\n` +
    `The e-mail address of your Order Service account was changed from ${previousEmail} to ${maskEmail(newEmail)} ` +
    `at ${changedAt}. From now on, sign-in and e-mails use the new address.\n\n` +
    `If you made this change, there is nothing more to do.\n\n` +
    `If you did not, someone else may have access to your account: contact the service's administrators ` +
    `so they can restore your address, and change your password.\n`
  );
}

/** The new address, recognisable to its owner without giving it away in full: `j***@example.com`. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at <= 0) return '***';
  return `${email[0]}***${email.slice(at)}`;
}
