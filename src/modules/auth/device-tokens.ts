import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../../db/database.ts';
import { hashOfMailToken, isMailToken, newMailToken } from '../users/mail-tokens.ts';
import { findLiveDeviceToken, insertDeviceToken, renewDeviceToken, trimDeviceTokens } from './device-tokens.repository.ts';

/**
 * Device tokens (decision 106, OWASP's device cookies against slow brute force): a successful sign-in
 * gives the client a token for that account; a sign-in presenting it is throttled per device only
 * (see LoginThrottle), so failures from other clients, however many, never lock its holder out.
 * The token is 256 random bits (the shape of the mailed tokens), stored only as its SHA-256, valid
 * DEVICE_TOKEN_TTL_SECONDS from its last sign-in, and deleted when the account's sessions end
 * (password change or reset, signing out everywhere, deactivation, an e-mail revert).
 */
export const DEVICE_TOKEN_TTL_SECONDS = 30 * 86400;
/** Device tokens kept per account, newest first. */
export const DEVICE_TOKENS_PER_USER = 20;
export const DEVICE_COOKIE = 'device';
export const DEVICE_HEADER = 'x-device-token';
/** Only under /api: the console and every API client on this origin send it, the documentation pages do not. */
const COOKIE_PATH = '/api';

/** A device token of an account, as found in a sign-in request. */
export interface PresentedDevice {
  id: number;
  userId: number;
  token: string;
}

/** The token a request presents: the `X-Device-Token` header, else the `device` cookie. */
export function presentedDeviceToken(request: FastifyRequest): string | undefined {
  const header = request.headers[DEVICE_HEADER];
  if (typeof header === 'string' && header !== '') return header.trim();
  return cookieValue(request.headers.cookie, DEVICE_COOKIE);
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Sets the `device` cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page
 * sends it), path /api, and Secure when the request came over TLS — directly or, with TRUST_PROXY,
 * as the trusted proxy's X-Forwarded-Proto says (Fastify's request.protocol).
 */
export function setDeviceCookie(request: FastifyRequest, reply: FastifyReply, token: string): void {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  reply.header('set-cookie', `${DEVICE_COOKIE}=${token}; Path=${COOKIE_PATH}; Max-Age=${DEVICE_TOKEN_TTL_SECONDS}; HttpOnly; SameSite=Strict${secure}`);
}

export class DeviceTokens {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** The live device token `token` names, if it is one (anything else is looked up not at all, or finds nothing). */
  async find(token: string | undefined): Promise<PresentedDevice | undefined> {
    if (token === undefined || !isMailToken(token)) return undefined;
    const row = await findLiveDeviceToken(this.db, hashOfMailToken(token));
    return row && { id: row.id, userId: row.user_id, token };
  }

  /** After a successful sign-in: the device's token renewed, or a new one for a client without one. */
  async signedIn(userId: number, device: PresentedDevice | undefined): Promise<string> {
    const expiresAt = new Date(Date.now() + DEVICE_TOKEN_TTL_SECONDS * 1000);
    if (device) {
      await renewDeviceToken(this.db, device.id, expiresAt);
      return device.token;
    }
    const { token, hash } = newMailToken();
    await insertDeviceToken(this.db, { user_id: userId, token_hash: hash, expires_at: expiresAt });
    await trimDeviceTokens(this.db, userId, DEVICE_TOKENS_PER_USER);
    return token;
  }
}
