import { mkdir, readdir, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import nodemailer, { type SendMailOptions, type Transporter } from 'nodemailer';
import { escapeHtml } from '@cards/card-rules';
import { parseConnectionUrl } from 'nodemailer/lib/shared';
import { RecipientRefusedError, type Mailer, type OutgoingMail } from '../../domain/ports';

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
/**
 * The HTML part as a whole document (doctype, <html>, charset, the subject as title) unless it is one already: a
 * text/html part without an <html> tag scores as spam (SpamAssassin's HTML_MIME_NO_HTML_TAG), and some clients
 * render a bare fragment in quirks mode.
 */
function htmlDocument(subject: string, html: string): string {
  if (/^\s*(<!doctype html|<html[\s>])/i.test(html)) return html;
  return `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>${escapeHtml(subject)}</title>\n</head>\n<body>\n${html}\n</body>\n</html>\n`;
}

function message(from: string, { to, subject, text, html: fragment }: OutgoingMail): SendMailOptions {
  const html = fragment === undefined ? undefined : htmlDocument(subject, fragment);
  // RFC 3834: a machine's mail, so out-of-office replies and other autoresponders leave it unanswered (no-reply@ reads nothing).
  const headers = { 'Auto-Submitted': 'auto-generated' };
  if (html === undefined || !writableAsIs(text) || !writableAsIs(html)) return { from, to, subject, text, html, headers };
  return { from, to, subject, headers, alternatives: [asWritten('text/plain; charset=utf-8', text), asWritten('text/html; charset=utf-8', html)] };
}

/**
 * How long the SMTP client waits for the server (ms), each overridable in SMTP_URL's query (`?socketTimeout=30000`).
 * nodemailer's own (2 min to connect, 30 s for the greeting, 10 min of silence) outlast the gateway's deadline for an
 * invitation (GRPC_DEADLINE_MS, 10 s): a server that stalls made the inviter wait for a 504 "took too long" while
 * identity kept the call open for minutes and could still send the mail after the inviter was told it failed. Each
 * stall alone now ends within the deadline, as a 503 "could not be sent; try again later".
 */
export const SMTP_TIMEOUTS = { dnsTimeout: 5_000, connectionTimeout: 5_000, greetingTimeout: 5_000, socketTimeout: 8_000 } as const;

/**
 * The server's answer when it refused the only recipient for good: a 5xx reply to RCPT TO whose enhanced status is an
 * address status (5.1.x: no such mailbox, no such domain, bad syntax), or, without an enhanced status, 550, 551 or 553.
 * Not a refusal of the sender or of relaying (5.7.x: the operator's configuration), which stays an outage.
 */
function recipientRefusal(err: unknown): string | null {
  const e = err as { code?: unknown; command?: unknown; responseCode?: unknown; response?: unknown };
  if (e?.code !== 'EENVELOPE' || e.command !== 'RCPT TO' || typeof e.responseCode !== 'number' || typeof e.response !== 'string') return null;
  if (e.responseCode < 500 || e.responseCode > 599) return null;
  const enhanced = /^\d{3}[ -](\d\.\d{1,3}\.\d{1,3})\b/.exec(e.response)?.[1];
  const refused = enhanced ? enhanced.startsWith('5.1.') : [550, 551, 553].includes(e.responseCode);
  return refused ? e.response : null;
}

/** Sends through an SMTP server (SMTP_URL). */
export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;

  constructor(smtpUrl: string, private readonly from: string) {
    // The URL parsed as nodemailer parses it (a `url` option would drop every other option), its own query options winning.
    this.transport = nodemailer.createTransport({ ...SMTP_TIMEOUTS, ...parseConnectionUrl(smtpUrl) });
  }

  async send(mail: OutgoingMail): Promise<void> {
    try {
      await this.transport.sendMail(message(this.from, mail));
    } catch (err) {
      const refusal = recipientRefusal(err);
      throw refusal === null ? err : new RecipientRefusedError(refusal);
    }
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
    // A bound further back than a Date reaches (MAIL_DIR_RETENTION_HOURS=9999999999, written for "keep them"): nothing
    // is older. Compared as NaN, every file was taken for older and deleted, fresh invitations included.
    if (Number.isNaN(olderThan.getTime())) return 0;
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
