/**
 * The typed client in use: sign in, place an order for the first product of the catalogue, and
 * follow it until the worker has processed it.
 *
 *   SERVICE_URL=http://127.0.0.1:8000 SERVICE_EMAIL=… SERVICE_PASSWORD=… node clients/typescript/example.ts
 */
import { createServiceClient } from './client.ts';

const baseUrl = process.env.SERVICE_URL ?? 'http://127.0.0.1:8000';
const email = process.env.SERVICE_EMAIL;
const password = process.env.SERVICE_PASSWORD;
if (!email || !password) throw new Error('set SERVICE_EMAIL and SERVICE_PASSWORD');

const service = createServiceClient({ baseUrl });
await service.signIn(email, password);

const me = await service.api.GET('/api/v1/auth/me');
console.log(`signed in as ${me.data?.full_name} <${me.data?.email}>`);

const products = await service.api.GET('/api/v1/products', { params: { query: { page: 1, page_size: 1 } } });
const product = products.data?.items[0];
if (!product) throw new Error('the catalogue is empty');

const placed = await service.api.POST('/api/v1/orders', {
  body: { items: [{ product_id: product.id, quantity: 1 }], shipping_address: '1 Example Street' },
});
if (!placed.data) throw new Error(`order refused: ${placed.error?.error_code}: ${placed.error?.detail}`);
console.log(`order ${placed.data.id}: ${placed.data.status}`);

// the worker prices the order and takes its stock in the background
let order = placed.data;
while (order.status === 'pending' || order.status === 'processing') {
  await new Promise((resolve) => setTimeout(resolve, 500));
  const { data, error } = await service.api.GET('/api/v1/orders/{order_id}', { params: { path: { order_id: order.id } } });
  if (!data) throw new Error(`${error?.error_code}: ${error?.detail}`);
  order = data;
}
console.log(`order ${order.id}: ${order.status}, total ${order.total_amount}`);
await service.signOut();
