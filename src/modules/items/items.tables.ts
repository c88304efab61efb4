import type { Generated, Selectable } from 'kysely';
import type { CreatedAt, NullableTimestamp } from '../../db/schema.ts';

export interface ItemsTable {
  id: Generated<number>;
  user_id: number;
  name: string;
  description: string | null;
  price: number;
  is_active: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: NullableTimestamp;
  deleted_at: NullableTimestamp;
}

export type ItemRow = Selectable<ItemsTable>;
