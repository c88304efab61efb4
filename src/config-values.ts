// Readers of environment values for src/config.ts: parsed and checked, or a ConfigError naming the variable.
import crypto from 'node:crypto';
import net from 'node:net';

export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>;

export function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
}

/** A comma-separated list: its items trimmed, the empty ones dropped. */
export function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function int(env: Env, name: string, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = str(env, name);
  if (raw === undefined) return def;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

export function num(env: Env, name: string, def: number, min: number): number {
  const raw = str(env, name);
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new ConfigError(`${name} must be a number >= ${min}, got "${raw}"`);
  return n;
}

const BOOL_WORDS = new Map([...['1', 'true', 'yes', 'on'].map((w) => [w, true] as const), ...['0', 'false', 'no', 'off'].map((w) => [w, false] as const)]);
const boolWord = (raw: string): boolean | undefined => BOOL_WORDS.get(raw.trim().toLowerCase());

export function bool(env: Env, name: string, def: boolean): boolean {
  const raw = str(env, name);
  if (raw === undefined) return def;
  const value = boolWord(raw);
  if (value === undefined) throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  return value;
}

export function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  const parsed = URL.parse(raw);
  if (!parsed) throw new ConfigError(`${name} is not a valid URL`);
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}`);
  }
  return raw;
}

/** METRICS_TOKEN: a bearer token of at least 16 characters, no spaces (it travels in a header). */
export function metricsToken(env: Env): string | undefined {
  const raw = str(env, 'METRICS_TOKEN');
  if (raw === undefined) return undefined;
  if (!/^[\x21-\x7e]{16,512}$/.test(raw)) throw new ConfigError('METRICS_TOKEN must be 16 to 512 printable ASCII characters without spaces');
  return raw;
}

/** PASSWORD_RESET_URL: an http(s) URL template that contains `{token}`. */
export function resetUrlTemplate(env: Env): string | undefined {
  const raw = str(env, 'PASSWORD_RESET_URL');
  if (raw === undefined) return undefined;
  if (!raw.includes('{token}')) throw new ConfigError('PASSWORD_RESET_URL must contain {token} where the reset token goes');
  url({ PASSWORD_RESET_URL: raw.replaceAll('{token}', 'token') }, 'PASSWORD_RESET_URL', ['http:', 'https:']);
  return raw.trim();
}

/** TRUST_PROXY: true/false, or a comma-separated list of trusted proxy addresses, CIDRs or proxy-addr names. */
export function trustProxy(env: Env): boolean | string {
  const raw = str(env, 'TRUST_PROXY');
  if (raw === undefined) return false;
  const word = boolWord(raw);
  if (word !== undefined) return word;
  const parts = raw.split(',').map((p) => p.trim());
  const named = ['loopback', 'linklocal', 'uniquelocal'];
  for (const part of parts) {
    const [address, prefix] = part.split('/');
    const validPrefix = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (net.isIPv4(address) ? 32 : 128));
    if (!named.includes(part) && !(net.isIP(address) !== 0 && validPrefix)) {
      throw new ConfigError(`TRUST_PROXY must be true, false or a list of proxy addresses or CIDRs, got "${part}"`);
    }
  }
  return parts.join(',');
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function oneOf(env: Env, name: string, values: readonly string[], fallback: string): string {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!values.includes(raw)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  return raw;
}

/** CURRENCY: an ISO 4217 code the runtime knows (Intl.supportedValuesOf), written as the standard does. */
export function currency(env: Env): string {
  const raw = str(env, 'CURRENCY')?.trim() ?? 'USD';
  if (!/^[A-Z]{3}$/.test(raw) || !Intl.supportedValuesOf('currency').includes(raw)) {
    throw new ConfigError(`CURRENCY must be an ISO 4217 currency code such as USD or EUR, got "${raw}"`);
  }
  return raw;
}

/** A PEM key that signs or verifies tokens: it must parse, and be P-256 (ES256) or Ed25519. */
export function signingKey(env: Env, name: string, kind: 'private' | 'public'): string | undefined {
  const pem = str(env, name);
  if (pem === undefined) return undefined;
  let key: crypto.KeyObject;
  try {
    key = kind === 'private' ? crypto.createPrivateKey(pem) : crypto.createPublicKey(pem);
  } catch {
    throw new ConfigError(`${name} must be a PEM-encoded ${kind === 'private' ? 'PKCS#8 private' : 'SPKI public'} key`);
  }
  const p256 = key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
  if (!p256 && key.asymmetricKeyType !== 'ed25519') {
    throw new ConfigError(`${name} must be an ES256 (P-256) or Ed25519 key, got ${key.asymmetricKeyType ?? 'an unknown type'}`);
  }
  return pem;
}

