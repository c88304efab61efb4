import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

/**
 * An order line keeps its product's name from the moment the order is placed (processing writes it
 * again with the price), so reading an order needs no join with the catalogue. Lines of orders
 * placed before this migration and not processed yet get their product's current name, which is
 * what their read showed until now.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    UPDATE order_items AS oi SET product_name = p.name FROM products AS p WHERE oi.product_id = p.id AND oi.product_name IS NULL;
    ALTER TABLE order_items ALTER COLUMN product_name SET NOT NULL;
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `ALTER TABLE order_items ALTER COLUMN product_name DROP NOT NULL;`);
}
