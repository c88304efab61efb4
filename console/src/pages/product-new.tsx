import { useState } from 'preact/hooks';
import { messageOf, ok } from '../api.ts';
import { ErrorNotice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import { showToast } from '../components/toast.tsx';
import { CURRENCY, money } from '../format.ts';
import { href, navigate } from '../router.ts';
import { useSession } from '../session.ts';

/** Staff: a new product for the catalogue (POST /products); then back to the catalogue. */
export function NewProductPage() {
  const { api } = useSession();
  const [fields, setFields] = useState({ sku: '', name: '', price: '', stock: '0', active: true });
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const set = (name: keyof typeof fields) => (e: { currentTarget: HTMLInputElement }) =>
    setFields({ ...fields, [name]: name === 'active' ? e.currentTarget.checked : e.currentTarget.value });

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body = { sku: fields.sku.trim(), name: fields.name.trim(), price: Number(fields.price), stock: Number(fields.stock), is_active: fields.active };
      const created = await ok(api.POST('/api/v2/products', { body }));
      showToast(`${created.name} (${created.sku}) is in the catalogue at ${money(created.price)}, ${created.stock} in stock.`);
      navigate(href('/products'));
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  };

  return (
    <Page title="New product">
      <form class="card" onSubmit={(e) => void submit(e)}>
        <label for="product-sku">SKU</label>
        <p class="hint" id="product-sku-hint">
          Unique; letters, digits, dot, underscore and hyphen.
        </p>
        <input
          id="product-sku"
          type="text"
          required
          maxLength={64}
          pattern="[A-Za-z0-9][A-Za-z0-9._\-]*"
          aria-describedby="product-sku-hint"
          value={fields.sku}
          onInput={set('sku')}
        />
        <label for="product-name">Name</label>
        <input id="product-name" type="text" required maxLength={200} value={fields.name} onInput={set('name')} />
        <label for="product-price">Price ({CURRENCY})</label>
        <input id="product-price" type="number" required min="0.01" step="0.01" value={fields.price} onInput={set('price')} />
        <label for="product-stock">Stock</label>
        <input id="product-stock" type="number" required min="0" step="1" value={fields.stock} onInput={set('stock')} />
        <div class="check">
          <input id="product-active" type="checkbox" checked={fields.active} onChange={set('active')} />
          <label for="product-active">Active (customers can order it)</label>
        </div>
        <ErrorNotice message={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Create product
          </button>
          <a href={href('/products')}>Back to products</a>
        </div>
      </form>
    </Page>
  );
}
