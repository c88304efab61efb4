/**
 * Wake-ups of `stately` queues (a payload-less job that has a worker run the queue): the send is its
 * own statement, after the caller's commit, since inside the transaction the policy's unique index
 * would make concurrent transactions wait for each other. pg-boss drops the send while a job waits
 * already. A quiet queue's wake is sent at once; one asked for while a send is on its way, or within
 * `spacingMs` of the last one's start, is sent once after that, for every commit meanwhile: under
 * load a process sends a few wakes a second instead of one per commit (each a statement pg-boss
 * parses anew), and a run starts at most `spacingMs` later. Not awaited; a send lost to a crash or
 * an outage is made up by the queue's schedule.
 */
export class Wakes {
  /** Per queue woken: the send on its way and the spacing after it, and whether another was asked for meanwhile. */
  private readonly waking = new Map<string, { done: Promise<void>; again: boolean }>();
  private readonly send: (name: string) => Promise<void>;
  private readonly spacingMs: number;

  /** `send` sends the wake-up job and reports its own failure (it never rejects). */
  constructor(send: (name: string) => Promise<void>, spacingMs = 50) {
    this.send = send;
    this.spacingMs = spacingMs;
  }

  wake(name: string): void {
    const current = this.waking.get(name);
    if (current) {
      current.again = true;
      return;
    }
    const spaced = new Promise<void>((resolve) => setTimeout(resolve, this.spacingMs));
    const entry = { done: Promise.all([this.send(name), spaced]).then(() => undefined), again: false };
    this.waking.set(name, entry);
    void entry.done.then(() => {
      this.waking.delete(name);
      if (entry.again) this.wake(name);
    });
  }

  /** Waits until no send is on its way nor asked for (shutdown). */
  async settled(): Promise<void> {
    while (this.waking.size > 0) await Promise.all([...this.waking.values()].map((w) => w.done));
  }
}
