import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

/**
 * Ends every session of a user, inside the transaction that changes the user (the auth module
 * revokes the refresh tokens): deactivation, deletion and a new password all end them.
 */
export type SessionsEnder = (trx: Transaction<Database>, userId: number) => Promise<void>;

/**
 * The cut-off that ends the access tokens issued until now: the next whole second. Tokens carry
 * their issue time (`iat`) in whole seconds, so every token issued up to this moment has an `iat`
 * below it, and tokens issued from now on are given an `iat` of at least it (see TokenService.issue).
 */
export function sessionCutoff(now = Date.now()): Date {
  return new Date((Math.floor(now / 1000) + 1) * 1000);
}
