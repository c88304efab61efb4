import type { FastifyError, FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Db } from '../../db/database.ts';
import { authUser } from '../../http/auth.ts';
import { bodyValidationAsBadRequest } from '../../http/error-handling.ts';
import { errorResponses } from '../../http/errors.ts';
import { toItem } from './items.mapper.ts';
import { Item, ItemCreateBody, ItemIdParams, ItemList, ItemListQuery, ItemUpdateBody } from './items.schemas.ts';
import { createItem, getItem, listItems, removeItem, updateItem } from './items.service.ts';

export function registerItemRoutes(root: FastifyInstance, db: Db): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['items'];

  app.post('/items', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'Create an item (active user)',
      body: ItemCreateBody,
      response: { 201: Item, ...errorResponses(400, 401, 403, 422, 429) },
    },
    handler: async (request, reply) => reply.code(201).send(toItem(await createItem(db, authUser(request), request.body))),
  });

  app.get('/items', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: "List the caller's items",
      querystring: ItemListQuery,
      response: { 200: ItemList, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request) => (await listItems(db, authUser(request), request.query)).map(toItem),
  });

  app.get('/items/:item_id', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'Read one of your items',
      params: ItemIdParams,
      response: { 200: Item, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) => toItem(await getItem(db, authUser(request), request.params.item_id)),
  });

  app.patch('/items/:item_id', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'Update one of your items; only the given fields change',
      description: 'An invalid body is 400 INVALID_INPUT (with `errors`), as the specification lists for this route.',
      params: ItemIdParams,
      body: ItemUpdateBody,
      response: { 200: Item, ...errorResponses(400, 401, 403, 404, 422, 429) },
    },
    attachValidation: true,
    handler: async (request) => {
      if (request.validationError) throw bodyValidationAsBadRequest(request.validationError as FastifyError);
      return toItem(await updateItem(db, authUser(request), request.params.item_id, request.body));
    },
  });

  app.delete('/items/:item_id', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'Delete one of your items (soft delete)',
      params: ItemIdParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request, reply) => {
      await removeItem(db, authUser(request), request.params.item_id);
      return reply.code(204).send(null);
    },
  });
}
