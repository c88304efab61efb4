import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Db } from '../db/database.ts';
import type { UserRow } from '../db/schema.ts';
import type { TokenClaims, TokenService } from '../modules/auth/token.service.ts';
import { findUserById } from '../modules/users/users.repository.ts';
import type { UserCache } from '../modules/users/user-cache.ts';
import { AppError } from './errors.ts';
import { SECURITY_SCHEME } from './docs.ts';

/**
 * Every route declares who may call it in `config.auth`; a route without it fails at start-up
 * (deny by default).
 * - public: anyone; a valid bearer token, when sent, still identifies the caller (rate limiting)
 * - user: a valid access token of an existing, active user
 * - admin: as user, and the user is an administrator (the user row comes from the user cache, which
 *   every change to a user evicts: see user-cache.ts)
 * - signature: no bearer token; the handler verifies a request signature itself
 */
export type AuthLevel = 'public' | 'user' | 'admin' | 'signature';
const LEVELS: readonly AuthLevel[] = ['public', 'user', 'admin', 'signature'];

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthLevel;
    /** detail of the 403 for a non-admin on an `admin` route */
    adminDetail?: string;
    rateLimit?: 'default' | 'webhook' | 'none';
  }
  interface FastifyRequest {
    user: UserRow | null;
  }
}

export const CREDENTIALS_DETAIL = 'Could not validate credentials';

export function authUser(request: FastifyRequest): UserRow {
  if (!request.user) throw new AppError('NOT_AUTHENTICATED', 'Not authenticated', { headers: { 'www-authenticate': 'Bearer' } });
  return request.user;
}

function bearerToken(request: FastifyRequest): string | undefined | null {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer[ ]+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(header);
  return match ? match[1] : null;
}

const verifiedClaims = new WeakMap<FastifyRequest, Promise<TokenClaims | null>>();

/**
 * The claims of the request's bearer access token, or null when there is none or it does not
 * verify. Verified once per request: the rate limiter (which runs first) and authentication share it.
 */
export function verifiedAccessClaims(request: FastifyRequest, tokens: TokenService): Promise<TokenClaims | null> {
  let claims = verifiedClaims.get(request);
  if (!claims) {
    const token = bearerToken(request);
    claims = typeof token === 'string' ? tokens.verify(token, 'access') : Promise.resolve(null);
    verifiedClaims.set(request, claims);
  }
  return claims;
}

export function registerAuth(app: FastifyInstance, deps: { db: Db; tokens: TokenService; userCache: UserCache }): void {
  const loadUser = (id: number) => findUserById(deps.db, id);
  app.decorateRequest('user', null);

  app.addHook('onRoute', (route) => {
    // the documentation UI's own routes (scripts, styles, the page) are public by nature
    if (route.url === '/docs' || route.url.startsWith('/docs/')) {
      route.config = { ...route.config, auth: 'public', rateLimit: 'none' };
    }
    const auth = route.config?.auth;
    if (!auth || !LEVELS.includes(auth)) {
      throw new Error(`route ${String(route.method)} ${route.url} does not declare config.auth`);
    }
    if (auth === 'user' || auth === 'admin') {
      route.schema = { ...route.schema, security: [{ [SECURITY_SCHEME]: [] }] };
    }
  });

  const invalid = () => new AppError('INVALID_TOKEN', CREDENTIALS_DETAIL, { headers: { 'www-authenticate': 'Bearer' } });

  app.addHook('onRequest', async (request) => {
    const level = request.routeOptions.config.auth;
    if (level === undefined || level === 'signature') return; // 404 handler, or signature-verified
    const token = bearerToken(request);
    if (token === undefined || token === null) {
      if (level === 'public') return;
      if (token === null) throw invalid();
      throw new AppError('NOT_AUTHENTICATED', 'Not authenticated', { headers: { 'www-authenticate': 'Bearer' } });
    }
    const claims = await verifiedAccessClaims(request, deps.tokens);
    if (!claims) {
      if (level === 'public') return;
      throw invalid();
    }
    const user = await deps.userCache.get(Number(claims.sub), loadUser);
    if (!user) {
      if (level === 'public') return;
      throw invalid();
    }
    request.user = user;
    if (level === 'public') return;
    if (!user.is_active) throw new AppError('INACTIVE_USER', 'Inactive user');
    if (level === 'admin' && !user.is_admin) {
      throw new AppError('ADMIN_REQUIRED', request.routeOptions.config.adminDetail ?? 'Administrator privileges required');
    }
  });
}
