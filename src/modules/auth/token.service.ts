import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  SignJWT,
  calculateJwkThumbprint,
  exportJWK,
  importPKCS8,
  importSPKI,
  jwtVerify,
  type JWK,
  type JWTPayload,
  type JWTHeaderParameters,
  type CryptoKey,
  type KeyObject,
} from 'jose';
import type { Config } from '../../config.ts';

export type TokenType = 'access' | 'refresh';

type Key = CryptoKey | KeyObject | Uint8Array;

interface VerificationKey {
  kid: string | undefined;
  alg: string;
  key: Key;
}

export interface TokenClaims {
  sub: string;
  jti: string;
  iat: number;
  exp: number;
  typ: TokenType;
  /** the user's session generation at issue (absent from the tokens of earlier releases) */
  sgen?: number;
}

export interface IssuedToken {
  token: string;
  jti: string;
  expiresAt: Date;
}

const HEADER_TYP: Record<TokenType, string> = { access: 'at+jwt', refresh: 'rt+jwt' };
const CLOCK_TOLERANCE_SECONDS = 5;
/**
 * How far a token's `iat` may lie ahead of this process's clock: the clocks of the processes that
 * issue tokens may drift a little, but a token issued further in the future was not issued by us on
 * a sane clock (a forged or replayed-from-the-future token) and would outlive its TTL.
 */
export const MAX_IAT_SKEW_SECONDS = 60;
/** users.id is a PostgreSQL integer: a larger subject names no user and must not reach a query */
const MAX_USER_ID = 2_147_483_647;
/**
 * Verified tokens remembered per process. Every authenticated request verifies its bearer token, and
 * jose verifies through WebCrypto, which runs each check as a libuv thread-pool job: at 32
 * connections that halved the throughput of the read routes and queued token checks behind bcrypt
 * work during login bursts. A token is immutable and the keys are fixed for the
 * life of the process, so a successful verification stays valid until the token expires; only
 * successes are kept (garbage tokens cannot fill it), bounded, oldest evicted first.
 */
const VERIFIED_CACHE_SIZE = 10_000;

function algorithmOf(key: crypto.KeyObject): string {
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  throw new Error('JWT_PRIVATE_KEY must be an ES256 (P-256) or Ed25519 key');
}

/**
 * Signs and verifies the service's JWTs. The algorithm is pinned per key: verification accepts
 * exactly the algorithm of the key that the token's `kid` names (or the one HS256 secret), with
 * issuer, audience, header `typ`, the `typ` claim and the required claims all checked.
 */
export class TokenService {
  readonly asymmetric: boolean;
  private readonly signing: { kid: string | undefined; alg: string; key: Key };
  private readonly verification: VerificationKey[];
  private readonly publicJwks: JWK[];
  private readonly config: Config;
  /**
   * Keyed by the token itself, so a hit builds no key. A token verifies as the one type its claims
   * and header name, so its cached claims say which: the same token asked for as the other type is
   * not valid, cached or not.
   */
  private readonly verified = new Map<string, TokenClaims>();

  private constructor(config: Config, signing: TokenService['signing'], verification: VerificationKey[], jwks: JWK[]) {
    this.config = config;
    this.signing = signing;
    this.verification = verification;
    this.publicJwks = jwks;
    this.asymmetric = jwks.length > 0;
  }

  static async create(config: Config): Promise<TokenService> {
    let pem = config.jwtPrivateKey;
    if (!pem && config.jwtSecret) {
      const key = new TextEncoder().encode(config.jwtSecret);
      return new TokenService(config, { kid: undefined, alg: 'HS256', key }, [{ kid: undefined, alg: 'HS256', key }], []);
    }
    if (!pem) pem = await loadOrGenerateKey(config.dataDir);
    const privateObject = crypto.createPrivateKey(pem);
    const alg = algorithmOf(privateObject);
    const privateKey = await importPKCS8(privateObject.export({ format: 'pem', type: 'pkcs8' }).toString(), alg);
    const publicPem = crypto.createPublicKey(privateObject).export({ format: 'pem', type: 'spki' }).toString();
    const verification: VerificationKey[] = [];
    const jwks: JWK[] = [];
    const add = async (spki: string) => {
      const obj = crypto.createPublicKey(spki);
      const keyAlg = algorithmOf(obj);
      const key = await importSPKI(spki, keyAlg, { extractable: true });
      const jwk = await exportJWK(key);
      const kid = await calculateJwkThumbprint(jwk);
      verification.push({ kid, alg: keyAlg, key });
      jwks.push({ ...jwk, kid, alg: keyAlg, use: 'sig' });
      return kid;
    };
    const kid = await add(publicPem);
    if (config.jwtPreviousPublicKey) await add(config.jwtPreviousPublicKey);
    return new TokenService(config, { kid, alg, key: privateKey }, verification, jwks);
  }

  jwks(): { keys: JWK[] } {
    return { keys: this.publicJwks };
  }

  /**
   * A new token for the user, carrying the user's session generation (`sgen`): a session cut-off
   * moves the generation on, which refuses every token issued in an earlier one (see
   * issuedBeforeCutoff in http/auth.ts), whatever their issue time.
   */
  async issue(userId: number, typ: TokenType, generation = 0): Promise<IssuedToken> {
    const ttl = this.lifetime(typ);
    const jti = crypto.randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const header: JWTHeaderParameters = { alg: this.signing.alg, typ: HEADER_TYP[typ] };
    if (this.signing.kid) header.kid = this.signing.kid;
    const token = await new SignJWT({ typ, sgen: generation })
      .setProtectedHeader(header)
      .setSubject(String(userId))
      .setIssuer(this.config.jwtIssuer)
      .setAudience(this.config.jwtAudience)
      .setIssuedAt(now)
      .setExpirationTime(now + ttl)
      .setJti(jti)
      .sign(this.signing.key);
    return { token, jti, expiresAt: new Date((now + ttl) * 1000) };
  }

  private lifetime(typ: TokenType): number {
    return typ === 'access' ? this.config.accessTokenTtlSeconds : this.config.refreshTokenTtlSeconds;
  }

  /** Returns the verified claims, or null for any token that is not a valid token of this type. */
  async verify(token: string, typ: TokenType): Promise<TokenClaims | null> {
    const known = this.verified.get(token);
    if (known) {
      if (known.typ !== typ) return null;
      if (known.exp + CLOCK_TOLERANCE_SECONDS > Date.now() / 1000) return known;
      this.verified.delete(token);
      return null;
    }
    const claims = await this.verifyUncached(token, typ);
    if (claims) {
      if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(token, Object.freeze(claims));
    }
    return claims;
  }

  private async verifyUncached(token: string, typ: TokenType): Promise<TokenClaims | null> {
    try {
      const { payload } = await jwtVerify(
        token,
        (header) => {
          const k = this.asymmetric ? this.verification.find((v) => v.kid === header.kid) : this.verification[0];
          if (!k || header.alg !== k.alg) throw new Error('unknown key');
          return k.key;
        },
        {
          algorithms: [...new Set(this.verification.map((v) => v.alg))],
          issuer: this.config.jwtIssuer,
          audience: this.config.jwtAudience,
          typ: HEADER_TYP[typ],
          requiredClaims: ['exp', 'iat', 'sub', 'jti'],
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
        },
      );
      const claims = claimsOf(payload, typ);
      // a token living longer than this service issues was not issued by it (a leaked key, a forgery)
      return claims && claims.exp - claims.iat <= this.lifetime(typ) ? claims : null;
    } catch {
      return null;
    }
  }
}

function claimsOf(payload: JWTPayload, typ: TokenType): TokenClaims | null {
  const { sub, jti, iat, exp, sgen } = payload;
  if (payload.typ !== typ) return null;
  if (sgen !== undefined && !(Number.isSafeInteger(sgen) && (sgen as number) >= 0)) return null;
  if (typeof sub !== 'string' || !/^[1-9]\d{0,9}$/.test(sub) || Number(sub) > MAX_USER_ID) return null;
  if (typeof jti !== 'string' || typeof iat !== 'number' || typeof exp !== 'number') return null;
  if (iat > Date.now() / 1000 + MAX_IAT_SKEW_SECONDS) return null;
  return sgen === undefined ? { sub, jti, iat, exp, typ } : { sub, jti, iat, exp, typ, sgen: sgen as number };
}

/**
 * The signing key kept in the data directory, made on first start. It is written whole to a file of
 * its own, flushed, then linked into place: a crash leaves no half-written key (at most a stray
 * temporary file), and the link fails when another process starting at the same moment linked its
 * key first, whose key then wins.
 */
async function loadOrGenerateKey(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'jwt-private.pem');
  try {
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await fs.mkdir(dataDir, { recursive: true });
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const temporary = `${file}.${process.pid}.${crypto.randomUUID()}.tmp`;
  const handle = await fs.open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(pem);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.link(temporary, file);
    return pem;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return fs.readFile(file, 'utf8');
    throw err;
  } finally {
    await fs.rm(temporary, { force: true });
  }
}
