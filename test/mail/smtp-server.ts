import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { SMTPServer, type SMTPServerAddress } from 'smtp-server';

export interface ReceivedMessage {
  from: string;
  to: string[];
  raw: string;
  at: number;
}

export interface TestSmtpServer {
  url: string;
  messages: ReceivedMessage[];
  /** every RCPT TO the server saw, accepted or not, with the time it arrived */
  attempts: { to: string; at: number }[];
  close(): Promise<void>;
}

/**
 * A real SMTP server on 127.0.0.1 and a free port (no TLS, no authentication). With `rejectRcpt`
 * it answers every recipient with a permanent 550, so every delivery attempt fails.
 */
export async function startSmtpServer(t: TestContext | undefined, opts: { rejectRcpt?: boolean } = {}): Promise<TestSmtpServer> {
  const messages: ReceivedMessage[] = [];
  const attempts: { to: string; at: number }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address: SMTPServerAddress, _session, callback) {
      attempts.push({ to: address.address, at: Date.now() });
      if (opts.rejectRcpt) {
        const err = Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 });
        callback(err);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.server.address() as AddressInfo;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  t?.after(close);
  return { url: `smtp://127.0.0.1:${port}`, messages, attempts, close };
}

/** Headers of a raw RFC 5322 message (unfolded, names lower-cased) and its body. */
export function parseMessage(raw: string): { headers: Record<string, string>; body: string } {
  const normalised = raw.replace(/\r\n/g, '\n');
  const split = normalised.indexOf('\n\n');
  const head = split === -1 ? normalised : normalised.slice(0, split);
  const body = split === -1 ? '' : normalised.slice(split + 2);
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  if (headers['content-transfer-encoding']?.toLowerCase() === 'quoted-printable') {
    const bytes = body.replace(/=\n/g, '').replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    return { headers, body: Buffer.from(bytes, 'latin1').toString('utf8') };
  }
  return { headers, body };
}
