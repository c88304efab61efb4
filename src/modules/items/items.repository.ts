import { sql, type Insertable, type Updateable } from 'kysely';
import { compileOnce } from '../../db/compiled.ts';
import type { ItemRow, ItemsTable } from '../../db/schema.ts';
import type { Db } from '../../db/database.ts';
import { jsonArrayText } from '../../db/json-text.ts';
import { isoTimestampSql } from '../../db/timestamps.ts';

/** A live (not soft-deleted) item, whoever owns it. */
export async function findLiveItem(db: Db, id: number): Promise<ItemRow | undefined> {
  return db.selectFrom('items').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function insertItem(db: Db, item: Insertable<ItemsTable>): Promise<ItemRow> {
  return db.insertInto('items').values(item).returningAll().executeTakeFirstOrThrow();
}

/** Updates a live item of `userId`; undefined when there is none. */
export async function updateOwnItem(db: Db, id: number, userId: number, patch: Updateable<ItemsTable>): Promise<ItemRow | undefined> {
  return db
    .updateTable('items')
    .set(patch)
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

interface ItemPageArgs extends Record<string, unknown> {
  userId: number;
  isActive: boolean;
  limit: number;
  offset: number;
}

/**
 * One page of a user's live items as the JSON text of the API's item list, rendered by PostgreSQL:
 * the fields of `toItem`, in its order and with its timestamp text, so the API process parses no
 * rows and runs no serializer for the page.
 */
function itemPageJsonQuery(withActive: boolean) {
  return compileOnce((db, a: ItemPageArgs) => {
    let live = db.selectFrom('items').selectAll().where('user_id', '=', a.userId).where('deleted_at', 'is', null);
    if (withActive) live = live.where('is_active', '=', a.isActive);
    // the page first, then its rendering: rows that the offset skips are never rendered
    const items = live.orderBy('id', 'asc').limit(a.limit).offset(a.offset).as('items');
    const item = db
      .selectNoFrom([
        sql`items.id`.as('id'),
        sql`items.name`.as('name'),
        sql`items.description`.as('description'),
        sql`items.price`.as('price'),
        sql`items.is_active`.as('is_active'),
        sql`items.user_id`.as('user_id'),
        isoTimestampSql('items.created_at').as('created_at'),
      ])
      .as('item');
    return db
      .selectFrom(items)
      .innerJoinLateral(item, (join) => join.onTrue())
      .select(jsonArrayText('item', sql`items.id`).as('json'));
  });
}

// by whether is_active is filtered on: one compiled statement per shape
const itemPage = { all: itemPageJsonQuery(false), ofActive: itemPageJsonQuery(true) };

/** The page of `userId`'s live items, ordered by id, as the JSON array the API answers with. */
export async function listOwnItemsJson(
  db: Db,
  opts: { userId: number; limit: number; offset: number; isActive: boolean | undefined },
): Promise<string> {
  // the shape without the filter has no parameter for it: any value will do
  const rows =
    opts.isActive === undefined ? await itemPage.all(db, { ...opts, isActive: false }) : await itemPage.ofActive(db, { ...opts, isActive: opts.isActive });
  return rows[0].json;
}
