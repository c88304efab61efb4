import { Type, type TSchema } from 'typebox';
import { toIsoString } from '../db/timestamps.ts';

/** Integer ids in paths. Any integer is well-formed; one that no row can have is a 404 (path-ids.ts). */
export const Id = Type.Integer();

export const Timestamp = Type.String({ format: 'date-time' });
export const NullableTimestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

export const PageQuery = {
  page: Type.Integer({ minimum: 1, maximum: 1000000, default: 1 }),
  page_size: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
};

export function Page<T extends TSchema>(item: T, description: string) {
  return Type.Object(
    {
      items: Type.Array(item),
      total: Type.Integer(),
      page: Type.Integer(),
      page_size: Type.Integer(),
      has_next: Type.Boolean(),
    },
    { description },
  );
}

export interface PageResult<T> {
  items: T[];
  total: number;
  page: number;
  page_size: number;
  has_next: boolean;
}

export function pageOf<T>(items: T[], total: number, page: number, pageSize: number): PageResult<T> {
  return { items, total, page, page_size: pageSize, has_next: page * pageSize < total };
}

/** The JSON text of `pageOf`, around items that are JSON text already (rendered by PostgreSQL). */
export function pageJsonText(itemsJson: string, total: number, page: number, pageSize: number): string {
  const { items: _, ...rest } = pageOf([], total, page, pageSize);
  // `items` comes first, as in pageOf's text; the rest is pageOf's own, after its opening brace
  return `{"items":${itemsJson},${JSON.stringify(rest).slice(1)}`;
}

export function iso(d: Date | string): string {
  return toIsoString(d instanceof Date ? d : new Date(d));
}

export function isoOrNull(d: Date | string | null | undefined): string | null {
  return d === null || d === undefined ? null : iso(d);
}

/** Strings that must hold at least one visible character. */
export const NonBlank = (opts: { maxLength: number; description?: string }) =>
  Type.String({ minLength: 1, pattern: '\\S', ...opts });
