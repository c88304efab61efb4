import crypto from 'node:crypto';

/** The tokens mailed to an address (reset, confirmation, revert): 256 random bits, base64url, stored only as their SHA-256. */
const TOKEN_BYTES = 32;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export function newMailToken(): { token: string; hash: string } {
  const token = crypto.randomBytes(TOKEN_BYTES).toString('base64url');
  return { token, hash: hashOfMailToken(token) };
}

export const hashOfMailToken = (token: string): string => crypto.createHash('sha256').update(token).digest('hex');

/** Whether `token` has the shape of a mailed token (anything else is refused without a lookup). */
export const isMailToken = (token: string): boolean => TOKEN_SHAPE.test(token);
