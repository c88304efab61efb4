import { Type, type Static } from 'typebox';
import type { UserRow } from '../../db/schema.ts';
import type { ApiVersion } from '../../http/api-version.ts';
import { CappedPage, IdOf, iso, isoOrNull, NullableTimestamp, Page, PageQuery, Timestamp } from '../../http/common.schemas.ts';

const Email = Type.String({ format: 'email', maxLength: 254, description: 'valid e-mail address; unique' });
const FullName = Type.String({ minLength: 1, maxLength: 100 });
export const Password = Type.String({
  minLength: 8,
  maxLength: 72,
  description: '8 to 72 bytes (bcrypt hashes only the first 72 bytes, so longer passwords are refused)',
});

const UserFields = {
  id: Type.Integer(),
  email: Type.String(),
  full_name: Type.String(),
  is_active: Type.Boolean(),
  is_admin: Type.Boolean(),
};

const V2_USER_FIELDS = {
  email_verified: Type.Boolean({
    description:
      'whether the holder proved the address (created or changed by an administrator, or a confirmation link or a password reset went through it); only a verified address links platform orders and receives password recovery e-mails',
  }),
};

const UpdateFields = {
  full_name: Type.Optional(FullName),
  email: Type.Optional(Email),
  is_active: Type.Optional(Type.Boolean({ description: 'administrators only, not on their own account' })),
  is_admin: Type.Optional(Type.Boolean({ description: 'administrators only, not on their own account' })),
};
const UPDATE_BODY_V1 = Type.Object(UpdateFields, { additionalProperties: false, examples: [{ full_name: 'Jane Q. Doe' }] });
const UPDATE_BODY_V2 = Type.Object(
  {
    ...UpdateFields,
    current_password: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'your current password: required to change your own `email`' }),
    ),
  },
  // the one example that succeeds as it stands (the docs page fills the body in from it)
  { additionalProperties: false, examples: [{ full_name: 'Jane Q. Doe' }] },
);

/** The user schemas of one API version: v2 reads add `email_verified`, v2's PATCH takes `current_password`. */
function buildUserSchemas(version: ApiVersion) {
  const v2 = version === 'v2' ? V2_USER_FIELDS : {};
  const UserPublic = Type.Object({ ...UserFields, ...v2, created_at: Timestamp });
  const UserDetail = Type.Object({ ...UserFields, ...v2, created_at: Timestamp, updated_at: NullableTimestamp });
  const UserListItem = Type.Object({ id: UserFields.id, email: UserFields.email, full_name: UserFields.full_name, is_active: UserFields.is_active, ...v2, created_at: Timestamp });
  // typed as v2's body in both versions: v1's lacks `current_password`, which its validation refuses
  const UserUpdateBody = (version === 'v2' ? UPDATE_BODY_V2 : UPDATE_BODY_V1) as typeof UPDATE_BODY_V2;
  return {
    UserPublic,
    UserDetail,
    UserPage: Page(UserListItem, 'A page of users, ordered by id'),
    AdminUserPage: CappedPage(UserDetail, 'A page of users with their roles, ordered by id'),
    UserUpdateBody,
  };
}

export const USER_SCHEMAS = { v1: buildUserSchemas('v1'), v2: buildUserSchemas('v2') };

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

export const UserCreateBody = Type.Object(
  { email: Email, full_name: FullName, password: Password },
  { additionalProperties: false, examples: [{ email: 'jane.doe@example.com', full_name: 'Jane Doe', password: 'correct-horse-battery' }] },
);
export type UserCreateBody = Static<typeof UserCreateBody>;

export type UserUpdateBody = Static<typeof UPDATE_BODY_V2>;

export const UserListQuery = Type.Object({
  ...PageQuery,
  is_active: Type.Optional(Type.Boolean()),
});

export const AdminUserListQuery = Type.Object({
  ...PageQuery,
  email: Type.Optional(
    Type.String({ minLength: 1, maxLength: 254, description: 'users whose e-mail contains this text, in any case (`acme.com`, `jane`)' }),
  ),
  is_active: Type.Optional(Type.Boolean()),
});
export type AdminUserListQuery = Static<typeof AdminUserListQuery>;

export const UserIdParams = Type.Object({ user_id: IdOf(2) });
