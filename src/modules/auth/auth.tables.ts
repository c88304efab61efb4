import type { Generated } from 'kysely';
import type { CreatedAt, Timestamp, NullableTimestamp } from '../../db/schema.ts';

export interface PasswordResetTokensTable {
  id: Generated<number>;
  user_id: number;
  /** SHA-256 of the token, hex; the token itself is only ever in the e-mail */
  token_hash: string;
  /** the address the token was sent to: a token is void once the account's e-mail changes */
  email: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  /** revoked when the user's sessions end (password changed, deactivated, deleted) */
  revoked_at: NullableTimestamp;
  created_at: CreatedAt;
}

/** A client that signed in to the account (decision 106): its sign-ins are throttled per device. */
export interface DeviceTokensTable {
  id: Generated<number>;
  user_id: number;
  /** SHA-256 of the token, hex */
  token_hash: string;
  expires_at: Timestamp;
  created_at: CreatedAt;
}

export interface RefreshTokensTable {
  jti: string;
  user_id: number;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  created_at: CreatedAt;
}
