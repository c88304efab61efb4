import type { ItemRow } from './items.tables.ts';
import { iso } from '../../http/common.schemas.ts';

export function toItem(i: ItemRow) {
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
