import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.ts';
import { HOUSEKEEPING_RETRY, type JobQueue } from '../../jobs/queue.ts';
import { purgeExpiredEmailTokens } from '../users/email-tokens.repository.ts';
import { purgeExpiredRefreshTokens } from './auth.repository.ts';
import { purgeExpiredDeviceTokens } from './device-tokens.repository.ts';
import type { PasswordRecoveryService } from './password-recovery.service.ts';
import { purgeExpiredResetTokens } from './password-reset.repository.ts';

export function registerAuthJobs(queue: JobQueue, deps: { db: Db; log: FastifyBaseLogger; recovery: PasswordRecoveryService }): void {
  queue.define({ name: 'refresh-tokens-purge', ...HOUSEKEEPING_RETRY });
  queue.work('refresh-tokens-purge', async () => {
    const purged = await purgeExpiredRefreshTokens(deps.db);
    if (purged > 0) deps.log.info({ purged }, 'purged expired refresh tokens');
    const resetTokens = await purgeExpiredResetTokens(deps.db);
    if (resetTokens > 0) deps.log.info({ purged: resetTokens }, 'purged expired password reset tokens');
    const emailTokens = await purgeExpiredEmailTokens(deps.db);
    if (emailTokens > 0) deps.log.info({ purged: emailTokens }, 'purged expired e-mail confirmation and revert tokens');
    const deviceTokens = await purgeExpiredDeviceTokens(deps.db);
    if (deviceTokens > 0) deps.log.info({ purged: deviceTokens }, 'purged expired device tokens');
  });
  queue.scheduleCron('refresh-tokens-purge', '17 * * * *');

  queue.define({ name: 'password-recovery-email' });
  queue.work('password-recovery-email', async (job) => {
    await deps.recovery.sendResetEmail(job.data.email);
  });
}
