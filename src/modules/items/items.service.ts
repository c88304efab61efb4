import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';
import type { ItemRow } from './items.tables.ts';
import { AppError } from '../../http/errors.ts';
import { findLiveItem, insertItem, listOwnItems, updateOwnItem } from './items.repository.ts';
import type { ItemCreateBody, ItemListQuery, ItemUpdateBody } from './items.schemas.ts';

const itemNotFound = () => new AppError('NOT_FOUND', 'Item not found');
const notOwner = () => new AppError('FORBIDDEN', 'Not enough permissions to access this item');

export async function createItem(db: Db, owner: UserRow, input: ItemCreateBody): Promise<ItemRow> {
  const { name, description = null, price, is_active = true } = input;
  return insertItem(db, { user_id: owner.id, name, description, price, is_active });
}

/** The owner's page of live items. */
export async function listItems(db: Db, owner: UserRow, q: ItemListQuery) {
  return listOwnItems(db, { userId: owner.id, limit: q.limit, offset: q.skip, isActive: q.is_active });
}

/** 404 for a missing or deleted item, 403 for someone else's. */
export async function getItem(db: Db, actor: UserRow, id: number): Promise<ItemRow> {
  const item = await findLiveItem(db, id);
  if (!item) throw itemNotFound();
  if (item.user_id !== actor.id) throw notOwner();
  return item;
}

/** PATCH semantics: only the given fields change (`description: null` clears it). */
export async function updateItem(db: Db, actor: UserRow, id: number, input: ItemUpdateBody): Promise<ItemRow> {
  await getItem(db, actor, id);
  // an absent field is undefined, which Kysely leaves out of the SET
  const { name, description, price, is_active } = input;
  const updated = await updateOwnItem(db, id, actor.id, { name, description, price, is_active, updated_at: new Date() });
  if (!updated) throw itemNotFound(); // deleted between the check and the update
  return updated;
}

/** Soft delete: the row stays with `deleted_at` set and is 404 from then on. */
export async function removeItem(db: Db, actor: UserRow, id: number): Promise<void> {
  await getItem(db, actor, id);
  const now = new Date();
  const deleted = await updateOwnItem(db, id, actor.id, { deleted_at: now, updated_at: now });
  if (!deleted) throw itemNotFound();
}
