/**
 * Wake-ups of `stately` queues (a payload-less job that has a worker run the queue): the send is its
 * own statement, after the caller's commit, since inside the transaction the policy's unique index
 * would make concurrent transactions wait for each other. pg-boss drops the send while a job waits
 * already. Sends of one queue do not overlap: one asked for while another is on its way follows it,
 * so a burst of commits costs two sends, not one each. Not awaited; a send lost to a crash or an
 * outage is made up by the queue's schedule.
 */
export class Wakes {
  /** Per queue woken: the send on its way, and whether another was asked for meanwhile. */
  private readonly waking = new Map<string, { sent: Promise<void>; again: boolean }>();
  private readonly send: (name: string) => Promise<void>;

  /** `send` sends the wake-up job and reports its own failure (it never rejects). */
  constructor(send: (name: string) => Promise<void>) {
    this.send = send;
  }

  wake(name: string): void {
    const current = this.waking.get(name);
    if (current) {
      current.again = true;
      return;
    }
    const entry = { sent: this.send(name), again: false };
    this.waking.set(name, entry);
    void entry.sent.finally(() => {
      this.waking.delete(name);
      if (entry.again) this.wake(name);
    });
  }

  /** Waits until no send is on its way (shutdown). */
  async settled(): Promise<void> {
    while (this.waking.size > 0) await Promise.all([...this.waking.values()].map((w) => w.sent));
  }
}
