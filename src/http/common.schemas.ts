import { Type, type TSchema } from 'typebox';
import { toIsoString } from '../db/timestamps.ts';

/**
 * An integer id in a path. Any integer is well-formed; one that no row can have is a 404
 * (path-ids.ts). `example` is what the docs pages fill in: the row the create example above it makes
 * on a fresh start (the first order is 1; the user POST /users makes is 2, the administrator being 1).
 */
export const IdOf = (example: number) => Type.Integer({ examples: [example] });

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

/**
 * Bounds a schema states for the documents only: the specification answers a value outside them
 * with a business-rule 400 of the service's own (a quantity outside 1 to 1000 is `INVALID_QUANTITY`),
 * not the validator's 422, so the body validator must not enforce them. The documents show them as
 * `minimum` and `maximum`.
 */
export const RULE_BOUNDS = 'x-rule-bounds';
export const ruleBounds = (minimum: number, maximum: number) => ({ [RULE_BOUNDS]: { minimum, maximum } });
