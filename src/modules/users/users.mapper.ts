import type { UserRow } from '../../db/schema.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { iso, isoOrNull } from '../../http/common.schemas.ts';

/** v2 reads show whether the address is verified; v1 keeps the specification's fields. */
const v2Fields = (version: ApiVersion, u: UserRow) => (version === 'v2' ? { email_verified: u.email_verified } : {});

export function toUserPublic(version: ApiVersion, u: UserRow) {
  return { id: u.id, email: u.email, full_name: u.full_name, is_active: u.is_active, is_admin: u.is_admin, ...v2Fields(version, u), created_at: iso(u.created_at) };
}

export function toUserDetail(version: ApiVersion, u: UserRow) {
  return { ...toUserPublic(version, u), updated_at: isoOrNull(u.updated_at) };
}

export function toUserListItem(version: ApiVersion, u: UserRow) {
  return { id: u.id, email: u.email, full_name: u.full_name, is_active: u.is_active, ...v2Fields(version, u), created_at: iso(u.created_at) };
}
