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

interface VerificationKey {
  kid: string | undefined;
  alg: string;
  key: CryptoKey | KeyObject | Uint8Array;
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

const HEADER_TYP: Record<TokenType, string> = { access: 'at+jwt', refresh: 'rt+jwt' };
const CLOCK_TOLERANCE_SECONDS = 5;
/** How far `iat` may lie ahead of this clock: clocks drift a little; a token from further ahead is forged and would outlive its TTL. */
const MAX_IAT_SKEW_SECONDS = 60;
/** users.id is a PostgreSQL integer: a larger subject names no user and must not reach a query */
const MAX_USER_ID = 2_147_483_647;
/** Verified tokens kept per process (jose's thread-pool checks halved the reads' throughput); only successes, so garbage cannot fill it. */
const VERIFIED_CACHE_SIZE = 10_000;

function algorithmOf(key: crypto.KeyObject): string {
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  throw new Error('JWT_PRIVATE_KEY must be an ES256 (P-256) or Ed25519 key');
}

/** The service's JWTs; verifying accepts only the algorithm of the key the `kid` names (or HS256's secret) and checks issuer, audience, both `typ`s, claims. */
export class TokenService {
  readonly asymmetric: boolean;
  private readonly config: Config;
  private readonly keys: { signing: VerificationKey; verification: VerificationKey[]; jwks: JWK[] };
  /** Keyed by the token itself; its cached claims say its type, so asked for as the other type it is refused. */
  private readonly verified = new Map<string, TokenClaims>();

  private constructor(config: Config, keys: TokenService['keys']) {
    this.config = config;
    this.keys = keys;
    this.asymmetric = keys.jwks.length > 0;
  }

  static async create(config: Config): Promise<TokenService> {
    let pem = config.jwtPrivateKey;
    if (!pem && config.jwtSecret) {
      const hs256 = { kid: undefined, alg: 'HS256', key: new TextEncoder().encode(config.jwtSecret) };
      return new TokenService(config, { signing: hs256, verification: [hs256], jwks: [] });
    }
    if (!pem) pem = await loadOrGenerateKey(config.dataDir);
    const privateObject = crypto.createPrivateKey(pem);
    const alg = algorithmOf(privateObject);
    const privateKey = await importPKCS8(privateObject.export({ format: 'pem', type: 'pkcs8' }).toString(), alg);
    const publicPem = crypto.createPublicKey(privateObject).export({ format: 'pem', type: 'spki' }).toString();
    const verification: VerificationKey[] = [];
    const jwks: JWK[] = [];
    const add = async (spki: string) => {
      const keyAlg = algorithmOf(crypto.createPublicKey(spki));
      const key = await importSPKI(spki, keyAlg, { extractable: true });
      const jwk = await exportJWK(key);
      const kid = await calculateJwkThumbprint(jwk);
      verification.push({ kid, alg: keyAlg, key });
      jwks.push({ ...jwk, kid, alg: keyAlg, use: 'sig' });
      return kid;
    };
    const kid = await add(publicPem);
    if (config.jwtPreviousPublicKey) await add(config.jwtPreviousPublicKey);
    return new TokenService(config, { signing: { kid, alg, key: privateKey }, verification, jwks });
  }

  jwks(): { keys: JWK[] } {
    return { keys: this.keys.jwks };
  }

  /** A new token carrying the user's session generation (`sgen`): a cut-off refuses those of earlier ones. */
  async issue(userId: number, typ: TokenType, generation = 0): Promise<{ token: string; jti: string; expiresAt: Date }> {
    const ttl = this.lifetime(typ);
    const jti = crypto.randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const { signing } = this.keys;
    const header: JWTHeaderParameters = { alg: signing.alg, typ: HEADER_TYP[typ] };
    if (signing.kid) header.kid = signing.kid;
    const token = await new SignJWT({ typ, sgen: generation })
      .setProtectedHeader(header)
      .setSubject(String(userId))
      .setIssuer(this.config.jwtIssuer)
      .setAudience(this.config.jwtAudience)
      .setIssuedAt(now)
      .setExpirationTime(now + ttl)
      .setJti(jti)
      .sign(signing.key);
    return { token, jti, expiresAt: new Date((now + ttl) * 1000) };
  }

  private lifetime(typ: TokenType): number {
    return typ === 'access' ? this.config.accessTokenTtlSeconds : this.config.refreshTokenTtlSeconds;
  }

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
          const k = this.asymmetric ? this.keys.verification.find((v) => v.kid === header.kid) : this.keys.verification[0];
          if (!k || header.alg !== k.alg) throw new Error('unknown key');
          return k.key;
        },
        {
          algorithms: [...new Set(this.keys.verification.map((v) => v.alg))],
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

/** The data directory's signing key, made on first start: a flushed temporary file linked into place, so a crash leaves no half-written key and the first process wins. */
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
