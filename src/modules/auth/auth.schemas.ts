import { Type } from 'typebox';
import { Password } from '../users/users.schemas.ts';

export const LoginBody = Type.Object(
  {
    username: Type.String({ maxLength: 320, description: 'the e-mail address (an empty or unknown one is 401)' }),
    password: Type.String({ maxLength: 1024 }),
    // sent by OAuth2 password-flow clients such as the docs page's Authorize dialog
    grant_type: Type.Optional(Type.String({ maxLength: 32 })),
    scope: Type.Optional(Type.String({ maxLength: 1024 })),
    client_id: Type.Optional(Type.String({ maxLength: 256 })),
    client_secret: Type.Optional(Type.String({ maxLength: 256 })),
  },
  // a fresh start creates admin@example.com and prints its password once
  { additionalProperties: false, examples: [{ username: 'admin@example.com', password: 'the password npm start printed' }] },
);

export const RefreshBody = Type.Object(
  { refresh_token: Type.String({ maxLength: 4096, description: 'the `refresh_token` POST /auth/login answered' }) },
  { additionalProperties: false, examples: [{ refresh_token: 'the refresh_token of your sign-in' }] },
);

export const ChangePasswordBody = Type.Object(
  { current_password: Type.String({ minLength: 1, maxLength: 1024 }), new_password: Password },
  { additionalProperties: false, examples: [{ current_password: 'your current password', new_password: 'staple-horse-battery-correct' }] },
);

export const PasswordRecoveryBody = Type.Object(
  {
    email: Type.String({
      minLength: 3,
      maxLength: 254,
      pattern: '^[^\\s@]+@[^\\s@]+$',
      description: 'the e-mail address of the account',
    }),
  },
  { additionalProperties: false, examples: [{ email: 'jane.doe@example.com' }] },
);

export const ResetPasswordBody = Type.Object(
  {
    token: Type.String({ maxLength: 256, description: 'the token from the recovery e-mail' }),
    new_password: Password,
  },
  { additionalProperties: false, examples: [{ token: 'the token from the recovery e-mail', new_password: 'staple-horse-battery-correct' }] },
);

export const EmailTokenBody = Type.Object(
  { token: Type.String({ maxLength: 256, description: 'the token from the e-mail' }) },
  { additionalProperties: false, examples: [{ token: 'the token from the e-mail' }] },
);

/** The action-style answer (`status`, `message`) of the recovery routes. */
export const ActionResult = Type.Object({
  status: Type.String(),
  message: Type.String(),
});

export const TokenPair = Type.Object({
  access_token: Type.String(),
  refresh_token: Type.String(),
  token_type: Type.Literal('bearer'),
});

export const TokenPairWithDevice = Type.Object({
  ...TokenPair.properties,
  device_token: Type.String({
    description:
      "this client's device token for the account (also set as the `device` cookie): send it on later sign-ins as `X-Device-Token` " +
      'to be throttled per device only',
  }),
});

/** The optional device token header of a sign-in (the `device` cookie does the same for browsers). */
export const DeviceTokenHeader = Type.Object({
  'x-device-token': Type.Optional(
    Type.String({ maxLength: 256, description: 'a device token an earlier sign-in of this account answered (v2 `device_token`, or the `device` cookie)' }),
  ),
});

export const AccessToken = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('bearer'),
});

export const Jwks = Type.Object({
  keys: Type.Array(
    Type.Object(
      {
        kty: Type.String(),
        kid: Type.String(),
        alg: Type.String(),
        use: Type.String(),
        crv: Type.Optional(Type.String()),
        x: Type.Optional(Type.String()),
        y: Type.Optional(Type.String()),
      },
      { additionalProperties: false },
    ),
  ),
});
