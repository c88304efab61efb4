// What running the operations from the top (Try it out, fresh start) needs beyond their examples, in their descriptions.

/** Starts the note of what an operation's example needs before it can succeed on a fresh start. */
export const NEEDS_FIRST = '**Needs first:**';
/** Starts the note of what to do after an operation before running the ones below it. */
export const THEN = '**Then:**';

const recoveryMail = 'without `SMTP_URL` the e-mails are `.eml` files in `DATA_DIR/outbox`';
const refreshToken = 'the `refresh_token` POST /auth/login answered (Authorize keeps only the access token)';
const messageId = 'a message of the subscription: its `message_id` from GET …/deliveries or from the answer of POST …/test';
const signed =
  '`SHOPIFY_WEBHOOK_SECRET` set, and the base64 HMAC-SHA256 of the body under it in `X-Shopify-Hmac-Sha256`: the platform signs its webhooks, ' +
  'Try it out cannot (a fresh start has no secret and answers 503)';
const inbound = 'a platform webhook received (a fresh start has none): its `id` from GET /admin/inbound-webhooks';

/** By method and unprefixed path: what the example needs first, and what to do after it. */
const NOTES: Readonly<Record<string, { needs?: string; then?: string }>> = {
  'POST /auth/login': {
    needs: "the password `npm start` printed for `admin@example.com` (or your own account's e-mail and password) in place of the example's; **Authorize** signs in for every other operation",
  },
  'POST /auth/refresh': { needs: refreshToken },
  'POST /auth/logout': { needs: refreshToken },
  'POST /auth/logout-all': { then: "this page's session ends too: press **Authorize** again before running the operations below" },
  'POST /auth/password': {
    needs: 'your current password in `current_password`',
    then: "every session ends, this page's too: press **Authorize** again, with the new password",
  },
  'POST /auth/reset-password': { needs: `the token of the recovery e-mail POST /auth/password-recovery sends (${recoveryMail})` },
  'POST /auth/verify-email': { needs: `the token of the confirmation e-mail a change of e-mail address sends to the new address (${recoveryMail})` },
  'POST /auth/email-change/revert': { needs: `the token of the notice a change of e-mail address sends to the previous one (${recoveryMail})` },
  'POST /orders/{order_id}/retry': { needs: 'a `failed` order: only those are retried (the order the example above places is priced and completed)' },
  'GET /webhooks/subscriptions/{subscription_id}/messages/{message_id}': { needs: messageId },
  'POST /webhooks/subscriptions/{subscription_id}/messages/{message_id}/resend': { needs: `${messageId}, no longer pending` },
  'POST /webhooks/orders/create': { needs: signed },
  'POST /webhooks/orders/cancelled': { needs: signed },
  'GET /admin/inbound-webhooks/{id}': { needs: inbound },
  'POST /admin/inbound-webhooks/{id}/reprocess': { needs: inbound },
  'GET /events': { needs: 'a client that reads the stream as it comes (`curl -N`, an EventSource over fetch): Try it out shows an answer only when it ends' },
};

/** The operations' keys the notes name (for a test that none is stale). */
export const NOTED_OPERATIONS: readonly string[] = Object.keys(NOTES);

/** `description` with the operation's notes appended, each a paragraph of its own. */
export function withTryItNotes(description: string | undefined, key: string): string | undefined {
  const note = NOTES[key];
  if (!note) return description;
  const paragraphs = [description, note.needs && `${NEEDS_FIRST} ${note.needs}.`, note.then && `${THEN} ${note.then}.`];
  return paragraphs.filter(Boolean).join('\n\n');
}
