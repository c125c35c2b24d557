import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';

/**
 * A real SMTP server on loopback that keeps every message it receives. `refuseRecipient` answers RCPT TO for an
 * address with the SMTP reply it returns ("550 5.1.1 User unknown"), or accepts it when it returns null.
 */
export class Mailbox {
  readonly messages: ParsedMail[] = [];
  private waiters: (() => void)[] = [];
  private server!: SMTPServer;
  port = 0;

  constructor(private readonly options: { refuseRecipient?: (address: string) => string | null } = {}) {}

  async start(): Promise<void> {
    const refuse = this.options.refuseRecipient;
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onRcptTo: (address, _session, callback) => {
        const reply = refuse?.(address.address) ?? null;
        if (reply === null) return callback();
        const [, code, text] = /^(\d{3}) (.*)$/.exec(reply)!;
        callback(Object.assign(new Error(text), { responseCode: Number(code) }));
      },
      onData: (stream, _session, callback) => {
        simpleParser(stream)
          .then((mail) => {
            this.messages.push(mail);
            for (const w of this.waiters.splice(0)) w();
            callback();
          })
          .catch(callback);
      },
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.server.address() as { port: number }).port;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** The first message to this address whose text matches, waiting up to timeoutMs for it. */
  async waitFor(to: string, match: RegExp, timeoutMs = 10_000): Promise<ParsedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find((m) => JSON.stringify(m.to).toLowerCase().includes(to.toLowerCase()) && match.test(m.text ?? ''));
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no mail to ${to} matching ${match} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 200);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
