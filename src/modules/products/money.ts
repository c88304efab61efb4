import { Type } from 'typebox';
import { AppError } from '../../http/errors.ts';

/** The largest value numeric(12,2) holds. */
export const MAX_MONEY = 9999999999.99;

/** A money amount in a request; the validator reads `multipleOf` as a decimal step (http/validation.ts). */
export const MoneyInput = Type.Number({
  exclusiveMinimum: 0,
  maximum: MAX_MONEY,
  multipleOf: 0.01,
  description: 'greater than 0, at most 2 decimal places',
});

/** The exact decimal text of a money amount, or 422 when rounding it to two decimals changes the double. */
export function moneyToDecimal(value: number, field: string): string {
  const text = value.toFixed(2);
  if (Number(text) !== value) {
    throw new AppError('VALIDATION_ERROR', `Validation failed: body.${field}: must have at most 2 decimal places`, {
      errors: [{ loc: ['body', field], msg: 'must have at most 2 decimal places', type: 'decimal_places' }],
    });
  }
  return text;
}

/** numeric(12,2) as read from the database (a string) into the JSON number of the API. */
export function moneyToNumber(value: string | number): number {
  return typeof value === 'number' ? value : Number(value);
}

/** The exact sum of `price × quantity` over `lines` (prices as numeric(12,2) decimal text), as decimal text. */
export function exactTotal(lines: { price: string; quantity: number }[]): string {
  let cents = 0n;
  for (const l of lines) {
    const [whole, frac = ''] = l.price.split('.');
    cents += (BigInt(whole) * 100n + BigInt(frac.padEnd(2, '0').slice(0, 2))) * BigInt(l.quantity);
  }
  return `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
}
