import type { Db } from '../../db/database.ts';
import type { InboundWebhookRow } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import { cappedPageOf, type CappedPageResult } from '../../http/common.schemas.ts';
import { MAX_ID } from '../../http/path-ids.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import {
  findInboundWebhook,
  listInboundWebhooks,
  lockInboundWebhookRow,
  resetInboundWebhook,
  type InboundWebhookSummaryRow,
} from './inbound-webhooks.repository.ts';
import type { InboundListQuery } from './inbound-webhooks.schemas.ts';

const notFound = () => new AppError('NOT_FOUND', 'Inbound webhook not found');

interface Reprocessing {
  message: string;
  orderId: number | null;
}

/** The administrators' view of the stored platform webhooks, and their reprocessing. */
export class InboundWebhooksAdminService {
  private readonly deps: { db: Db; queue: JobQueue };

  constructor(deps: InboundWebhooksAdminService['deps']) {
    this.deps = deps;
  }

  async list(q: InboundListQuery): Promise<CappedPageResult<InboundWebhookSummaryRow>> {
    const { rows, count } = await listInboundWebhooks(this.deps.db, { status: q.status, topic: q.topic }, { limit: q.page_size, offset: (q.page - 1) * q.page_size });
    return cappedPageOf(rows, count, q.page, q.page_size);
  }

  async get(id: number): Promise<InboundWebhookRow> {
    // an id no row can have is the same 404 as a missing row, and never reaches the database
    const row = id >= 1 && id <= MAX_ID ? await findInboundWebhook(this.deps.db, id) : undefined;
    if (!row) throw notFound();
    return row;
  }

  /**
   * Queues the stored webhook for processing again (back to `received`, keeping its order link).
   * Processing locks the row and finds the order a platform id already has, so however often this
   * is called, one order exists and its stock is reserved once.
   */
  async reprocess(id: number): Promise<Reprocessing> {
    if (!(id >= 1 && id <= MAX_ID)) throw notFound();
    return this.deps.db.transaction().execute(async (trx) => {
      const row = await lockInboundWebhookRow(trx, id);
      if (!row) throw notFound();
      if (row.raw_body === null) {
        throw new AppError('INVALID_STATE', 'The payload of this webhook was removed by the retention purge; it cannot be processed again');
      }
      if (row.status !== 'received') await resetInboundWebhook(trx, id);
      await this.deps.queue.send(trx, 'webhook-inbound-process', { inboundWebhookId: id });
      const message =
        row.status === 'processed'
          ? 'Webhook queued for processing again; the order it was linked to is linked again, never created twice'
          : row.status === 'failed'
            ? 'Webhook queued for processing again'
            : 'Webhook queued for processing (it had not been processed yet)';
      return { message, orderId: row.order_id };
    });
  }
}
