import { checkDeliverableEmail, checkNewPassword, checkUsername, emailVisibilityCondition, normalizeEmail, normalizeWebsite } from '../src/domain/rules';

describe('identity rules', () => {
  it.each(['plain', 'a@b', '@example.com', 'a b@example.com', `${'x'.repeat(250)}@example.com`])('refuses %s as an e-mail', (email) => {
    expect(() => normalizeEmail(email)).toThrow(/email/);
  });
  it('normalizes e-mail case and spaces', () => {
    expect(normalizeEmail('  Ann.Lee+x@Example.ORG ')).toBe('ann.lee+x@example.org');
  });
  it('gives every Unicode spelling of an address one form (NFC), lower-cased without a locale', () => {
    const composed = 'j\u00f6rg@ex\u00e4mple.com';
    expect(normalizeEmail('J\u00d6RG@EX\u00c4MPLE.COM')).toBe(composed);
    expect(normalizeEmail('Jo\u0308rg@Exa\u0308mple.com')).toBe(composed);
    expect(normalizeEmail('JO\u0308RG@EXA\u0308MPLE.COM')).toBe(composed);
    // Turkish dotted capital I lower-cases to i and a combining dot (as UTS #46 maps it), not to a plain i.
    expect(normalizeEmail('\u0130stanbul@example.com')).toBe('i\u0307stanbul@example.com');
    expect(normalizeEmail('I\u0307stanbul@example.com')).toBe('i\u0307stanbul@example.com');
  });
  it('invites only addresses mail servers accept: local part up to 64 octets, domain labels up to 63', () => {
    expect(() => checkDeliverableEmail(`${'x'.repeat(64)}@example.com`)).not.toThrow();
    expect(() => checkDeliverableEmail(`${'x'.repeat(65)}@example.com`)).toThrow(/before @ must be at most 64/);
    // Octets, not characters: 33 two-octet letters are 66 octets.
    expect(() => checkDeliverableEmail(`${'\u00e4'.repeat(33)}@example.com`)).toThrow(/before @/);
    expect(() => checkDeliverableEmail(`a@${'d'.repeat(64)}.com`)).toThrow(/63 characters per label/);
    expect(() => checkDeliverableEmail(`a@${'d'.repeat(63)}.com`)).not.toThrow();
  });
  it('requires 8+ characters and a matching confirmation', () => {
    expect(() => checkNewPassword('1234567', '1234567')).toThrow(/at least 8/);
    expect(() => checkNewPassword('12345678', '12345679')).toThrow(/password_confirmation/);
    expect(() => checkNewPassword('12345678', '12345678')).not.toThrow();
  });
  it('counts password characters as code points, not UTF-16 units', () => {
    expect(() => checkNewPassword('😀😀😀😀', '😀😀😀😀')).toThrow(/at least 8/);
    expect(() => checkNewPassword('😀😀😀😀😀😀😀😀', '😀😀😀😀😀😀😀😀')).not.toThrow();
  });
  it.each(['ab', 'x'.repeat(33), 'with space', 'émile', 'semi;colon'])('refuses username %s', (u) => {
    expect(() => checkUsername(u)).toThrow(/username/);
  });
  it.each(['abc', 'A_b-9', 'x'.repeat(32)])('accepts username %s', (u) => {
    expect(() => checkUsername(u)).not.toThrow();
  });
  it.each(['javascript:alert(1)', 'ftp://x.org', 'not a url', `https://x.org/${'a'.repeat(520)}`, 'https://x.org/a b', 'https://x.\norg', 'https://x.org/\ta'])(
    'refuses website %j',
    (w) => {
      expect(() => normalizeWebsite(w)).toThrow(/website/);
    },
  );
  it.each([
    ['https:/x.org', /^website: must be an http or https URL written in full/],
    ['https:///x.org', /^website: must be an http or https URL written in full/],
    ['https:\\\\x.org', /^website: must be an http or https URL without backslashes$/],
    ['https://x.org/\u200b', /^website: must be an http or https URL without invisible characters \(found U\+200B\)$/],
    ['https://x.org\ufeff', /found U\+FEFF/],
    ['https://x.org/\u202e', /found U\+202E/],
    ['https://ex\u034F.com', /found U\+034F/],
    ['https://x.org\u3164@evil.example/', /found U\+3164/],
  ])('refuses website %j, not written in full or holding an invisible character', (w, message) => {
    expect(() => normalizeWebsite(w)).toThrow(message);
  });
  it('stores the website trimmed and otherwise as written', () => {
    expect(normalizeWebsite('  https://x.org \n')).toBe('https://x.org');
    expect(normalizeWebsite('HTTPS://X.org/Path?q=1')).toBe('HTTPS://X.org/Path?q=1');
  });
  it('says what the stored profile must hold for a change to keep the e-mail hidden only behind a username', () => {
    expect(emailVisibilityCondition({ visibleEmail: false })).toBe('has-username');
    expect(emailVisibilityCondition({ username: null })).toBe('email-visible');
    expect(emailVisibilityCondition({ visibleEmail: false, username: 'pat' })).toBe('none');
    expect(emailVisibilityCondition({ visibleEmail: true, username: null })).toBe('none');
    expect(emailVisibilityCondition({ website: 'https://x.org' })).toBe('none');
    expect(() => emailVisibilityCondition({ visibleEmail: false, username: null })).toThrow(/visible_email/);
  });
});
