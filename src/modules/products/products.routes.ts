import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Db } from '../../db/database.ts';
import { authUser } from '../../http/auth.ts';
import { errorResponses } from '../../http/errors.ts';
import { toProduct } from './products.mapper.ts';
import { Product, ProductCreateBody, ProductIdParams, ProductListQuery, ProductPage, ProductUpdateBody } from './products.schemas.ts';
import { createProduct, getProduct, listProductsFor, patchProduct } from './products.service.ts';

const ADMIN_DETAIL = 'Only administrators can manage products';

export function registerProductRoutes(root: FastifyInstance, db: Db): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['products'];

  app.get('/products', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'List products (active ones only, unless the caller is an administrator)',
      querystring: ProductListQuery,
      response: { 200: ProductPage, ...errorResponses(401, 403, 422, 429) },
    },
    handler: async (request) => {
      const page = await listProductsFor(db, authUser(request), request.query);
      return { ...page, items: page.items.map(toProduct) };
    },
  });

  app.get('/products/:product_id', {
    config: { auth: 'user' },
    schema: {
      tags,
      summary: 'Read a product',
      params: ProductIdParams,
      response: { 200: Product, ...errorResponses(401, 403, 404, 422, 429) },
    },
    handler: async (request) => toProduct(await getProduct(db, authUser(request), request.params.product_id)),
  });

  app.post('/products', {
    config: { auth: 'admin', adminDetail: ADMIN_DETAIL },
    schema: {
      tags,
      summary: 'Create a product (admin)',
      body: ProductCreateBody,
      response: { 201: Product, ...errorResponses(400, 401, 403, 422, 429) },
    },
    handler: async (request, reply) => reply.code(201).send(toProduct(await createProduct(db, request.body))),
  });

  app.patch('/products/:product_id', {
    config: { auth: 'admin', adminDetail: ADMIN_DETAIL },
    schema: {
      tags,
      summary: 'Update a product (admin); only the given fields change',
      params: ProductIdParams,
      body: ProductUpdateBody,
      response: { 200: Product, ...errorResponses(400, 401, 403, 404, 422, 429) },
    },
    handler: async (request) => toProduct(await patchProduct(db, request.params.product_id, request.body)),
  });
}
