import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { authUser } from '../../http/auth.ts';
import { errorResponses } from '../../http/errors.ts';
import { toUserPublic } from '../users/users.mapper.ts';
import { UserPublic } from '../users/users.schemas.ts';
import type { UsersService } from '../users/users.service.ts';
import { AccessToken, ChangePasswordBody, LoginBody, RefreshBody, TokenPair } from './auth.schemas.ts';
import type { AuthService } from './auth.service.ts';

export function registerAuthRoutes(root: FastifyInstance, deps: { auth: AuthService; users: UsersService }): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['auth'];

  app.post('/auth/login', {
    config: { auth: 'public' },
    schema: {
      tags,
      summary: 'Sign in with e-mail (as `username`) and password',
      description: 'Accepts JSON or an OAuth2 password-flow form (application/x-www-form-urlencoded).',
      consumes: ['application/json', 'application/x-www-form-urlencoded'],
      body: LoginBody,
      response: { 200: TokenPair, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request) => deps.auth.login(request.body.username, request.body.password),
  });

  app.post('/auth/refresh', {
    config: { auth: 'public' },
    schema: {
      tags,
      summary: 'Exchange a refresh token for a new access token',
      body: RefreshBody,
      response: { 200: AccessToken, ...errorResponses(401, 422, 429) },
    },
    handler: async (request) => deps.auth.refresh(request.body.refresh_token),
  });

  app.post('/auth/logout', {
    config: { auth: 'public' },
    schema: {
      tags,
      summary: 'Revoke a refresh token',
      body: RefreshBody,
      response: { 204: Type.Null({ description: 'Revoked' }), ...errorResponses(401, 422, 429) },
    },
    handler: async (request, reply) => {
      await deps.auth.logout(request.body.refresh_token);
      return reply.code(204).send(null);
    },
  });

  app.get('/auth/me', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'The signed-in user',
      response: { 200: UserPublic, ...errorResponses(401, 403, 429) },
    },
    handler: async (request) => toUserPublic(authUser(request)),
  });

  app.post('/auth/password', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: "Change the signed-in user's password (revokes every refresh token)",
      body: ChangePasswordBody,
      response: { 204: Type.Null({ description: 'Changed' }), ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request, reply) => {
      await deps.users.changePassword(authUser(request), request.body.current_password, request.body.new_password);
      return reply.code(204).send(null);
    },
  });
}
