import type { FastifyInstance, preHandlerHookHandler } from 'fastify';
import { AppError } from './errors.ts';

/** The largest id a row can have: ids are PostgreSQL `integer`s. */
export const MAX_ID = 2147483647;

/** The path parameters that name a row, and the resource each one names (for its 404). */
export const RESOURCES: Readonly<Record<string, string>> = {
  user_id: 'User',
  order_id: 'Order',
  item_id: 'Item',
  product_id: 'Product',
  subscription_id: 'Subscription',
};

/** An id outside 1..MAX_ID is that resource's 404, unsent to the database (which refuses it); the first preHandler, like a missing row. */
export function registerPathIds(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const props = (route.schema?.params as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
    const keys = Object.keys(props).filter((k) => k in RESOURCES);
    if (keys.length === 0) return;
    const check: preHandlerHookHandler = (request, _reply, done) => {
      const params = request.params as Record<string, unknown>;
      const outside = keys.find((key) => typeof params[key] === 'number' && !(params[key] >= 1 && params[key] <= MAX_ID));
      done(outside === undefined ? undefined : new AppError('NOT_FOUND', `${RESOURCES[outside]} not found`));
    };
    const existing = route.preHandler;
    route.preHandler = existing === undefined ? [check] : [check, ...(Array.isArray(existing) ? existing : [existing])];
  });
}

