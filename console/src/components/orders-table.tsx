import { money } from '../format.ts';
import { href } from '../router.ts';
import { Badge } from './notice.tsx';
import { Head } from './table.tsx';
import { When } from './when.tsx';

/** The order statuses API v2 knows, in a filter's order. */
export const ORDER_STATUSES = ['pending', 'processing', 'completed', 'failed', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const statusOf = (value: string | null): OrderStatus | undefined => ORDER_STATUSES.find((s) => s === value);

interface Row {
  id: number;
  status: string;
  total_amount: number;
  created_at: string;
  updated_at: string;
  /** staff lists only */
  user_id?: number;
  customer?: { id: number; email: string; name: string };
  source?: string;
  external_id?: string | null;
}

/** A page of orders, each linked to its order page; staff see whose and from where. Named by the page's heading. */
export function OrdersTable({ rows, staff }: { rows: Row[]; staff: boolean }) {
  return (
    <table aria-labelledby="page-title">
      <Head cols={['Order', 'Status', ['Total', 'num'], ...(staff ? ['Customer', 'Source'] : []), 'Created', 'Updated']} />
      <tbody>
        {rows.map((o) => (
          <tr key={o.id}>
            <td>
              <a href={href(`/orders/${o.id}`)}>Order {o.id}</a>
            </td>
            <td>
              <Badge value={o.status} />
            </td>
            <td class="num">{money(o.total_amount)}</td>
            {staff && (
              <td>
                {o.customer ? (
                  <>
                    {o.customer.name}
                    <br />
                    <span class="muted">{o.customer.email}</span>
                  </>
                ) : (
                  `user ${o.user_id}`
                )}
              </td>
            )}
            {staff && <td>{o.source === 'platform' ? `platform ${o.external_id ?? ''}` : 'API'}</td>}
            <td>
              <When at={o.created_at} />
            </td>
            <td>
              <When at={o.updated_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
