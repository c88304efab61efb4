import type { FastifyContextConfig, FastifyInstance, FastifySchema } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { authUser } from '../../http/auth.ts';
import { errorResponses } from '../../http/errors.ts';
import { apiVersionOf } from '../../http/api-version.ts';
import { AdminUserListQuery, toUserDetail, toUserListItem, toUserPublic, UserCreateBody, UserIdParams, UserListQuery, USER_SCHEMAS } from './users.schemas.ts';
import type { UsersService } from './users.service.ts';

const route = <S extends FastifySchema>(config: FastifyContextConfig, schema: S) => ({ config, schema: { tags: ['users'], ...schema } });

export function registerUserRoutes(root: FastifyInstance, users: UsersService): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const version = apiVersionOf(root);
  const { AdminUserPage, UserDetail, UserPage, UserPublic, UserUpdateBody } = USER_SCHEMAS[version];

  app.post('/users', {
    ...route({ auth: 'admin', adminDetail: 'Only administrators can create users' }, {
      summary: 'Create a user (admin)',
      body: UserCreateBody,
      response: { 201: UserPublic, ...errorResponses(400, 401, 403, 422, 429) },
    }),
    handler: async (request, reply) => reply.code(201).send(toUserPublic(version, await users.create(request.body))),
  });

  app.get('/users', {
    ...route({ auth: 'user' }, {
      summary: 'List users',
      ...(version === 'v2' ? { description: 'Administrators list every user; anyone else lists only their own account.' } : {}),
      querystring: UserListQuery,
      response: { 200: UserPage, ...errorResponses(401, 403, 422, 429) },
    }),
    handler: async (request) => {
      // v1 keeps the specification's rule (any signed-in user lists every user); v2 shows a non-admin only themselves
      const page = version === 'v2' ? await users.listVisibleTo(authUser(request), request.query) : await users.list(request.query);
      return { ...page, items: page.items.map((u) => toUserListItem(version, u)) };
    },
  });

  app.get('/users/:user_id', {
    ...route({ auth: 'user' }, {
      summary: 'Read a user',
      ...(version === 'v2' ? { description: "Administrators read any user; anyone else reads only their own account (another user's is 404)." } : {}),
      params: UserIdParams,
      response: { 200: UserDetail, ...errorResponses(401, 403, 404, 422, 429) },
    }),
    handler: async (request) => {
      const id = request.params.user_id;
      return toUserDetail(version, version === 'v2' ? await users.getVisibleTo(authUser(request), id) : await users.get(id));
    },
  });

  app.patch('/users/:user_id', {
    ...route({ auth: 'user' }, {
      summary: 'Update a user (self or admin); only the given fields change',
      description:
        'A change of your own `email` leaves it unverified and mails a confirmation link to the new address (`POST /auth/verify-email`); ' +
        'the previous address is told, with a link that undoes the change for 7 days (`POST /auth/email-change/revert`). ' +
        'An unverified address links no platform orders and receives no password recovery e-mails. An e-mail an administrator sets ' +
        'on another account is verified.' +
        (version === 'v2' ? ' In v2, changing your own `email` needs `current_password` (422 without it, 401 `INVALID_CREDENTIALS` when wrong).' : ''),
      params: UserIdParams,
      body: UserUpdateBody,
      response: { 200: UserDetail, ...errorResponses(400, 401, 403, 404, 422, 429) },
    }),
    handler: async (request) =>
      toUserDetail(version, await users.update(authUser(request), request.params.user_id, request.body, { currentPasswordForEmail: version === 'v2' })),
  });

  app.delete('/users/:user_id', {
    ...route({ auth: 'admin', adminDetail: 'Only administrators can delete users' }, {
      summary: 'Soft-delete a user (admin)',
      params: UserIdParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(401, 403, 404, 422, 429) },
    }),
    handler: async (request, reply) => {
      await users.remove(authUser(request), request.params.user_id);
      return reply.code(204).send(null);
    },
  });

  app.get('/admin/users', {
    ...route({ auth: 'admin' }, {
      tags: ['admin'],
      summary: 'Search the users by e-mail, with their roles (administrators)',
      description:
        '`email` selects the users whose e-mail contains the text, in any case; `is_active` those active or not. ' +
        'Each user is shown as GET /users/{user_id} shows it. An administrator activates or deactivates a user with PATCH /users/{user_id}.',
      querystring: AdminUserListQuery,
      response: { 200: AdminUserPage, ...errorResponses(401, 403, 422, 429) },
    }),
    handler: async (request) => {
      const page = await users.search(request.query);
      return { ...page, items: page.items.map((u) => toUserDetail(version, u)) };
    },
  });
}
