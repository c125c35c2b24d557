import { ConfigError } from '@cards/platform';
import { refuseIdentityEmbeddedStores } from '../src/config';

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
