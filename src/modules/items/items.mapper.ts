import type { ItemRow } from './items.tables.ts';
import { iso } from '../../http/common.schemas.ts';

/** Needs only the columns a list selects (items.repository.ts). */
export function toItem(i: Pick<ItemRow, 'id' | 'name' | 'description' | 'price' | 'is_active' | 'user_id' | 'created_at'>) {
  return {
    id: i.id,
    name: i.name,
    description: i.description,
    price: i.price,
    is_active: i.is_active,
    user_id: i.user_id,
    created_at: iso(i.created_at),
  };
}
