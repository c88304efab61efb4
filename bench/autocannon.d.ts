// The parts of autocannon's programmatic API the bench uses (the package ships no type declarations).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      timeout?: number;
      requests?: { setupRequest?: (req: Record<string, unknown>, context: unknown) => Record<string, unknown> }[];
    }
    interface Result {
      /** seconds from the start to the stop, which comes at the first one-second sample after `duration` */
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
    }
    interface Instance extends EventEmitter, PromiseLike<Result> {
      stop(): void;
    }
  }
  function autocannon(opts: autocannon.Options): autocannon.Instance;
  export default autocannon;
}
