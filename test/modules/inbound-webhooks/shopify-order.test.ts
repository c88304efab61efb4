import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InboundRejection, mapShopifyCancellation, mapShopifyOrder } from '../../../src/modules/inbound-webhooks/shopify-order.ts';

const base = { id: 1, email: 'a@b.example', line_items: [{ sku: 'A', quantity: 1 }] };

async function rejection(map: (payload: unknown) => Promise<unknown>, payload: unknown): Promise<string> {
  try {
    await map(payload);
  } catch (err) {
    assert.ok(err instanceof InboundRejection, String(err));
    return err.message;
  }
  return 'accepted';
}

// Each reason as TypeBox's value checker worded it (Value.Check and Value.Errors): the compiled
// checks must refuse the same payloads and name the same first error.
describe('the checks of platform payloads (compiled once, loadPayloadChecker)', () => {
  it('refuses an order payload of the wrong shape with the first error, and accepts a good one', async () => {
    const cases: [unknown, string][] = [
      [null, '/ must be object'],
      [[], '/ must be object'],
      [{}, '/ must have required properties id, line_items'],
      [{ ...base, id: 0 }, '/id must be >= 1'],
      [{ ...base, id: 'has space' }, '/id must be integer'],
      [{ ...base, id: 1.5 }, '/id must be integer'],
      [{ ...base, line_items: [] }, '/line_items must not have fewer than 1 items'],
      [{ ...base, line_items: 'x' }, '/line_items must be array'],
      [{ ...base, line_items: [{ sku: 'A', quantity: '2' }] }, '/line_items/0/quantity must be integer'],
      [{ ...base, line_items: [{ sku: 'A', quantity: 0 }] }, '/line_items/0/quantity must be >= 1'],
      [{ ...base, email: 5 }, '/email must be string'],
      [{ ...base, customer: 'x' }, '/customer must be object'],
      [{ ...base, shipping_address: { city: 7 } }, '/shipping_address/city must be string'],
    ];
    for (const [payload, reason] of cases) {
      assert.equal(await rejection(mapShopifyOrder, payload), `invalid order payload: ${reason}`, JSON.stringify(payload));
    }
    assert.deepEqual(await mapShopifyOrder({ ...base, id: 'gid-7', customer: null, shipping_address: null }), {
      externalId: 'gid-7',
      email: 'a@b.example',
      customerName: 'a',
      shippingAddress: 'No shipping address provided',
      lines: [{ sku: 'A', quantity: 1 }],
    });
  });

  it('refuses a cancellation payload of the wrong shape with the first error, and accepts a good one', async () => {
    const cases: [unknown, string][] = [
      [null, '/ must be object'],
      [{}, '/ must have required properties id'],
      [{ id: 0 }, '/id must be >= 1'],
      [{ id: 3, cancel_reason: 4 }, '/cancel_reason must be string'],
    ];
    for (const [payload, reason] of cases) {
      assert.equal(await rejection(mapShopifyCancellation, payload), `invalid cancellation payload: ${reason}`, JSON.stringify(payload));
    }
    assert.deepEqual(await mapShopifyCancellation({ id: 'x', cancel_reason: 'fraud' }), { externalId: 'x', reason: 'fraud' });
  });
});
