import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { EmlFileMailer, SMTP_TIMEOUTS, SmtpMailer } from '../src/adapters/mail/nodemailer-mailer';
import { RecipientRefusedError } from '../src/domain/ports';
import { Mailbox } from '../../../test/support/mailbox';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'eml-mailer-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function onlyMessage(): Promise<string> {
  const files = (await readdir(directory)).filter((f) => f.endsWith('.eml'));
  expect(files).toHaveLength(1);
  return readFile(join(directory, files[0]!), 'utf8');
}

describe('EmlFileMailer', () => {
  const link = 'http://localhost:8090/auth/register/e17cd22c-08b1-433b-bf83-220f853f1def?email=someone%40example.com';

  it('writes a link longer than 76 characters unbroken, so a reader of the file can copy it', async () => {
    const mailer = new EmlFileMailer(directory, 'Card Library <no-reply@card-library.local>');
    await mailer.send({ to: 'someone@example.com', subject: 'Invited', text: `Set your password here:\n${link}\n`, html: `<p><a href="${link}">Set your password</a></p>` });
    const raw = await onlyMessage();
    expect(raw).toContain(`\r\n${link}\r\n`);
    expect(raw).toContain(`<a href="${link}">`);
    const parsed = await simpleParser(raw);
    expect(parsed.text).toBe(`Set your password here:\n${link}\n`);
    expect(parsed.html).toContain(`\n<p><a href="${link}">Set your password</a></p>\n`);
  });

  it('sends the HTML part as a whole document (an <html> tag, its charset, the subject as title): a bare fragment scores as spam', async () => {
    const mailer = new EmlFileMailer(directory, 'no-reply@card-library.local');
    await mailer.send({ to: 'someone@example.com', subject: 'Invited & welcome', text: `${link}\n`, html: `<p><a href="${link}">Set your password</a></p>` });
    const parsed = await simpleParser(await onlyMessage());
    expect(parsed.html).toBe(
      `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Invited &amp; welcome</title>\n</head>\n<body>\n<p><a href="${link}">Set your password</a></p>\n</body>\n</html>\n`,
    );
  });

  it('leaves a body that is not plain ASCII to the encoding nodemailer picks', async () => {
    const mailer = new EmlFileMailer(directory, 'no-reply@card-library.local');
    await mailer.send({ to: 'someone@example.com', subject: 'Grüße', text: `Grüße\n${link}\n`, html: `<p>Grüße</p>` });
    const parsed = await simpleParser(await onlyMessage());
    expect(parsed.subject).toBe('Grüße');
    expect(parsed.text).toBe(`Grüße\n${link}\n`);
    expect(parsed.html).toContain('<title>Grüße</title>');
    expect(parsed.html).toContain('\n<p>Grüße</p>\n');
  });

  it('keeps the message headers of a mail without HTML', async () => {
    const mailer = new EmlFileMailer(directory, 'no-reply@card-library.local');
    await mailer.send({ to: 'someone@example.com', subject: 'Plain', text: `${link}\n` });
    const parsed = await simpleParser(await onlyMessage());
    expect(parsed.subject).toBe('Plain');
    expect(parsed.to).toMatchObject({ text: 'someone@example.com' });
    expect(parsed.text).toBe(`${link}\n`);
  });

  it('marks the mail as sent by a machine (Auto-Submitted, RFC 3834), so autoresponders do not answer it', async () => {
    const mailer = new EmlFileMailer(directory, 'no-reply@card-library.local');
    await mailer.send({ to: 'someone@example.com', subject: 'Invited', text: `${link}\n`, html: `<p><a href="${link}">x</a></p>` });
    await mailer.send({ to: 'someone@example.com', subject: 'Plain', text: `${link}\n` });
    const files = (await readdir(directory)).filter((f) => f.endsWith('.eml'));
    expect(files).toHaveLength(2);
    for (const file of files) expect((await simpleParser(await readFile(join(directory, file)))).headers.get('auto-submitted')).toBe('auto-generated');
  });

  it('prune deletes the .eml files (and crash leftovers) last written before the bound, and nothing else', async () => {
    const mailer = new EmlFileMailer(directory, 'no-reply@card-library.local');
    await mailer.send({ to: 'someone@example.com', subject: 'Recent', text: `${link}\n` });
    const [recent] = await readdir(directory);
    const now = Date.now();
    const old = join(directory, '2020-01-01T00-00-00-000Z-old.eml');
    const leftover = join(directory, '.2020-01-01T00-00-00-000Z-tmp.eml.tmp');
    const other = join(directory, 'README');
    for (const path of [old, leftover, other]) {
      await writeFile(path, 'x');
      await utimes(path, new Date(now - 73 * 3_600_000), new Date(now - 73 * 3_600_000));
    }
    expect(await mailer.prune(new Date(now - 72 * 3_600_000))).toBe(2);
    expect((await readdir(directory)).sort()).toEqual([recent, 'README'].sort());
    expect(await new EmlFileMailer(join(directory, 'none'), 'x@example.com').prune(new Date())).toBe(0);
  });

  it('prune keeps every file when the retention reaches back further than a Date (MAIL_DIR_RETENTION_HOURS=9999999999, "keep them")', async () => {
    const mailer = new EmlFileMailer(directory, 'no-reply@card-library.local');
    await mailer.send({ to: 'someone@example.com', subject: 'Your invitation', text: `${link}\n` });
    const sent = await readdir(directory);
    // As identity's sweep computes the bound (main.ts).
    expect(await mailer.prune(new Date(Date.now() - 9_999_999_999 * 3_600_000))).toBe(0);
    expect(await readdir(directory)).toEqual(sent);
  });

  it('leaves no empty .eml.tmp behind when the disk is full (the file created, its bytes refused)', async () => {
    const fs = require('node:fs/promises') as typeof import('node:fs/promises');
    const realWriteFile = fs.writeFile;
    const write = jest.spyOn(fs, 'writeFile').mockImplementationOnce(async (path) => {
      await realWriteFile(path, '');
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    });
    const mailer = new EmlFileMailer(directory, 'no-reply@card-library.local');
    await expect(mailer.send({ to: 'someone@example.com', subject: 'Invited', text: `${link}\n`, html: '<p>x</p>' })).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(write).toHaveBeenCalledTimes(1);
    write.mockRestore();
    expect(await readdir(directory)).toEqual([]);
  });
});

describe('SmtpMailer', () => {
  const refusals: Record<string, string> = {
    'unknown@example.com': '550 5.1.1 <unknown@example.com>: Recipient address rejected: User unknown',
    'nodomain@example.invalid': '550 5.1.2 Bad destination system address',
    'plain550@example.com': '550 No such user here',
    'greylisted@example.com': '451 4.7.1 Greylisted, try again later',
    'relay@elsewhere.example': '554 5.7.1 Relay access denied',
  };
  let mailbox: Mailbox;
  let mailer: SmtpMailer;
  beforeEach(async () => {
    mailbox = new Mailbox({ refuseRecipient: (address) => refusals[address] ?? null });
    await mailbox.start();
    mailer = new SmtpMailer(mailbox.url, 'Card Library <no-reply@cards.example.com>');
  });
  afterEach(async () => {
    await mailer.close();
    await mailbox.stop();
  });
  const mail = (to: string) => ({ to, subject: 'You are invited to the Card Library', text: 'Set your password here:\nhttps://cards.example.com/auth/register/x\n', html: '<p>x</p>' });

  it('delivers with the headers a mail client expects, Message-ID in the sender\'s domain and Auto-Submitted', async () => {
    await mailer.send(mail('someone+tag@example.com'));
    const received = await mailbox.waitFor('someone+tag@example.com', /auth\/register/);
    expect(received.from?.value).toEqual([{ address: 'no-reply@cards.example.com', name: 'Card Library' }]);
    expect(received.messageId).toMatch(/^<[^@>]+@cards\.example\.com>$/);
    expect(received.date).toBeInstanceOf(Date);
    expect(received.headers.get('mime-version')).toBe('1.0');
    expect(received.headers.get('auto-submitted')).toBe('auto-generated');
  });

  it('names a recipient the server refuses for good (5.1.x, or a bare 550) RecipientRefusedError; a temporary refusal or a refused relay stays the error it was', async () => {
    for (const to of ['unknown@example.com', 'nodomain@example.invalid', 'plain550@example.com']) {
      const failure = await mailer.send(mail(to)).then(() => undefined, (err: unknown) => err);
      expect(failure).toBeInstanceOf(RecipientRefusedError);
      expect(failure).toMatchObject({ response: refusals[to] });
    }
    for (const to of ['greylisted@example.com', 'relay@elsewhere.example']) {
      const failure = await mailer.send(mail(to)).then(() => undefined, (err: unknown) => err);
      expect(failure).not.toBeInstanceOf(RecipientRefusedError);
      expect(failure).toMatchObject({ code: 'EENVELOPE', response: refusals[to] });
    }
    expect(mailbox.messages).toHaveLength(0);
  });

  it('waits for a stalled server at most a few seconds per step, inside the gateway\'s 10 s deadline, unless SMTP_URL says otherwise', () => {
    // nodemailer's own: 2 min to connect, 30 s for the greeting, 10 min of silence: an invitation answered 504 while the mail could still go out.
    const options = (smtpUrl: string) => (new SmtpMailer(smtpUrl, 'no-reply@cards.example.com') as unknown as { transport: { transporter: { options: Record<string, unknown> } } }).transport.transporter.options;
    expect(options(mailbox.url)).toMatchObject({ ...SMTP_TIMEOUTS, host: '127.0.0.1', port: mailbox.port });
    for (const value of Object.values(SMTP_TIMEOUTS)) expect(value).toBeLessThan(10_000);
    expect(options(`${mailbox.url}?socketTimeout=30000`)).toMatchObject({ socketTimeout: 30_000, greetingTimeout: SMTP_TIMEOUTS.greetingTimeout });
  });
});
