import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../../db/database.ts';
import { hashOfMailToken, isMailToken, newMailToken } from '../users/mail-tokens.ts';
import { findLiveDeviceToken, insertDeviceToken, renewDeviceToken, trimDeviceTokens } from './device-tokens.repository.ts';

/**
 * Device tokens (decision 106, OWASP's device cookies): a successful sign-in gives the client a token
 * for that account; a sign-in presenting it is throttled per device only (see LoginThrottle), so
 * other clients' failures never lock its holder out. 256 random bits, stored only as their SHA-256,
 * valid DEVICE_TOKEN_TTL_SECONDS from the last sign-in, deleted when the account's sessions end.
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

/** The live device token `token` names, if any (a token of another shape is not looked up). */
export async function findDevice(db: Db, token: string | undefined): Promise<PresentedDevice | undefined> {
  if (token === undefined || !isMailToken(token)) return undefined;
  const row = await findLiveDeviceToken(db, hashOfMailToken(token));
  return row && { id: row.id, userId: row.user_id, token };
}

/** After a successful sign-in: the device's token renewed, or a new one for a client without one. */
export async function deviceSignedIn(db: Db, userId: number, device: PresentedDevice | undefined): Promise<string> {
  const expiresAt = new Date(Date.now() + DEVICE_TOKEN_TTL_SECONDS * 1000);
  if (device) {
    await renewDeviceToken(db, device.id, expiresAt);
    return device.token;
  }
  const { token, hash } = newMailToken();
  await insertDeviceToken(db, { user_id: userId, token_hash: hash, expires_at: expiresAt });
  await trimDeviceTokens(db, userId, DEVICE_TOKENS_PER_USER);
  return token;
}
