import type { FastifyBaseLogger } from 'fastify';

const PROBE_INTERVAL_MS = 1000;

function messageOf(err: unknown): string {
  return err instanceof Error || (typeof err === 'object' && err !== null && 'message' in err) ? String((err as { message: unknown }).message) : String(err);
}

/** One line when a dependency stops answering and one when it is back (failures between at debug level); `check` probes every second meanwhile. */
export class OutageLog {
  private readonly log: FastifyBaseLogger;
  private readonly dependency: string;
  private readonly check: () => Promise<unknown>;
  private since: number | undefined;
  private probe: NodeJS.Timeout | undefined;

  constructor(log: FastifyBaseLogger, dependency: string, check: () => Promise<unknown>) {
    this.log = log;
    this.dependency = dependency;
    this.check = check;
  }

  /** `err` (from `source`) says the dependency cannot be reached. */
  failed(err: unknown, source: string): void {
    if (this.since === undefined) {
      this.since = Date.now();
      this.log.error(
        { dependency: this.dependency, source, error: messageOf(err) },
        `${this.dependency} unavailable (${source}: ${messageOf(err)}); its errors are logged at debug level until it is back`,
      );
      this.probe = setInterval(() => void this.check().then(() => this.answered(), () => {}), PROBE_INTERVAL_MS).unref();
    }
    this.log.debug({ err, dependency: this.dependency, source }, `${source}: ${this.dependency} unavailable`);
  }

  /** The dependency answered: the outage, if there was one, is over. */
  answered(): void {
    if (this.since === undefined) return;
    const seconds = Math.round((Date.now() - this.since) / 100) / 10;
    this.since = undefined;
    this.stop();
    this.log.info({ dependency: this.dependency, unavailableSeconds: seconds }, `${this.dependency} is back after ${seconds} s unavailable`);
  }

  /** Ends the probe (at shutdown). */
  stop(): void {
    clearInterval(this.probe);
    this.probe = undefined;
  }
}
