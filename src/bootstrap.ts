import crypto from 'node:crypto';
import type { AppContext } from './app-context.ts';
import { anyAdminExists, findUserByEmail, insertUser } from './modules/users/users.repository.ts';

/**
 * Makes sure an administrator exists: ADMIN_EMAIL/ADMIN_PASSWORD when set (created once, never
 * overwritten), otherwise admin@example.com with a random password printed once — only when the
 * database has no administrator at all.
 */
export async function bootstrapAdmin(ctx: AppContext): Promise<void> {
  const { config, db, hasher, log } = ctx;
  if (config.adminEmail && config.adminPassword) {
    if (await findUserByEmail(db, config.adminEmail)) return;
    await insertUser(db, {
      email: config.adminEmail,
      full_name: 'Administrator',
      password_hash: await hasher.hash(config.adminPassword),
      is_admin: true,
    }).catch((err: { code?: string }) => {
      if (err.code !== '23505') throw err; // another instance created it at the same moment
    });
    log.info({ email: config.adminEmail }, 'administrator account created');
    return;
  }
  if (await anyAdminExists(db)) return;
  const email = 'admin@example.com';
  const password = crypto.randomBytes(18).toString('base64url');
  try {
    await insertUser(db, { email, full_name: 'Administrator', password_hash: await hasher.hash(password), is_admin: true });
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return;
    throw err;
  }
  // printed once, on stdout, deliberately outside the (redacting) logger
  process.stdout.write(`\n  Administrator account created: ${email} / ${password}\n  (shown once; set ADMIN_EMAIL and ADMIN_PASSWORD to choose your own)\n\n`);
}
