import crypto from 'node:crypto';

/** Shopify's inbound scheme: base64 HMAC-SHA256 of the raw body bytes, compared in constant time. */
export function verifyShopifyHmac(secret: string, rawBody: Buffer, header: string | undefined): boolean {
  if (!header) return false;
  const expected = crypto.createHmac('sha256', secret).update(rawBody).digest();
  let given: Buffer;
  try {
    given = Buffer.from(header.trim(), 'base64');
  } catch {
    return false;
  }
  // timingSafeEqual throws on a length mismatch; the length of a MAC is no secret
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}
