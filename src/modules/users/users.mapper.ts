import type { UserRow } from '../../db/schema.ts';
import { iso, isoOrNull } from '../../http/common.schemas.ts';

export function toUserPublic(u: UserRow) {
  return { id: u.id, email: u.email, full_name: u.full_name, is_active: u.is_active, is_admin: u.is_admin, created_at: iso(u.created_at) };
}

export function toUserDetail(u: UserRow) {
  return { ...toUserPublic(u), updated_at: isoOrNull(u.updated_at) };
}

export function toUserListItem(u: UserRow) {
  return { id: u.id, email: u.email, full_name: u.full_name, is_active: u.is_active, created_at: iso(u.created_at) };
}
