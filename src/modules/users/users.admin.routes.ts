import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../http/errors.ts';
import { apiVersionOf } from '../../http/api-version.ts';
import { AdminUserListQuery } from './users.admin.schemas.ts';
import type { UsersAdminService } from './users.admin.service.ts';
import { toUserDetail } from './users.mapper.ts';
import { userSchemas } from './users.schemas.ts';

/** The administrators' user search (activating and deactivating is PATCH /users/{user_id}). */
export function registerUserAdminRoutes(root: FastifyInstance, users: UsersAdminService): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const version = apiVersionOf(root);
  const { AdminUserPage } = userSchemas(version);

  app.get('/admin/users', {
    config: { auth: 'admin' },
    schema: {
      tags: ['admin'],
      summary: 'Search the users by e-mail, with their roles (administrators)',
      description:
        '`email` selects the users whose e-mail contains the text, in any case; `is_active` those active or not. ' +
        'Each user is shown as GET /users/{user_id} shows it. An administrator activates or deactivates a user with PATCH /users/{user_id}.',
      querystring: AdminUserListQuery,
      response: { 200: AdminUserPage, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request) => {
      const page = await users.list(request.query);
      return { ...page, items: page.items.map((u) => toUserDetail(version, u)) };
    },
  });
}
