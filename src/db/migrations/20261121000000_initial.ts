import type { Kysely } from 'kysely';
import { runDdl } from '../ddl.ts';

// Migrations are written against Kysely<unknown>: they describe the schema at one point in time and must
// not change when the application's types do.
export async function up(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    CREATE TABLE users (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      email text NOT NULL,
      full_name text NOT NULL,
      password_hash text,
      is_active boolean NOT NULL DEFAULT true,
      is_admin boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz,
      deleted_at timestamptz,
      password_changed_at timestamptz
    );
    CREATE UNIQUE INDEX users_email_live_key ON users (lower(email)) WHERE deleted_at IS NULL;
    CREATE INDEX users_list_idx ON users (id) WHERE deleted_at IS NULL;
    CREATE INDEX users_active_list_idx ON users (is_active, id) WHERE deleted_at IS NULL;

    CREATE TABLE refresh_tokens (
      jti uuid PRIMARY KEY,
      user_id integer NOT NULL REFERENCES users (id),
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX refresh_tokens_user_idx ON refresh_tokens (user_id);
    CREATE INDEX refresh_tokens_expires_idx ON refresh_tokens (expires_at);

    CREATE TABLE products (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      sku text NOT NULL UNIQUE,
      name text NOT NULL,
      price numeric(12, 2) NOT NULL CHECK (price > 0),
      stock integer NOT NULL CHECK (stock >= 0),
      is_active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE orders (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      user_id integer NOT NULL REFERENCES users (id),
      status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'processing', 'completed', 'failed')),
      total_amount numeric(12, 2) NOT NULL DEFAULT 0,
      shipping_address text NOT NULL,
      failure_reason text,
      source text NOT NULL DEFAULT 'api',
      external_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX orders_user_created_idx ON orders (user_id, created_at DESC, id DESC);
    CREATE INDEX orders_user_status_created_idx ON orders (user_id, status, created_at DESC, id DESC);
    CREATE UNIQUE INDEX orders_source_external_key ON orders (source, external_id) WHERE external_id IS NOT NULL;

    CREATE TABLE order_items (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      order_id integer NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
      product_id integer NOT NULL REFERENCES products (id),
      product_name text,
      quantity integer NOT NULL CHECK (quantity > 0),
      unit_price numeric(12, 2) NOT NULL DEFAULT 0
    );
    CREATE INDEX order_items_order_idx ON order_items (order_id);

    CREATE TABLE order_events (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      order_id integer NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
      user_id integer NOT NULL,
      type text NOT NULL,
      previous_status text,
      status text NOT NULL,
      total_amount numeric(12, 2) NOT NULL DEFAULT 0,
      sequence integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (order_id, sequence)
    );

    CREATE TABLE idempotency_keys (
      user_id integer NOT NULL REFERENCES users (id),
      key text NOT NULL,
      request_hash text NOT NULL,
      response_status integer NOT NULL,
      response_body jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (user_id, key)
    );
    CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

    CREATE TABLE items (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      user_id integer NOT NULL REFERENCES users (id),
      name text NOT NULL,
      description text,
      price double precision NOT NULL CHECK (price > 0),
      is_active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz,
      deleted_at timestamptz
    );
    CREATE INDEX items_user_idx ON items (user_id, id) WHERE deleted_at IS NULL;

    CREATE TABLE inbound_webhooks (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      webhook_id text NOT NULL UNIQUE,
      topic text,
      shop_domain text,
      headers jsonb NOT NULL,
      raw_body text NOT NULL,
      status text NOT NULL DEFAULT 'received' CHECK (status IN ('received', 'processed', 'failed')),
      error text,
      order_id integer REFERENCES orders (id),
      received_at timestamptz NOT NULL DEFAULT now(),
      processed_at timestamptz
    );

    CREATE TABLE webhook_subscriptions (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      user_id integer NOT NULL REFERENCES users (id),
      url text NOT NULL,
      events text[] NOT NULL,
      description text,
      secret text NOT NULL,
      is_active boolean NOT NULL DEFAULT true,
      consecutive_failures integer NOT NULL DEFAULT 0,
      disabled_reason text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz,
      deleted_at timestamptz
    );
    CREATE INDEX webhook_subscriptions_user_idx ON webhook_subscriptions (user_id) WHERE deleted_at IS NULL;

    CREATE TABLE webhook_deliveries (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      subscription_id integer NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
      event_id integer REFERENCES order_events (id) ON DELETE SET NULL,
      event_type text NOT NULL,
      message_id text NOT NULL,
      attempt integer NOT NULL,
      status_code integer,
      duration_ms integer,
      success boolean NOT NULL,
      error text,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX webhook_deliveries_subscription_idx ON webhook_deliveries (subscription_id, id DESC);
  `);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runDdl(db, `
    DROP TABLE webhook_deliveries, webhook_subscriptions, inbound_webhooks, items, idempotency_keys,
      order_events, order_items, orders, products, refresh_tokens, users;
  `);
}
