import { mkdir, readdir, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import nodemailer, { type SendMailOptions, type Transporter } from 'nodemailer';
import type { Mailer, OutgoingMail } from '../../domain/ports';

/** RFC 5322's limit of a line, CRLF excluded. */
const MAX_LINE = 998;

type MailPart = NonNullable<SendMailOptions['alternatives']>[number];

const writableAsIs = (body: string) => /^[\x20-\x7e\t\r\n]+$/.test(body) && body.split(/\r?\n/).every((line) => line.length <= MAX_LINE);

const asWritten = (contentType: string, body: string): MailPart => ({
  contentType,
  raw: `Content-Type: ${contentType}\r\nContent-Transfer-Encoding: 7bit\r\n\r\n${body.split(/\r?\n/).join('\r\n')}`,
});

/**
 * Text and HTML as written (7bit) when both are ASCII with lines a mail line may hold. Left to itself
 * nodemailer quoted-prints every line over 76 characters, and the invitation and reset links always are:
 * the .eml a reader opens then shows the link's id broken across lines and `=` as `=3D`. Anything else
 * (and a message without HTML, whose single part would lose the message headers to a raw body) keeps
 * nodemailer's own encoding.
 */
function message(from: string, { to, subject, text, html }: OutgoingMail): SendMailOptions {
  if (html === undefined || !writableAsIs(text) || !writableAsIs(html)) return { from, to, subject, text, html };
  return { from, to, subject, alternatives: [asWritten('text/plain; charset=utf-8', text), asWritten('text/html; charset=utf-8', html)] };
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
  private readonly transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

  constructor(private readonly directory: string, private readonly from: string) {}

  async send(mail: OutgoingMail): Promise<void> {
    const info = (await this.transport.sendMail(message(this.from, mail))) as unknown as { message: Buffer };
    await mkdir(this.directory, { recursive: true });
    const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.eml`;
    const tmp = join(this.directory, `.${name}.tmp`);
    try {
      await writeFile(tmp, info.message);
      await rename(tmp, join(this.directory, name));
    } catch (err) {
      // A full disk creates the file and refuses its bytes: no empty .eml.tmp is left behind for every mail refused.
      await rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Deletes the .eml files (and temporary files left by a crash) last written before `olderThan`: the folder would
   * otherwise grow for ever and keep every reset link sent. How many were deleted; none when the folder does not exist.
   */
  async prune(olderThan: Date): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    let deleted = 0;
    for (const name of names.filter((n) => n.endsWith('.eml') || n.endsWith('.eml.tmp'))) {
      const path = join(this.directory, name);
      try {
        if ((await stat(path)).mtimeMs >= olderThan.getTime()) continue;
        await unlink(path);
        deleted++;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return deleted;
  }

  async close(): Promise<void> {}
}
