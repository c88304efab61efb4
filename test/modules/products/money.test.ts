import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { exactTotal } from '../../../src/modules/products/money.ts';

describe('exactTotal', () => {
  it('sums price × quantity in exact decimals', () => {
    assert.equal(exactTotal([]), '0.00');
    assert.equal(exactTotal([{ price: '0.10', quantity: 3 }]), '0.30');
    assert.equal(exactTotal([{ price: '19.99', quantity: 1000 }, { price: '0.01', quantity: 1 }]), '19990.01');
    assert.equal(exactTotal([{ price: '9999999999.99', quantity: 1000 }]), '9999999999990.00');
  });

  it('agrees with integer cents for any lines', () => {
    const line = fc.record({ cents: fc.integer({ min: 1, max: 999_999_999_999 }), quantity: fc.integer({ min: 1, max: 1000 }) });
    fc.assert(
      fc.property(fc.array(line, { maxLength: 100 }), (lines) => {
        const priced = lines.map((l) => ({ price: `${Math.floor(l.cents / 100)}.${String(l.cents % 100).padStart(2, '0')}`, quantity: l.quantity }));
        const cents = lines.reduce((sum, l) => sum + BigInt(l.cents) * BigInt(l.quantity), 0n);
        assert.equal(exactTotal(priced), `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`);
      }),
    );
  });
});
