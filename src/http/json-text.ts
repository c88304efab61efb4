import type { FastifyReply } from 'fastify';

/**
 * Answers with JSON text rendered elsewhere (by PostgreSQL). Fastify sends a string as it is, so the
 * route's serializer does not run: the text must already have the shape of the route's response
 * schema, which a test of its renderer checks.
 */
export function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json);
}
