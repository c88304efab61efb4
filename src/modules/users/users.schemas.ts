import { Type, type Static } from 'typebox';
import { IdOf, NullableTimestamp, Page, PageQuery, Timestamp } from '../../http/common.schemas.ts';

const Email = Type.String({ format: 'email', maxLength: 254, description: 'valid e-mail address; unique' });
const FullName = Type.String({ minLength: 1, maxLength: 100 });
export const Password = Type.String({
  minLength: 8,
  maxLength: 72,
  description: '8 to 72 bytes (bcrypt hashes only the first 72 bytes, so longer passwords are refused)',
});

export const UserPublic = Type.Object({
  id: Type.Integer(),
  email: Type.String(),
  full_name: Type.String(),
  is_active: Type.Boolean(),
  is_admin: Type.Boolean(),
  created_at: Timestamp,
});

export const UserDetail = Type.Object({
  id: Type.Integer(),
  email: Type.String(),
  full_name: Type.String(),
  is_active: Type.Boolean(),
  is_admin: Type.Boolean(),
  created_at: Timestamp,
  updated_at: NullableTimestamp,
});

export const UserListItem = Type.Object({
  id: Type.Integer(),
  email: Type.String(),
  full_name: Type.String(),
  is_active: Type.Boolean(),
  created_at: Timestamp,
});

export const UserPage = Page(UserListItem, 'A page of users, ordered by id');

export const UserCreateBody = Type.Object(
  { email: Email, full_name: FullName, password: Password },
  { additionalProperties: false, examples: [{ email: 'jane.doe@example.com', full_name: 'Jane Doe', password: 'correct-horse-battery' }] },
);
export type UserCreateBody = Static<typeof UserCreateBody>;

export const UserUpdateBody = Type.Object(
  {
    full_name: Type.Optional(FullName),
    email: Type.Optional(Email),
    is_active: Type.Optional(Type.Boolean({ description: 'administrators only, not on their own account' })),
    is_admin: Type.Optional(Type.Boolean({ description: 'administrators only, not on their own account' })),
  },
  { additionalProperties: false, examples: [{ full_name: 'Jane Q. Doe' }] },
);
export type UserUpdateBody = Static<typeof UserUpdateBody>;

export const UserListQuery = Type.Object({
  ...PageQuery,
  is_active: Type.Optional(Type.Boolean({ examples: [true] })),
});
export type UserListQuery = Static<typeof UserListQuery>;

export const UserIdParams = Type.Object({ user_id: IdOf(2) });
export type UserIdParams = Static<typeof UserIdParams>;
