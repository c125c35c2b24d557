import { ConfigError, loadConfig } from '@cards/platform';
import { identityConfigSchema, MAX_SWEEP_INTERVAL_MINUTES, refuseIdentityEmbeddedStores } from '../src/config';

describe('refuseIdentityEmbeddedStores', () => {
  const engines = { MONGO_URL: 'mongodb://mongo:27017', JWT_SECRET: 'j'.repeat(48) };

  it('refuses a pod without a volume (EMBEDDED_STORES=refuse) and without SMTP_URL, whose mail nobody would receive', () => {
    for (const smtp of [undefined, '', '  ']) {
      const start = () => refuseIdentityEmbeddedStores({ ...engines, SMTP_URL: smtp, EMBEDDED_STORES: 'refuse' });
      expect(start).toThrow(ConfigError);
      expect(start).toThrow(/SMTP_URL: required with EMBEDDED_STORES=refuse/);
    }
    expect(() => refuseIdentityEmbeddedStores({ ...engines, SMTP_URL: 'smtps://mailer:secret@smtp.example.com:465', EMBEDDED_STORES: 'refuse' })).not.toThrow();
  });

  it('accepts no mail delivery when the operator chooses it (MAIL_TO_FILES=true), and mail files wherever embedded stores are allowed', () => {
    expect(() => refuseIdentityEmbeddedStores({ ...engines, EMBEDDED_STORES: 'refuse', MAIL_TO_FILES: 'true' })).not.toThrow();
    expect(() => refuseIdentityEmbeddedStores({ ...engines, EMBEDDED_STORES: 'refuse', MAIL_TO_FILES: 'false' })).toThrow(/SMTP_URL/);
    expect(() => refuseIdentityEmbeddedStores({})).not.toThrow();
    expect(() => refuseIdentityEmbeddedStores({ EMBEDDED_STORES: 'allow' })).not.toThrow();
  });
});

describe('MAIL_FROM', () => {
  const mailFrom = (value: string | undefined) => loadConfig(identityConfigSchema, { MAIL_FROM: value }).MAIL_FROM;

  it('refuses at start a sender mail could not carry: no address (a mail without From), two addresses, a line break', () => {
    expect(() => mailFrom('Card Library')).toThrow(/MAIL_FROM: must hold an e-mail address/);
    expect(() => mailFrom('no-reply')).toThrow(/MAIL_FROM: must hold an e-mail address/);
    expect(() => mailFrom('no-reply@cards.example.com, other@cards.example.com')).toThrow(/MAIL_FROM: must name exactly one sender, .*\(found 2\)/);
    expect(() => mailFrom('Card Library <no-reply@cards.example.com>\r\nBcc: someone@example.com')).toThrow(/MAIL_FROM: must be on one line/);
  });

  it('takes one sender, with or without a name (quoted, non-ASCII), and the default when unset or empty', () => {
    for (const value of ['Card Library <no-reply@cards.example.com>', 'no-reply@cards.example.com', '"Cards, Library" <no-reply@cards.example.com>', 'Bibliothèque <no-reply@bibliothèque.fr>']) {
      expect(mailFrom(value)).toBe(value);
    }
    expect(mailFrom(undefined)).toBe('Card Library <no-reply@card-library.local>');
    expect(mailFrom('')).toBe('Card Library <no-reply@card-library.local>');
  });
});

describe('PUBLIC_URL', () => {
  const publicUrl = (value: string | undefined) => loadConfig(identityConfigSchema, { PUBLIC_URL: value }).PUBLIC_URL;

  it('refuses at start a base the e-mail links cannot follow: a query, a fragment, credentials, another scheme', () => {
    expect(() => publicUrl('https://cards.example.com/?utm=mail')).toThrow(/PUBLIC_URL: must have no query \(\?\) or fragment \(#\)/);
    expect(() => publicUrl('https://cards.example.com/#top')).toThrow(/PUBLIC_URL: must have no query/);
    expect(() => publicUrl('https://cards.example.com/?')).toThrow(/PUBLIC_URL: must have no query/);
    expect(() => publicUrl('https://admin:secret@cards.example.com')).toThrow(/PUBLIC_URL: must have no user name or password/);
    expect(() => publicUrl('ftp://cards.example.com')).toThrow(/PUBLIC_URL: must be an http or https URL/);
  });

  it('takes an http(s) base, with a path, its trailing slashes dropped', () => {
    expect(publicUrl(undefined)).toBe('http://localhost:8090');
    expect(publicUrl('https://cards.example.com/')).toBe('https://cards.example.com');
    expect(publicUrl('https://example.com/cards//')).toBe('https://example.com/cards');
    expect(publicUrl('http://127.0.0.1:4141')).toBe('http://127.0.0.1:4141');
  });
});

describe('IDENTITY_SWEEP_INTERVAL_MINUTES', () => {
  const interval = (value: string | undefined) => loadConfig(identityConfigSchema, { IDENTITY_SWEEP_INTERVAL_MINUTES: value }).IDENTITY_SWEEP_INTERVAL_MINUTES;

  it("refuses at start an interval longer than Node's timers hold (30 days ran the sweep every millisecond), naming the longest", () => {
    expect(MAX_SWEEP_INTERVAL_MINUTES).toBe(35791);
    expect(() => interval('43200')).toThrow(ConfigError);
    expect(() => interval('43200')).toThrow(/IDENTITY_SWEEP_INTERVAL_MINUTES: must be at most 35791/);
    expect(() => interval('0')).toThrow(/must be at least 1/);
  });

  it('takes 1 to 35791 minutes, 10 by default', () => {
    expect(interval(undefined)).toBe(10);
    expect(interval('1')).toBe(1);
    expect(interval('35791')).toBe(35791);
  });
});

describe('PASSWORD_HASH_COST', () => {
  const cost = (value: string | undefined) => loadConfig(identityConfigSchema, { PASSWORD_HASH_COST: value }).PASSWORD_HASH_COST;

  it("refuses at start a cost scrypt cannot hash with (not a power of two) or above OWASP's 2^17, which then failed every registration", () => {
    for (const value of ['20000', '0', '1', '262144']) {
      expect(() => cost(value)).toThrow(ConfigError);
      expect(() => cost(value)).toThrow(/PASSWORD_HASH_COST: must be a power of two from 2 to 131072/);
    }
  });

  it('takes powers of two up to 131072, 16384 by default', () => {
    expect(cost(undefined)).toBe(16384);
    for (const value of [1024, 16384, 65536, 131072]) expect(cost(String(value))).toBe(value);
  });
});

describe('SMTP_URL', () => {
  const smtpUrl = (value: string | undefined) => loadConfig(identityConfigSchema, { SMTP_URL: value }).SMTP_URL;

  it('stops the start when it is not smtp:// or smtps:// with a host (smtp.example.com:587 sent every mail to the host "587": invitations 503), naming it', () => {
    for (const bad of ['smtp.example.com:587', 'http://mail.example.com:587', 'smtp://']) {
      expect(() => smtpUrl(bad)).toThrow(ConfigError);
      expect(() => smtpUrl(bad)).toThrow(/SMTP_URL: /);
    }
    expect(() => smtpUrl('smtp.example.com:587')).toThrow(/SMTP_URL: must be smtp:\/\/host:port or smtps:\/\/host:port/);
  });

  it('takes smtp:// and smtps:// URLs; empty is unset (.eml files)', () => {
    expect(smtpUrl('smtp://user:pass@mail.example.com:587')).toBe('smtp://user:pass@mail.example.com:587');
    expect(smtpUrl('SMTPS://mail.example.com:465')).toBe('SMTPS://mail.example.com:465');
    expect(smtpUrl('')).toBeUndefined();
    expect(smtpUrl(undefined)).toBeUndefined();
  });
});

describe("SMTP_URL's waits", () => {
  const smtpUrl = (value: string) => loadConfig(identityConfigSchema, { SMTP_URL: value }).SMTP_URL;

  it("stops the start at a wait in its query longer than Node's timers hold (every mail failed after 1 ms) or 0 (nodemailer's own minutes: a stalled server held each invitation), naming it", () => {
    expect(() => smtpUrl('smtp://mail.example.com:587?socketTimeout=3000000000')).toThrow(/SMTP_URL: socketTimeout in its query must be 1 to 2147483647 \(ms\), got "3000000000"/);
    expect(() => smtpUrl('smtp://mail.example.com:587?greetingTimeout=0')).toThrow(/SMTP_URL: greetingTimeout in its query must be 1 to 2147483647/);
    expect(() => smtpUrl('smtp://mail.example.com:587?connectionTimeout=soon')).toThrow(ConfigError);
  });

  it('takes waits within that range and other query options', () => {
    expect(smtpUrl('smtp://mail.example.com:587?socketTimeout=30000&pool=true')).toBe('smtp://mail.example.com:587?socketTimeout=30000&pool=true');
  });
});

describe('PUBLIC_URL that is no URL', () => {
  it('stops the start with a ConfigError naming it, not a TypeError naming nothing ("Invalid URL" from the check after .url())', () => {
    for (const bad of ['cards.example.com', '0', ' ']) {
      expect(() => loadConfig(identityConfigSchema, { PUBLIC_URL: bad })).toThrow(ConfigError);
      expect(() => loadConfig(identityConfigSchema, { PUBLIC_URL: bad })).toThrow(/PUBLIC_URL: Invalid url/);
    }
  });
});
