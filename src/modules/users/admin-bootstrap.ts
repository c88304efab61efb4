import crypto from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { PasswordHasher } from './passwords.ts';
import { anyAdminExists, findUserByEmail, insertUser } from './users.repository.ts';

/** Makes sure an administrator exists: ADMIN_EMAIL/ADMIN_PASSWORD (created once, never overwritten), else admin@example.com, its random password printed once. */
export async function bootstrapAdmin(ctx: { config: Config; db: Db; log: FastifyBaseLogger }): Promise<void> {
  const { config, db, log } = ctx;
  const hasher = new PasswordHasher(config.bcryptRounds);
  /** False when the address is taken (by another instance creating it at the same moment, or a user). */
  const create = async (email: string, password: string): Promise<boolean> => {
    try {
      await insertUser(db, { email, full_name: 'Administrator', password_hash: await hasher.hash(password), is_admin: true });
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  };
  if (config.adminEmail && config.adminPassword) {
    const existing = await findUserByEmail(db, config.adminEmail);
    if (existing) {
      if (!existing.is_admin) log.warn({ email: config.adminEmail }, 'ADMIN_EMAIL belongs to a user who is not an administrator; left unchanged');
      return;
    }
    if (await create(config.adminEmail, config.adminPassword)) log.info({ email: config.adminEmail }, 'administrator account created');
    return;
  }
  if (await anyAdminExists(db)) return;
  const email = 'admin@example.com';
  const password = crypto.randomBytes(18).toString('base64url');
  if (await create(email, password)) {
    // printed once, on stdout, deliberately outside the (redacting) logger
    process.stdout.write(`\n  Administrator account created: ${email} / ${password}\n  (shown once; set ADMIN_EMAIL and ADMIN_PASSWORD to choose your own)\n\n`);
  } else if (!(await anyAdminExists(db))) {
    log.warn(`no administrator exists and ${email} is taken by a regular user; set ADMIN_EMAIL and ADMIN_PASSWORD`);
  }
}
