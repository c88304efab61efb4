import type { Transaction } from 'kysely';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { hashOfMailToken, isMailToken, newMailToken } from '../users/mail-tokens.ts';

/**
 * Device tokens (decision 106, OWASP's device cookies): a sign-in presenting one of the account's is throttled per device only
 * (see LoginThrottle), so other clients' failures never lock its holder out. Stored as their SHA-256, deleted when the sessions end.
 */
const DEVICE_TOKEN_TTL_SECONDS = 30 * 86400;
const DEVICE_TOKENS_PER_USER = 20;
const DEVICE_COOKIE = 'device';
/** Only under /api: the console and every API client on this origin send it, the documentation pages do not. */
const COOKIE_PATH = '/api';

interface PresentedDevice {
  id: number;
  userId: number;
  token: string;
}

/** The token a request presents: the `X-Device-Token` header, else the `device` cookie. */
export function presentedDeviceToken(request: FastifyRequest): string | undefined {
  const header = request.headers['x-device-token'];
  if (typeof header === 'string' && header !== '') return header.trim();
  for (const part of request.headers.cookie?.split(';') ?? []) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === DEVICE_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The `device` cookie: HttpOnly, SameSite=Strict, path /api, Secure when the request came over TLS (request.protocol honours TRUST_PROXY). */
export function setDeviceCookie(request: FastifyRequest, reply: FastifyReply, token: string): void {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  reply.header('set-cookie', `${DEVICE_COOKIE}=${token}; Path=${COOKIE_PATH}; Max-Age=${DEVICE_TOKEN_TTL_SECONDS}; HttpOnly; SameSite=Strict${secure}`);
}

/** The live (unexpired) device token `token` names, if any (a token of another shape is not looked up). */
export async function findDevice(db: Db, token: string | undefined): Promise<PresentedDevice | undefined> {
  if (token === undefined || !isMailToken(token)) return undefined;
  const row = await db
    .selectFrom('device_tokens')
    .select(['id', 'user_id'])
    .where('token_hash', '=', hashOfMailToken(token))
    .where('expires_at', '>', new Date())
    .executeTakeFirst();
  return row && { id: row.id, userId: row.user_id, token };
}

/** After a successful sign-in: the device's token renewed for another lifetime, or a new one for a client without one. */
export async function deviceSignedIn(db: Db, userId: number, device: PresentedDevice | undefined): Promise<string> {
  const expires_at = new Date(Date.now() + DEVICE_TOKEN_TTL_SECONDS * 1000);
  if (device) {
    await db.updateTable('device_tokens').set({ expires_at }).where('id', '=', device.id).execute();
    return device.token;
  }
  const { token, hash } = newMailToken();
  await db.insertInto('device_tokens').values({ user_id: userId, token_hash: hash, expires_at }).execute();
  // only the newest stay: a script signing in without one adds a row each time
  const newest = db.selectFrom('device_tokens').select('id').where('user_id', '=', userId).orderBy('id', 'desc').limit(DEVICE_TOKENS_PER_USER);
  await db.deleteFrom('device_tokens').where('user_id', '=', userId).where('id', 'not in', newest).execute();
  return token;
}

/** Deletes every device token of a user, in the transaction that ends the user's sessions. */
export async function deleteUserDeviceTokens(trx: Transaction<Database>, userId: number): Promise<void> {
  await trx.deleteFrom('device_tokens').where('user_id', '=', userId).execute();
}

/** Deletes expired device tokens; returns how many. */
export async function purgeExpiredDeviceTokens(db: Db): Promise<number> {
  const res = await db.deleteFrom('device_tokens').where('expires_at', '<', new Date()).executeTakeFirst();
  return Number(res.numDeletedRows);
}
