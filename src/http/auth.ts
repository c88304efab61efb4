import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { UserRow } from '../db/schema.ts';
import { AppError } from './errors.ts';
import type { UserCache } from './user-cache.ts';

/**
 * Who may call a route, which every route declares in `config.auth` (without it start-up fails): public,
 * anyone (a valid bearer token still identifies the caller for rate limiting); user, a valid access token
 * of an existing, active user; admin, also an administrator; signature, the handler verifies a signature.
 */
export type AuthLevel = 'public' | 'user' | 'admin' | 'signature';
const LEVELS: readonly AuthLevel[] = ['public', 'user', 'admin', 'signature'];

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthLevel;
    /** detail of the 403 for a non-admin on an `admin` route */
    adminDetail?: string;
  }
  interface FastifyRequest {
    user: UserRow | null;
  }
}

export const CREDENTIALS_DETAIL = 'Could not validate credentials';

/** The OpenAPI security scheme the secured routes declare (the documents' OAuth2 password flow). */
export const SECURITY_SCHEME = 'OAuth2PasswordBearer';

/** The verified claims of an access token that authentication and rate limiting use. */
export interface AccessClaims {
  /** the user id, as a decimal string */
  readonly sub: string;
  readonly iat: number;
  readonly exp: number;
  /** the user's session generation when the token was issued; absent from tokens of earlier releases */
  readonly sgen?: number;
}

/** Verifies a bearer access token: its claims, or null for anything that is not a valid access token. */
export type AccessTokenVerifier = (token: string) => Promise<AccessClaims | null>;

interface AuthDeps {
  verifyAccessToken: AccessTokenVerifier;
  /** a live (not deleted) user by id, read from the database */
  loadUser: (id: number) => Promise<UserRow | undefined>;
  userCache: UserCache;
}

/**
 * True when a session cut-off (password change or reset, signing out everywhere, deactivation, an e-mail
 * revert) ended the token: it is of an earlier session generation than the user's (generations cannot tie
 * as issue times can). An earlier release's token is of generation 0, and refused if issued before the cut-off.
 */
export function issuedBeforeCutoff(claims: AccessClaims, user: UserRow): boolean {
  if ((claims.sgen ?? 0) !== user.sessions_generation) return true;
  const cutoff = user.sessions_valid_after;
  return claims.sgen === undefined && cutoff !== null && claims.iat < cutoff.getTime() / 1000;
}

const bearerChallenge = { headers: { 'www-authenticate': 'Bearer' } };
export const notAuthenticated = () => new AppError('NOT_AUTHENTICATED', 'Not authenticated', bearerChallenge);

export function authUser(request: FastifyRequest): UserRow {
  if (!request.user) throw notAuthenticated();
  return request.user;
}

const verifiedClaims = new WeakMap<FastifyRequest, Promise<AccessClaims | null>>();

/** The request's bearer access token's claims, or null; verified once, for the rate limiter and authentication. */
export function verifiedAccessClaims(request: FastifyRequest, verify: AccessTokenVerifier): Promise<AccessClaims | null> {
  let claims = verifiedClaims.get(request);
  if (!claims) {
    const token = /^Bearer[ ]+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    claims = token === undefined ? Promise.resolve(null) : verify(token);
    verifiedClaims.set(request, claims);
  }
  return claims;
}

export function registerAuth(app: FastifyInstance, deps: AuthDeps): void {
  app.decorateRequest('user', null);

  app.addHook('onRoute', (route) => {
    // the documentation UI's own routes (scripts, styles, the page) are public by nature
    if (route.url === '/docs' || route.url.startsWith('/docs/')) {
      route.config = { ...route.config, auth: 'public', rateLimitBucket: 'none' };
    }
    const auth = route.config?.auth;
    if (!auth || !LEVELS.includes(auth)) {
      throw new Error(`route ${String(route.method)} ${route.url} does not declare config.auth`);
    }
    if (auth === 'user' || auth === 'admin') {
      route.schema = { ...route.schema, security: [{ [SECURITY_SCHEME]: [] }] };
    }
  });

  app.addHook('onRequest', async (request) => {
    const level = request.routeOptions.config.auth;
    if (level === undefined || level === 'signature') return; // 404 handler, or signature-verified
    if (level !== 'public' && request.headers.authorization === undefined) throw notAuthenticated();
    const claims = await verifiedAccessClaims(request, deps.verifyAccessToken);
    const user = claims ? await deps.userCache.get(Number(claims.sub), deps.loadUser) : undefined;
    // an inactive account's token is answered 403 "Inactive user" (the specification), whatever its age
    if (user && !user.is_active && level !== 'public') throw new AppError('INACTIVE_USER', 'Inactive user');
    // a token issued before the user's sessions were cut off (reactivating revives none) is dead
    if (!claims || !user || issuedBeforeCutoff(claims, user)) {
      if (level === 'public') return;
      throw new AppError('INVALID_TOKEN', CREDENTIALS_DETAIL, bearerChallenge);
    }
    request.user = user;
    if (level === 'admin' && !user.is_admin) {
      throw new AppError('ADMIN_REQUIRED', request.routeOptions.config.adminDetail ?? 'Administrator privileges required');
    }
  });
}
