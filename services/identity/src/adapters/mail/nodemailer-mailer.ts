import { mkdir, rename, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Mailer, OutgoingMail } from '../../domain/ports';

/** RFC 5322's limit of a line, CRLF excluded. */
const MAX_LINE = 998;

/**
 * The body as written (7bit) when it is ASCII and its lines fit a mail line. Left to itself nodemailer
 * quoted-prints every line over 76 characters, and the invitation and reset links always are: the .eml a
 * reader opens then shows the link's id broken across lines and `=` as `=3D`. Anything else keeps
 * nodemailer's own encoding.
 */
function asWritten(contentType: string, body: string): string | { raw: string } {
  if (body === '') return body;
  const lines = body.split(/\r?\n/);
  if (!/^[\x20-\x7e\t\r\n]*$/.test(body) || lines.some((line) => line.length > MAX_LINE)) return body;
  return { raw: `Content-Type: ${contentType}; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n${lines.join('\r\n')}` };
}

function message(from: string, mail: OutgoingMail) {
  return {
    from,
    to: mail.to,
    subject: mail.subject,
    text: asWritten('text/plain', mail.text),
    ...(mail.html === undefined ? {} : { html: asWritten('text/html', mail.html) }),
  };
}

/** Sends through an SMTP server (SMTP_URL). */
export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;

  constructor(smtpUrl: string, private readonly from: string) {
    this.transport = nodemailer.createTransport(smtpUrl);
  }

  async send(mail: OutgoingMail): Promise<void> {
    await this.transport.sendMail(message(this.from, mail));
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

/** Writes each message as an .eml file into a directory: the zero-setup default. */
export class EmlFileMailer implements Mailer {
  private readonly transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });

  constructor(private readonly directory: string, private readonly from: string) {}

  async send(mail: OutgoingMail): Promise<void> {
    const info = (await this.transport.sendMail(message(this.from, mail))) as unknown as { message: Buffer };
    await mkdir(this.directory, { recursive: true });
    const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.eml`;
    const tmp = join(this.directory, `.${name}.tmp`);
    await writeFile(tmp, info.message);
    await rename(tmp, join(this.directory, name));
  }

  async close(): Promise<void> {}
}
