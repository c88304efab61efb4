import net from 'node:net';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_EMAIL, ADMIN_PASSWORD, freePort, serverEnv, start, untilHealthy } from '../helpers/server-process.ts';

/** A keep-alive connection driven by hand, so the test decides when each request is written. */
class Connection {
  private readonly socket: net.Socket;
  private data = '';
  readonly closed: Promise<string | undefined>;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (d: Buffer) => (this.data += d.toString('latin1')));
    // undefined: closed in order; else the socket's error (ECONNRESET: the request was dropped)
    this.closed = new Promise((resolve) => {
      let error: string | undefined;
      socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
      socket.on('close', () => resolve(error));
    });
  }

  static open(port: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(new Connection(socket)));
      socket.once('error', reject);
    });
  }

  write(method: string, path: string, body?: string): void {
    const head = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: keep-alive'];
    if (body !== undefined) head.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
    this.socket.write(`${head.join('\r\n')}\r\n\r\n${body ?? ''}`);
  }

  /** Waits for `n` complete responses (each with a Content-Length body); returns them. */
  async responses(n: number): Promise<{ status: number; headers: Record<string, string>; body: string }[]> {
    for (;;) {
      const parsed = parseResponses(this.data);
      if (parsed.length >= n) return parsed;
      await new Promise((r) => setTimeout(r, 20));
      if (this.socket.destroyed && parseResponses(this.data).length < n) return parseResponses(this.data);
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}

function parseResponses(raw: string): { status: number; headers: Record<string, string>; body: string }[] {
  const out: { status: number; headers: Record<string, string>; body: string }[] = [];
  let rest = raw;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return out;
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length'] ?? 0);
    if (rest.length < end + 4 + length) return out;
    out.push({ status: Number(statusLine.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
}

describe('SIGTERM with keep-alive connections open', { timeout: 300000 }, () => {
  it('answers every request written on them around the signal, with Connection: close, then closes them', async (t) => {
    const port = await freePort();
    const proc = start(t, 'src/server.ts', await serverEnv(t, { PORT: String(port) }));
    await untilHealthy(`http://127.0.0.1:${port}`, proc);

    // keep-alive connections that have served a request and wait for the next, as a client's pool holds them
    const N = 8;
    const connections = await Promise.all(Array.from({ length: N }, () => Connection.open(port)));
    t.after(() => connections.forEach((c) => c.destroy()));
    for (const c of connections) c.write('GET', '/health');
    for (const c of connections) {
      const [health] = await c.responses(1);
      assert.equal(health.status, 200);
      assert.notEqual(health.headers.connection, 'close', 'the connection is kept alive');
    }

    // a sign-in (bcrypt at cost 12: in flight for a while) on every connection: half written just
    // before the signal, half just after it, as a client's pool sends while the service begins to stop
    const login = JSON.stringify({ username: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    for (const c of connections.slice(0, N / 2)) c.write('POST', '/api/v1/auth/login', login);
    proc.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 50));
    for (const c of connections.slice(N / 2)) c.write('POST', '/api/v1/auth/login', login);

    const outcomes = await Promise.all(connections.map(async (c) => ({ closed: await c.closed, answers: await c.responses(2) })));
    for (const [i, { closed, answers }] of outcomes.entries()) {
      assert.equal(closed, undefined, `connection ${i} closed without an error (not reset)`);
      assert.equal(answers.length, 2, `connection ${i}: the sign-in written at SIGTERM is answered`);
      assert.equal(answers[1].status, 200, answers[1].body);
      assert.match(JSON.parse(answers[1].body).access_token, /^ey/);
      assert.equal(answers[1].headers.connection, 'close', `connection ${i}: the answer says the connection ends`);
    }
    assert.deepEqual(await proc.exited, { code: 0, signal: null }, proc.stderr());
  });
});
