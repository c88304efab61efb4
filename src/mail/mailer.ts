import fs from 'node:fs/promises';
import path from 'node:path';
import crypto from 'node:crypto';
import type { Transporter } from 'nodemailer';
import type { Config } from '../config.ts';

export interface Mailer {
  send(message: { to: string; subject: string; text: string }): Promise<void>;
  close(): void;
}

/** SMTP when SMTP_URL is set, else an .eml file per message in DATA_DIR/outbox; nodemailer loads with the first message. */
export function createMailer(config: Config): Mailer {
  let transport: Promise<Transporter> | undefined;
  const open = async (): Promise<Transporter> => {
    const { default: nodemailer } = await import('nodemailer');
    return config.smtpUrl
      ? nodemailer.createTransport(config.smtpUrl)
      : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  };
  const outbox = path.join(config.dataDir, 'outbox');
  return {
    async send(message) {
      // a transport that could not be made is tried again with the next message
      transport ??= open().catch((err: unknown) => {
        transport = undefined;
        throw err;
      });
      const info = await (await transport).sendMail({ from: config.mailFrom, ...message });
      if (config.smtpUrl) return;
      await fs.mkdir(outbox, { recursive: true });
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${crypto.randomUUID()}.eml`;
      await fs.writeFile(path.join(outbox, name), info.message as Buffer);
    },
    close() {
      void transport?.then((t) => t.close(), () => {});
    },
  };
}
