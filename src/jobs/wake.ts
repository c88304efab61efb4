/**
 * Wake-ups of `stately` queues, sent after the caller's commit (inside it the policy's unique index makes concurrent transactions
 * wait for each other); those asked for while one is on its way or within `spacingMs` go once after it. The schedule makes up a lost one.
 */
export class Wakes {
  /** Per queue: the send on its way with the spacing after it, and whether another was asked for meanwhile. */
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
