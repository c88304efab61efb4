import { useState } from 'preact/hooks';
import { messageOf, ok } from '../api.ts';
import { ErrorNotice, Notice } from '../components/notice.tsx';
import { Page } from '../components/page.tsx';
import { Pager } from '../components/pager.tsx';
import { money } from '../format.ts';
import { href, pageOf, useLocation } from '../router.ts';
import { useSession } from '../session.ts';
import type { Product } from '../types.ts';
import { useData } from '../use-data.ts';
import { Head } from '../components/table.tsx';

const PAGE_SIZE = 20;

/** Staff: the catalogue with its stock; a product's price and stock are edited in its row. */
export function ProductsPage() {
  const { api } = useSession();
  const url = useLocation();
  const page = pageOf(url);
  const products = useData(() => ok(api.GET('/api/v2/products', { params: { query: { page, page_size: PAGE_SIZE } } })), [url.search]);
  const [editing, setEditing] = useState<number>();
  const [done, setDone] = useState<string>();

  return (
    <Page title="Products">
      <p class="actions">
        <a href={href('/products/new')}>New product</a>
      </p>
      <ErrorNotice message={products.error} />
      <Notice>{done}</Notice>
      {products.data && (
        <>
          <table aria-labelledby="page-title">
            <Head cols={['SKU', 'Name', ['Price', 'num'], ['Stock', 'num'], 'Active', 'Edit']} />
            <tbody>
              {products.data.items.map((p) =>
                editing === p.id ? (
                  <EditRow
                    key={p.id}
                    product={p}
                    onDone={async (message) => {
                      setEditing(undefined);
                      if (message) setDone(message);
                      await products.reload();
                    }}
                  />
                ) : (
                  <tr key={p.id}>
                    <td>{p.sku}</td>
                    <td>{p.name}</td>
                    <td class="num">{money(p.price)}</td>
                    <td class="num">{p.stock}</td>
                    <td>{p.is_active ? 'yes' : 'no'}</td>
                    <td>
                      <button type="button" aria-label={`Edit ${p.name}`} onClick={() => setEditing(p.id)}>
                        Edit
                      </button>
                    </td>
                  </tr>
                ),
              )}
            </tbody>
          </table>
          {products.data.items.length === 0 && <p>The catalogue is empty.</p>}
          <Pager info={products.data} noun="product" hrefOf={(p) => href('/products', { page: p })} />
        </>
      )}
    </Page>
  );
}

/** A product's row as a form: price and stock, saved with PATCH /products/{id}. */
function EditRow({ product, onDone }: { product: Product; onDone: (message?: string) => Promise<void> }) {
  const { api } = useSession();
  const [price, setPrice] = useState(product.price.toFixed(2));
  const [stock, setStock] = useState(String(product.stock));
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const form = `edit-product-${product.id}`;

  const save = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body = { price: Number(price), stock: Number(stock) };
      await ok(api.PATCH('/api/v2/products/{product_id}', { params: { path: { product_id: product.id } }, body }));
      await onDone(`${product.name}: price ${money(body.price)}, stock ${body.stock}.`);
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  };

  return (
    <tr class="editing">
      <td>{product.sku}</td>
      <td>{product.name}</td>
      <td>
        <label class="visually-hidden" for={`${form}-price`}>
          Price of {product.name}
        </label>
        <input id={`${form}-price`} form={form} type="number" min="0.01" step="0.01" required value={price} onInput={(e) => setPrice(e.currentTarget.value)} />
      </td>
      <td>
        <label class="visually-hidden" for={`${form}-stock`}>
          Stock of {product.name}
        </label>
        <input id={`${form}-stock`} form={form} type="number" min="0" step="1" required value={stock} onInput={(e) => setStock(e.currentTarget.value)} />
      </td>
      <td>{product.is_active ? 'yes' : 'no'}</td>
      <td>
        <form id={form} onSubmit={(e) => void save(e)} class="row-actions">
          <button type="submit" class="primary" disabled={busy}>
            Save
          </button>
          <button type="button" onClick={() => void onDone()}>
            Cancel
          </button>
        </form>
        <ErrorNotice message={error} />
      </td>
    </tr>
  );
}
