import type { Insertable, Updateable } from 'kysely';
import { compileOnce } from '../../db/compiled.ts';
import type { ItemRow, ItemsTable } from '../../db/schema.ts';
import type { Db } from '../../db/database.ts';

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

function itemPageQuery(withActive: boolean) {
  return compileOnce((db, a: ItemPageArgs) => {
    let q = db.selectFrom('items').selectAll().where('user_id', '=', a.userId).where('deleted_at', 'is', null);
    if (withActive) q = q.where('is_active', '=', a.isActive);
    return q.orderBy('id', 'asc').limit(a.limit).offset(a.offset);
  });
}

// by whether is_active is filtered on: one compiled statement per shape
const itemPage = { all: itemPageQuery(false), ofActive: itemPageQuery(true) };

export async function listOwnItems(
  db: Db,
  opts: { userId: number; limit: number; offset: number; isActive: boolean | undefined },
): Promise<ItemRow[]> {
  // the shape without the filter has no parameter for it: any value will do
  return opts.isActive === undefined ? itemPage.all(db, { ...opts, isActive: false }) : itemPage.ofActive(db, { ...opts, isActive: opts.isActive });
}
