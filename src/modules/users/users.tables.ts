import type { Generated } from 'kysely';
import type { CreatedAt, Timestamp, NullableTimestamp } from '../../db/schema.ts';

export interface EmailTokensTable {
  id: Generated<number>;
  user_id: number;
  /** `verify`: confirms a new address (sent to it); `revert`: undoes a change (sent to the previous address) */
  purpose: 'verify' | 'revert';
  /** SHA-256 of the token, hex */
  token_hash: string;
  /** `verify`: the address to confirm; `revert`: the address to restore */
  email: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
  /** the change the token belongs to; null for confirmation tokens of earlier releases */
  change_id: number | null;
}

/** Every change of an account's e-mail, in order; a revert undoes its change and every later one. */
export interface EmailChangesTable {
  id: Generated<number>;
  user_id: number;
  previous_email: string;
  /** null for the changes of earlier releases (only their revert token was known) */
  new_email: string | null;
  changed_at: CreatedAt;
  undone_at: NullableTimestamp;
}
