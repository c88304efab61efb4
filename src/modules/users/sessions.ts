import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

/**
 * Ends every session of a user, inside the transaction that changes the user (the auth module
 * revokes the refresh, reset and device tokens): deactivation, deletion and a new password all end them.
 */
export type SessionsEnder = (trx: Transaction<Database>, userId: number) => Promise<void>;

/**
 * The time of a session cut-off. What ends the access tokens is the generation the cut-off moves on
 * (users.sessions_generation, carried by every token), so a token issued in the same second or
 * millisecond as a cut-off cannot tie with it; the time is kept for the tokens of earlier releases,
 * which carry no generation and are judged by their `iat` (see issuedBeforeCutoff in http/auth.ts).
 */
export function sessionCutoff(now = Date.now()): Date {
  return new Date(now);
}
