import { checkDeliverableEmail, checkNewPassword, emailSpellings, emailVisibilityCondition, normalizeEmail, normalizeUsername, normalizeWebsite, shownEmail } from '../src/domain/rules';

describe('identity rules', () => {
  it.each(['plain', 'a@b', '@example.com', 'a b@example.com', `${'x'.repeat(250)}@example.com`])('refuses %s as an e-mail', (email) => {
    expect(() => normalizeEmail(email)).toThrow(/email/);
  });
  it('normalizes e-mail case and spaces', () => {
    expect(normalizeEmail('  Ann.Lee+x@Example.ORG ')).toBe('ann.lee+x@example.org');
  });
  it('gives every Unicode spelling of an address one form (NFC, the domain in ASCII), lower-cased without a locale', () => {
    const composed = 'j\u00f6rg@xn--exmple-cua.com';
    expect(normalizeEmail('J\u00d6RG@EX\u00c4MPLE.COM')).toBe(composed);
    expect(normalizeEmail('Jo\u0308rg@Exa\u0308mple.com')).toBe(composed);
    expect(normalizeEmail('JO\u0308RG@EXA\u0308MPLE.COM')).toBe(composed);
    expect(normalizeEmail('J\u00d6RG@XN--EXMPLE-CUA.COM')).toBe(composed);
    // Turkish dotted capital I lower-cases to i and a combining dot (as UTS #46 maps it), not to a plain i.
    expect(normalizeEmail('\u0130stanbul@example.com')).toBe('i\u0307stanbul@example.com');
    expect(normalizeEmail('I\u0307stanbul@example.com')).toBe('i\u0307stanbul@example.com');
  });
  it("puts an address's domain in IDNA's ASCII form: one address for its Unicode and punycode spellings", () => {
    expect(normalizeEmail('x@ex\u00e4mple.com')).toBe('x@xn--exmple-cua.com');
    expect(normalizeEmail('x@xn--exmple-cua.com')).toBe('x@xn--exmple-cua.com');
    // UTS #46 mapping: full-width letters are the ASCII ones; ß stays (non-transitional).
    expect(normalizeEmail('x@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com')).toBe('x@example.com');
    expect(normalizeEmail('x@stra\u00dfe.de')).toBe('x@xn--strae-oqa.de');
    expect(normalizeEmail('\u00e4@b\u00fccher.example')).toBe('\u00e4@xn--bcher-kva.example');
    // A domain IDNA refuses stays as written (nobody registered before is locked out).
    expect(normalizeEmail('x@xn--a.com')).toBe('x@xn--a.com');
  });
  it("shows an address with its domain in Unicode, one form for every stored spelling; the local part as stored", () => {
    expect(shownEmail('j\u00f6rg@xn--exmple-cua.com')).toBe('j\u00f6rg@ex\u00e4mple.com');
    // Stored before the ASCII rule, as typed (lower-cased NFC): shown as the ASCII form of today is.
    expect(shownEmail('x@ex\u00e4mple.com')).toBe('x@ex\u00e4mple.com');
    expect(shownEmail('x@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com')).toBe('x@example.com');
    expect(shownEmail('x@xn--strae-oqa.de')).toBe('x@stra\u00dfe.de');
    expect(shownEmail('ann@example.org')).toBe('ann@example.org');
    for (const typed of ['X@EX\u00c4MPLE.COM', 'x@exa\u0308mple.com', 'x@XN--EXMPLE-CUA.COM']) expect(shownEmail(normalizeEmail(typed))).toBe('x@ex\u00e4mple.com');
    // A domain IDNA refuses is shown as stored.
    expect(shownEmail('x@xn--a.com')).toBe('x@xn--a.com');
  });
  it('shows a domain in Unicode only when the IDN display policy of links passes it, else in its ASCII (xn--) form', () => {
    // Whole-label Cyrillic look-alike of "apple", and mixed scripts: shown as a browser's address bar shows them.
    expect(shownEmail('ceo@xn--80ak6aa92e.com')).toBe('ceo@xn--80ak6aa92e.com');
    expect(shownEmail(normalizeEmail('ceo@p\u0430ypal.com'))).toBe('ceo@xn--pypal-4ve.com');
    // Stored before the ASCII rule as typed: shown in ASCII too.
    expect(shownEmail('ceo@p\u0430ypal.com')).toBe('ceo@xn--pypal-4ve.com');
    expect(shownEmail('ceo@\u0430\u0440\u0440\u04cf\u0435.com')).toBe('ceo@xn--80ak6aa92e.com');
    // Cyrillic under a Cyrillic top-level domain, and Latin with Han: Unicode.
    expect(shownEmail(normalizeEmail('ivan@\u0441\u043e\u0440.\u0440\u0444'))).toBe('ivan@\u0441\u043e\u0440.\u0440\u0444');
    expect(shownEmail(normalizeEmail('x@google\u65e5\u672c.jp'))).toBe('x@google\u65e5\u672c.jp');
  });
  it('drops one final dot of the domain (the fully qualified spelling of one mailbox); refuses an empty label', () => {
    expect(normalizeEmail('Bob@Example.COM.')).toBe('bob@example.com');
    expect(normalizeEmail('bob@ex\u00e4mple.com.')).toBe('bob@xn--exmple-cua.com');
    expect(normalizeEmail('bob@example.com\u3002')).toBe('bob@example.com');
    for (const email of ['bob@example.com..', 'bob@a..com', 'bob@.example.com', 'bob@ex\u00e4mple..com']) {
      expect(() => normalizeEmail(email)).toThrow(/^email: the domain has an empty part/);
    }
    // An account stored before under a final dot is still found by the spelling without it (last), and as typed (first).
    expect(emailSpellings('bob@example.com.')).toEqual(['bob@example.com.', 'bob@example.com']);
    expect(emailSpellings('bob@example.com').at(-1)).toBe('bob@example.com.');
    // One stored before with an empty label logs in only as typed.
    expect(emailSpellings('Bob@Example.com..')).toEqual(['bob@example.com..']);
  });
  it('looks an address up as stored before (as typed), as stored now, then with its domain in Unicode', () => {
    expect(emailSpellings(' X@Ex\u00e4mple.com ')).toEqual(['x@ex\u00e4mple.com', 'x@xn--exmple-cua.com', 'x@xn--exmple-cua.com.', 'x@ex\u00e4mple.com.']);
    expect(emailSpellings('x@XN--exmple-cua.com')).toEqual(['x@xn--exmple-cua.com', 'x@ex\u00e4mple.com', 'x@xn--exmple-cua.com.', 'x@ex\u00e4mple.com.']);
    expect(emailSpellings('ann@example.org')).toEqual(['ann@example.org', 'ann@example.org.']);
    expect(() => emailSpellings('not an address')).toThrow(/email/);
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
  it.each(['ab', 'x'.repeat(33), 'with space', 'semi;colon', 'a.b', '\u00e9'.repeat(33), '\u0301ab'])('refuses username %j', (u) => {
    expect(() => normalizeUsername(u)).toThrow(/^username: /);
  });
  it.each(['abc', 'A_b-9', 'x'.repeat(32), '\u00e9mile', '\uae40\ucca0\uc218', 'Zo\u00eb', '\u5c71\u7530\u592a\u90ce', '\u6771\u4eac\u30bf\u30ef\u30fc', '\u0414\u043c\u0438\u0442\u0440\u0438\u0439', '\u03a3\u03c9\u03ba\u03c1\u03ac\u03c4\u03b7\u03c2', '\u0939\u093f\u0928\u094d\u0926\u0940', '\u0661\u0662\u0663'])(
    'accepts username %j as it is in NFC',
    (u) => {
      expect(normalizeUsername(u)).toBe(u);
    },
  );
  it('stores a username in NFC: "Zoë" typed as "e" and a combining diaeresis is "Zoë"; 32 letters with marks fit', () => {
    expect(normalizeUsername('Zoe\u0308')).toBe('Zo\u00eb');
    // 32 "é" are 64 code points in NFD and 32 in NFC: the length is counted on the NFC form.
    expect(normalizeUsername('\u00e9'.repeat(32).normalize('NFD'))).toBe('\u00e9'.repeat(32));
  });
  it('refuses look-alikes: mixed scripts, invisible characters, compatibility letters, digits of two systems', () => {
    // "pаypal" with a Cyrillic а (U+0430).
    expect(() => normalizeUsername('p\u0430ypal')).toThrow('username: must be written in one script (Han may go with Hiragana, Katakana or Hangul): found Latin "p" (U+0070) and Cyrillic "\u0430" (U+0430)');
    expect(() => normalizeUsername('\u5c71\u7530\ud55c')).not.toThrow(); // Han with Hangul
    expect(() => normalizeUsername('\u3072\ud55c\u5c71')).toThrow(/one script.*Hiragana.*Hangul/); // Hiragana with Hangul
    expect(() => normalizeUsername('ad\u200bmin')).toThrow('username: must not contain invisible characters (found U+200B)');
    expect(() => normalizeUsername('\uff41\uff44\uff4d\uff49\uff4e')).toThrow(/username: must not contain compatibility characters.*U\+FF41/);
    expect(() => normalizeUsername('12\u0663')).toThrow('username: must not mix digits of different systems (found "1" (U+0031) and "\u0663" (U+0663))');
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
    ['https://u:p@x.com', /^website: must be an http or https URL without a user name or password/],
    ['https://x..com', /^website: must be an http or https URL whose host is a domain name .*\(found "x\.\.com"\)$/],
    ['https://-x-.com', /^website: .*whose host is a domain name/],
    [`https://${'a'.repeat(64)}.com`, /^website: .*whose host is a domain name/],
    ['https://accounts.google.com\u2044signin.evil.example/', /^website: must be an http or https URL whose host reads as the site it opens: "com⁄signin" holds "⁄" \(U\+2044\)/],
    ['https://аpple.com', /^website: .*whose host reads as the site it opens: "аpple" mixes scripts/],
  ])('refuses website %j, not written in full, holding an invisible character or credentials, or with an invalid host', (w, message) => {
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
