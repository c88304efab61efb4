import type { Insertable, Updateable } from 'kysely';
import type { ItemRow, ItemsTable } from './items.tables.ts';
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

/** The columns an item's response shows, all a list reads: each timestamp left out is a parse saved per row. */
const SHOWN = ['id', 'user_id', 'name', 'description', 'price', 'is_active', 'created_at'] as const;

/** A page of `userId`'s live items (or those active or not, with `isActive`), ordered by id. */
export async function listOwnItems(db: Db, opts: { userId: number; limit: number; offset: number; isActive: boolean | undefined }) {
  let live = db.selectFrom('items').select(SHOWN).where('user_id', '=', opts.userId).where('deleted_at', 'is', null);
  if (opts.isActive !== undefined) live = live.where('is_active', '=', opts.isActive);
  return live.orderBy('id', 'asc').limit(opts.limit).offset(opts.offset).execute();
}
