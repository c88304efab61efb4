import type { FastifyContextConfig, FastifyInstance, FastifySchema } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { authUser } from '../../http/auth.ts';
import { errorResponses } from '../../http/errors.ts';
import { toUserPublic, USER_SCHEMAS } from '../users/users.schemas.ts';
import { apiVersionOf } from '../../http/api-version.ts';
import {
  AccessToken,
  ActionResult,
  ChangePasswordBody,
  EmailTokenBody,
  Jwks,
  LoginBody,
  PasswordRecoveryBody,
  RefreshBody,
  ResetPasswordBody,
  TokenPair,
  TokenPairWithDevice,
  DeviceTokenHeader,
} from './auth.schemas.ts';
import { presentedDeviceToken, setDeviceCookie } from './device-tokens.ts';
import type { AuthService } from './auth.service.ts';
import type { UsersModule } from '../users/users.module.ts';
import type { PasswordRecoveryService } from './password-recovery.service.ts';
import type { TokenService } from './token.service.ts';

/** The public keys that verify access tokens, at the well-known path outside the versioned API. */
export function registerJwksRoute(app: FastifyInstance, tokens: TokenService): void {
  app.get('/.well-known/jwks.json', {
    config: { auth: 'public', rateLimitBucket: 'none' },
    schema: { tags: ['auth'], summary: 'Public keys that verify access tokens', response: { 200: Jwks } },
    handler: async () => tokens.jwks(),
  });
}

/** Routes taking a credential in their body count against the client IP's limit whatever `Authorization` they carry. */
const credentialRoute = { auth: 'public', rateLimitBucket: 'ip' } as const;
const route = <S extends FastifySchema>(config: FastifyContextConfig, schema: S) => ({ config, schema: { tags: ['auth'], ...schema } });

export function registerAuthRoutes(root: FastifyInstance, auth: AuthService, recovery: PasswordRecoveryService, users: UsersModule): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const version = apiVersionOf(root);
  const { UserPublic } = USER_SCHEMAS[version];

  app.post('/auth/login', {
    ...route(credentialRoute, {
      summary: 'Sign in with your e-mail address (as username) and password',
      description:
        'Accepts JSON or an OAuth2 password-flow form (application/x-www-form-urlencoded).\n\n' +
        'After `LOGIN_THROTTLE_MAX_FAILURES` (10) failed sign-ins for one e-mail from one client (its address; the forwarded ' +
        'address with `TRUST_PROXY`) within `LOGIN_THROTTLE_WINDOW_SECONDS` (15 minutes), further sign-ins for that e-mail from ' +
        'that client answer 429 `LOGIN_THROTTLED` with `Retry-After` until the window ends; other clients are not affected ' +
        'until the e-mail reaches `LOGIN_THROTTLE_MAX_FAILURES_PER_EMAIL` (10 times the first) across all clients. Known and ' +
        'unknown e-mails alike. A successful sign-in or a password reset clears the counts. Always counted against the client ' +
        'IP (429 `RATE_LIMITED`), whatever `Authorization` header is sent.\n\n' +
        '**Device tokens.** A successful sign-in sets the cookie `device` (`HttpOnly`, `SameSite=Strict`, `Path=/api`, `Secure` ' +
        'over TLS, valid 30 days from the last sign-in with it)' +
        (version === 'v1' ? '' : ' and answers the same token as `device_token`') +
        '. A sign-in that presents a device token of the account (the cookie, or the `X-Device-Token` header) is throttled per ' +
        'device only: after `LOGIN_THROTTLE_MAX_FAILURES` failures with it, 429 until the window ends, but never because of ' +
        "the e-mail's ceiling or other clients' failures. Signing out everywhere, a password change or reset and an e-mail " +
        'revert end the device tokens of the account.',
      consumes: ['application/json', 'application/x-www-form-urlencoded'],
      headers: DeviceTokenHeader,
      body: LoginBody,
      response: { 200: version === 'v1' ? TokenPair : TokenPairWithDevice, ...errorResponses(401, 403, 422, 429) },
    }),
    handler: async (request, reply) => {
      const { device_token, ...pair } = await auth.login(request.body.username, request.body.password, request.ip, presentedDeviceToken(request));
      setDeviceCookie(request, reply, device_token);
      // v1 answers the specification's token pair; the token is in the cookie
      return version === 'v1' ? pair : { ...pair, device_token };
    },
  });

  app.post('/auth/refresh', {
    ...route(credentialRoute, {
      summary: 'Exchange a refresh token for a new access token',
      body: RefreshBody,
      response: { 200: AccessToken, ...errorResponses(401, 422, 429) },
    }),
    handler: async (request) => auth.refresh(request.body.refresh_token),
  });

  app.post('/auth/logout', {
    ...route(credentialRoute, {
      summary: 'Revoke a refresh token',
      body: RefreshBody,
      response: { 204: Type.Null({ description: 'Revoked' }), ...errorResponses(401, 422, 429) },
    }),
    handler: async (request, reply) => {
      await auth.logout(request.body.refresh_token);
      return reply.code(204).send(null);
    },
  });

  app.post('/auth/logout-all', {
    ...route({ auth: 'user' }, {
      summary: 'Sign out everywhere',
      description:
        "Revokes every refresh token of the signed-in user and refuses (401) every access token issued to them until now, the caller's included, on every API process. Sign in again afterwards.",
      response: { 204: Type.Null({ description: 'Signed out everywhere' }), ...errorResponses(401, 403, 429) },
    }),
    handler: async (request, reply) => {
      await users.service.endAllSessions(authUser(request).id);
      return reply.code(204).send(null);
    },
  });

  app.get('/auth/me', {
    ...route({ auth: 'user' }, {
      summary: 'The signed-in user',
      response: { 200: UserPublic, ...errorResponses(401, 403, 429) },
    }),
    handler: async (request) => toUserPublic(version, authUser(request)),
  });

  app.post('/auth/password', {
    ...route({ auth: 'user' }, {
      summary: "Change the signed-in user's password",
      description: 'Revokes every refresh token of the user and refuses (401) every access token issued before the change, on every API process. Sign in again with the new password.',
      body: ChangePasswordBody,
      response: { 204: Type.Null({ description: 'Changed' }), ...errorResponses(401, 403, 422, 429) },
    }),
    handler: async (request, reply) => {
      await auth.changePassword(authUser(request), request.body.current_password, request.body.new_password);
      return reply.code(204).send(null);
    },
  });

  app.post('/auth/password-recovery', {
    ...route(credentialRoute, {
      summary: 'Ask for a password reset e-mail',
      description:
        'Always 202 with the same body, in the same time, whether or not an account has this e-mail. For a live account ' +
        'that is active with this address verified, or that was created by a platform order and has no password yet, an e-mail ' +
        'goes out with a single-use reset token (valid `PASSWORD_RESET_TTL_SECONDS`, 30 minutes by default), as a link when ' +
        '`PASSWORD_RESET_URL` is set. Use it with `POST /auth/reset-password`. While a token sent earlier is still valid, a new ' +
        'request sends nothing and never replaces it; at most 3 recovery e-mails go to one address per hour. An account whose ' +
        'address is not verified gets no e-mail: its holder signs in with the password and confirms the address, or asks an administrator.',
      body: PasswordRecoveryBody,
      response: { 202: ActionResult, ...errorResponses(422, 429) },
    }),
    handler: async (request, reply) => {
      await recovery.request(request.body.email);
      return reply.code(202).send({
        status: 'accepted',
        message: 'If an account with this e-mail address exists, a password reset e-mail is on its way',
      });
    },
  });

  app.post('/auth/reset-password', {
    ...route(credentialRoute, {
      summary: 'Set a new password with a token from a recovery e-mail',
      description:
        'Sets the password (same rules as everywhere: 8 to 72 bytes), revokes every refresh token and refuses (401) every ' +
        'access token issued before it. An account created by a platform order without a password becomes active. ' +
        'Errors (400): `INVALID_RESET_TOKEN` (not a token this service issued), `RESET_TOKEN_USED`, `RESET_TOKEN_EXPIRED`, ' +
        '`RESET_TOKEN_SUPERSEDED` (the password, the e-mail or the account changed since). The address becomes verified, and ' +
        "the e-mail's sign-in throttle (its ceiling, and this client's count) is cleared.",
      body: ResetPasswordBody,
      response: { 200: ActionResult, ...errorResponses(400, 422, 429) },
    }),
    handler: async (request) => {
      await recovery.reset(request.body.token, request.body.new_password, request.ip);
      return { status: 'completed', message: 'Password has been reset; sign in with the new password' };
    },
  });

  app.post('/auth/verify-email', {
    ...route(credentialRoute, {
      summary: 'Confirm an e-mail address with the token mailed to it',
      description:
        'A change of your own e-mail (PATCH /users/{user_id}) mails a token to the new address, valid 2 days. Sending it here marks ' +
        'the address verified: from then on platform orders with this address are linked to the account and password recovery mails it. ' +
        'Errors (400): `INVALID_EMAIL_TOKEN` (not a token this service issued, the account has another address since, or its change was undone), ' +
        '`EMAIL_TOKEN_USED`, `EMAIL_TOKEN_EXPIRED`, `EMAIL_EXISTS` (another account verified the address first).',
      body: EmailTokenBody,
      response: { 200: ActionResult, ...errorResponses(400, 422, 429) },
    }),
    handler: async (request) => {
      await users.emailChange.verify(request.body.token);
      return { status: 'completed', message: 'The e-mail address is verified' };
    },
  });

  app.post('/auth/email-change/revert', {
    ...route(credentialRoute, {
      summary: 'Undo an e-mail change with the token mailed to the previous address',
      description:
        'Every change of an account\'s e-mail mails the previous address a token, valid 7 days. Sending it here restores the address ' +
        'that change replaced, verified, and undoes that change and every later one: their revert and confirmation tokens are void, those ' +
        'of earlier changes are not, so the oldest link (the owner\'s) always wins. Nothing else voids a revert token before it expires ' +
        '(a password reset or change, another e-mail change, a verification). Every session of the account ends (refresh, reset and device ' +
        'tokens revoked, access tokens issued until now refused) and so does its password: the restored address is mailed a reset token, ' +
        'the replaced one a notice. ' +
        'Errors (400): `INVALID_EMAIL_TOKEN` (unknown, or its change was undone by the revert of an earlier one), `EMAIL_TOKEN_USED`, ' +
        '`EMAIL_TOKEN_EXPIRED`, `EMAIL_EXISTS` (another account verified the address meanwhile).',
      body: EmailTokenBody,
      response: { 200: ActionResult, ...errorResponses(400, 422, 429) },
    }),
    handler: async (request) => {
      await users.emailChange.revert(request.body.token);
      return { status: 'completed', message: 'The previous e-mail address is restored and every session of the account has ended' };
    },
  });
}
