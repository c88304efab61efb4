import type { Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ItemRow, ItemsTable, UserRow } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import { findLiveItem, insertItem, listOwnItems, updateOwnItem } from './items.repository.ts';
import type { ItemCreateBody, ItemListQuery, ItemUpdateBody } from './items.schemas.ts';

const itemNotFound = () => new AppError('NOT_FOUND', 'Item not found');
const notOwner = () => new AppError('FORBIDDEN', 'Not enough permissions to access this item');

/** The owner-scoped item collection: only the owner may read, change or delete an item. */
export class ItemsService {
  private readonly db: Db;

  constructor(deps: { db: Db }) {
    this.db = deps.db;
  }

  async create(owner: UserRow, input: ItemCreateBody): Promise<ItemRow> {
    return insertItem(this.db, {
      user_id: owner.id,
      name: input.name,
      description: input.description ?? null,
      price: input.price,
      is_active: input.is_active ?? true,
    });
  }

  /** The owner's page of live items. */
  async list(owner: UserRow, q: ItemListQuery): Promise<ItemRow[]> {
    return listOwnItems(this.db, { userId: owner.id, limit: q.limit, offset: q.skip, isActive: q.is_active });
  }

  /** 404 for a missing or deleted item, 403 for someone else's. */
  async get(actor: UserRow, id: number): Promise<ItemRow> {
    const item = await findLiveItem(this.db, id);
    if (!item) throw itemNotFound();
    if (item.user_id !== actor.id) throw notOwner();
    return item;
  }

  /** PATCH semantics: only the given fields change (`description: null` clears it). */
  async update(actor: UserRow, id: number, input: ItemUpdateBody): Promise<ItemRow> {
    await this.get(actor, id);
    const patch: Updateable<ItemsTable> = { updated_at: new Date() };
    if (input.name !== undefined) patch.name = input.name;
    if (input.description !== undefined) patch.description = input.description;
    if (input.price !== undefined) patch.price = input.price;
    if (input.is_active !== undefined) patch.is_active = input.is_active;
    const updated = await updateOwnItem(this.db, id, actor.id, patch);
    if (!updated) throw itemNotFound(); // deleted between the check and the update
    return updated;
  }

  /** Soft delete: the row stays with `deleted_at` set and is 404 from then on. */
  async remove(actor: UserRow, id: number): Promise<void> {
    await this.get(actor, id);
    const now = new Date();
    const deleted = await updateOwnItem(this.db, id, actor.id, { deleted_at: now, updated_at: now });
    if (!deleted) throw itemNotFound();
  }
}
