/**
 * The bare limit: Fastify + pg Pool with nothing else (no auth, no validation, no rate limit, no
 * logging, no response schemas), serving the same primary queries as the service's read routes.
 * Run as its own process (env: DATABASE_URL, PORT); the bench compares every read scenario with it.
 */
import Fastify from 'fastify';
import pg from 'pg';

pg.types.setTypeParser(20, (v) => Number(v));
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
pool.on('error', () => {});
const app = Fastify({ logger: false });

const num = (v: unknown): number => Number(v);
const PAGE = 20;

// GET /auth/me: the user by id
app.get('/users/:id', async (request, reply) => {
  const { id } = request.params as { id: string };
  const { rows } = await pool.query('SELECT * FROM users WHERE id = $1 AND deleted_at IS NULL', [num(id)]);
  if (rows.length === 0) return reply.code(404).send({ detail: 'not found' });
  const { id: userId, email, full_name, is_active, is_admin, created_at, updated_at } = rows[0];
  return { id: userId, email, full_name, is_active, is_admin, created_at, updated_at };
});

// GET /orders/{id}: the order, then its lines (with the product name)
app.get('/orders/:id', async (request, reply) => {
  const id = num((request.params as { id: string }).id);
  const { rows } = await pool.query('SELECT * FROM orders WHERE id = $1', [id]);
  if (rows.length === 0) return reply.code(404).send({ detail: 'not found' });
  const lines = await pool.query(
    `SELECT oi.id, oi.product_id, oi.quantity, oi.unit_price, coalesce(oi.product_name, p.name) AS product_name
       FROM order_items oi JOIN products p ON p.id = oi.product_id WHERE oi.order_id = $1 ORDER BY oi.id`,
    [id],
  );
  return { ...rows[0], items: lines.rows };
});

// GET /orders?page=: one user's page, newest first, and the count
app.get('/users/:id/orders', async (request) => {
  const userId = num((request.params as { id: string }).id);
  const page = Math.max(1, num((request.query as { page?: string }).page ?? 1));
  const [rows, count] = await Promise.all([
    pool.query('SELECT * FROM orders WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3', [
      userId,
      PAGE,
      (page - 1) * PAGE,
    ]),
    pool.query('SELECT count(*) AS total FROM orders WHERE user_id = $1', [userId]),
  ]);
  return { items: rows.rows, total: count.rows[0].total, page, page_size: PAGE };
});

// GET /items: one user's live items
app.get('/users/:id/items', async (request) => {
  const userId = num((request.params as { id: string }).id);
  const skip = Math.max(0, num((request.query as { skip?: string }).skip ?? 0));
  const { rows } = await pool.query(
    'SELECT * FROM items WHERE user_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT $2 OFFSET $3',
    [userId, PAGE, skip],
  );
  return rows;
});

app.get('/health', async () => ({ status: 'ok' }));

const port = Number(process.env.PORT ?? 8100);
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`baseline listening on ${port}\n`);
const stop = () => {
  void app
    .close()
    .then(() => pool.end())
    .finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
