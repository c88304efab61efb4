import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

export function login(app: FastifyInstance, username: string, password: string, extra: Partial<InjectOptions> = {}): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password }, ...extra } as InjectOptions) as Promise<LightMyRequestResponse>;
}

export function me(app: FastifyInstance, accessToken: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${accessToken}` } }) as Promise<LightMyRequestResponse>;
}

export function refresh(app: FastifyInstance, refreshToken: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: refreshToken } }) as Promise<LightMyRequestResponse>;
}

export function requestRecovery(app: FastifyInstance, email: string, extra: Partial<InjectOptions> = {}): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: '/api/v1/auth/password-recovery', payload: { email }, ...extra } as InjectOptions) as Promise<LightMyRequestResponse>;
}

export function resetPassword(app: FastifyInstance, token: string, newPassword: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, new_password: newPassword } }) as Promise<LightMyRequestResponse>;
}

/** The reset token in a recovery e-mail's text (43 base64url characters on a line of their own, or in a link). */
export function tokenIn(body: string): string {
  const m = /(?:^|token=)([A-Za-z0-9_-]{43})$/m.exec(body);
  if (!m) throw new Error(`no reset token in:\n${body}`);
  return m[1];
}

