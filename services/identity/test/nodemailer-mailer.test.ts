import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { EmlFileMailer } from '../src/adapters/mail/nodemailer-mailer';

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
    expect(parsed.html).toBe(`<p><a href="${link}">Set your password</a></p>`);
  });

  it('leaves a body that is not plain ASCII to the encoding nodemailer picks', async () => {
    const mailer = new EmlFileMailer(directory, 'no-reply@card-library.local');
    await mailer.send({ to: 'someone@example.com', subject: 'Grüße', text: `Grüße\n${link}\n`, html: `<p>Grüße</p>` });
    const parsed = await simpleParser(await onlyMessage());
    expect(parsed.subject).toBe('Grüße');
    expect(parsed.text).toBe(`Grüße\n${link}\n`);
    expect(parsed.html).toBe('<p>Grüße</p>');
  });

  it('keeps the message headers of a mail without HTML', async () => {
    const mailer = new EmlFileMailer(directory, 'no-reply@card-library.local');
    await mailer.send({ to: 'someone@example.com', subject: 'Plain', text: `${link}\n` });
    const parsed = await simpleParser(await onlyMessage());
    expect(parsed.subject).toBe('Plain');
    expect(parsed.to).toMatchObject({ text: 'someone@example.com' });
    expect(parsed.text).toBe(`${link}\n`);
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
