import net from 'node:net';
import type { TestContext } from 'node:test';
import { REDIS_URL } from './app.ts';

/** A TCP proxy in front of the test Redis that a test can slow down, cut and restore. */
export interface RedisProxy {
  /** the URL to give the service instead of Redis's own */
  readonly url: string;
  /** how late Redis's answers are handed back (in order); 0: at once */
  delayMs: number;
  /** closes the proxy and every connection through it */
  cut(): Promise<void>;
  /** listens again on the same port */
  restore(): Promise<void>;
}

/** Started on a free port; cut when the test ends. */
export async function redisProxy(t: TestContext): Promise<RedisProxy> {
  const target = new URL(REDIS_URL);
  const sockets = new Set<net.Socket>();
  const relay = (client: net.Socket) => {
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    const answer = (chunk: Buffer) => void (client.destroyed || client.write(chunk));
    upstream.on('data', (chunk: Buffer) => (proxy.delayMs > 0 ? setTimeout(answer, proxy.delayMs, chunk) : answer(chunk)));
    const drop = () => (client.destroy(), upstream.destroy());
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  };
  let server = net.createServer(relay);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const proxy: RedisProxy = {
    url: `redis://127.0.0.1:${port}`,
    delayMs: 0,
    cut: async () => {
      proxy.delayMs = 0;
      await new Promise<void>((r) => {
        server.close(() => r());
        for (const s of sockets) s.destroy();
      });
      sockets.clear();
    },
    restore: async () => {
      server = net.createServer(relay);
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    },
  };
  t.after(() => proxy.cut());
  return proxy;
}
