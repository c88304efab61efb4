import { Type, type Static } from 'typebox';
import { PageQuery } from '../../http/common.schemas.ts';

export const AdminUserListQuery = Type.Object({
  ...PageQuery,
  email: Type.Optional(
    Type.String({ minLength: 1, maxLength: 254, description: 'users whose e-mail contains this text, in any case (`acme.com`, `jane`)' }),
  ),
  is_active: Type.Optional(Type.Boolean()),
});
export type AdminUserListQuery = Static<typeof AdminUserListQuery>;
