import { confusableSkeleton, usernameKey, usernameKeyAsWritten } from '../src/domain/username-key';

describe('usernameKey', () => {
  it('makes names that look alike across scripts one key (UTS #39 skeleton of the case fold)', () => {
    const same = [
      ['coco', '\u0441\u043e\u0441\u043e', 'COCO', '\u0421\u041e\u0421\u041e'], // Latin and Cyrillic
      ['paypal', '\u0440\u0430\u0443\u0440\u0430l', 'PayPal'],
      ['admin', '\u0430dmin', 'adrnin', 'ADMIN'],
      ['b0b', 'bob', 'BOB'],
      ['user_1', 'user_l'],
      ['\u0645\u062d\u0645\u062f', '\u0645\u0640\u062d\u0645\u062f', '\u0645\u0640\u0640\u0640\u062d\u0645\u062f'], // tatweel, stored before it was refused
      // The case-folding equivalences stay.
      ['Zo\u00eb', 'ZO\u00cb', 'zoe\u0308'],
      ['Stra\u00dfe', 'STRASSE', 'strasse', 'STRA\u1e9eE'],
      ['\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3', '\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2', '\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c3'],
      ['\u0414\u043c\u0438\u0442\u0440\u0438\u0439', '\u0414\u041c\u0418\u0422\u0420\u0418\u0419'],
      ['CardFan', 'cardfan', 'CARDFAN'],
    ];
    for (const names of same) expect(new Set(names.map(usernameKey))).toEqual(new Set([usernameKey(names[0]!)]));
    const different = [
      ['Zoe', 'Zo\u00eb'],
      ['Zo\u00e9', 'Zoe'],
      ['\uae40\ucca0\uc218', '\uae40\ucca0\uc2182'],
      ['coco', 'cocoa'],
      ['a-b', 'a_b'],
    ];
    for (const [a, b] of different) expect(usernameKey(a!)).not.toBe(usernameKey(b!));
  });

  it('leaves names apart that only read alike before case folding: a capital I folds to i, not l', () => {
    for (const [a, b] of [['wiII', 'will'], ['BiII', 'Bill'], ['Ian', 'lan'], ['xIx', 'x1x']]) expect(usernameKey(a!)).not.toBe(usernameKey(b!));
  });

  it('is the stored key: these values may only change with a migration that keys every stored name again', () => {
    expect(usernameKey('CardFan')).toBe('cardfan');
    expect(usernameKey('\u0441\u043e\u0441\u043e')).toBe('coco');
    expect(usernameKey('admin')).toBe('adrnin');
    expect(usernameKey('Stra\u00dfe')).toBe('strasse');
    expect(usernameKey('\uae40\ucca0\uc218')).toBe('\u1100\u4e28\u1106\ucc98\u1105\uc218');
    expect(confusableSkeleton('\u0441\u043e\u0441\u043e')).toBe('coco');
    expect(confusableSkeleton('0')).toBe('O');
  });
});

describe('usernameKey and SQLite\'s lower()', () => {
  /** SQLite's built-in lower(): ASCII letters only (users_username, the unique index of the releases before username_key). */
  const sqliteLower = (name: string) => name.replace(/[A-Z]/g, (letter) => letter.toLowerCase());
  const letters = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'];
  const marks: string[] = [];
  for (let codePoint = 0; codePoint <= 0x10ffff; codePoint++) {
    if (codePoint >= 0xd800 && codePoint <= 0xdfff) continue;
    const character = String.fromCodePoint(codePoint);
    if (/\p{M}/u.test(character)) marks.push(character);
  }
  /** The marks a precomposed letter of an ASCII base decomposes to ("\u00c5" is "A" and U+030A): those NFC composes with one. */
  const composing = new Set<string>();
  for (let codePoint = 0x80; codePoint <= 0x10ffff; codePoint++) {
    if (codePoint >= 0xd800 && codePoint <= 0xdfff) continue;
    const [base, ...rest] = String.fromCodePoint(codePoint).normalize('NFD');
    if (base !== undefined && /^[A-Za-z]$/.test(base)) for (const mark of rest) composing.add(mark);
  }

  it('gives names equal under lower() one key, so the key index implies users_username (migration 8)', () => {
    const keysDiffer: string[] = [];
    const expectOneKey = (upper: string) => {
      const lower = sqliteLower(upper);
      if (usernameKey(upper) !== usernameKey(lower)) keysDiffer.push(upper);
    };
    for (const name of ['CardFan', 'WILL', 'wiII', 'BOB', 'B0B', 'User_1-X', 'StraSSe', 'ZO\u00cb', 'Zo\u00eb', '\u0421\u041e\u0421\u041e', 'IST\u0130', 'KELVIN\u212a']) expectOneKey(name);
    // An ASCII capital and its small letter before any one mark (NFC composes some with the capital only: "I" and
    // U+0307 are "\u0130"), and before any two marks that compose with an ASCII letter ("A", U+0323, U+0302 is "\u1ead").
    for (const letter of letters) {
      for (const mark of marks) expectOneKey(`x${letter}${mark}y`);
      for (const first of composing) for (const second of composing) expectOneKey(`${letter}${first}${second}${letter}`);
    }
    expect(marks.length).toBeGreaterThan(2000);
    expect(composing.size).toBeGreaterThan(20);
    expect(keysDiffer).toEqual([]);
  });
});

describe('usernameKeyAsWritten', () => {
  it('makes names that read alike as written one key: the skeleton of the name, then the case fold', () => {
    const same = [
      ['wiII', 'will', 'Will', 'wi11'], // capital i's, small l's, digits one
      ['BiII', 'Bill', 'bill'],
      ['Ian', 'lan', '1an'],
      ['IAN', 'lan'],
      ['coco', '\u0441\u043e\u0441\u043e', 'COCO', '\u0421\u041e\u0421\u041e'],
      ['b0b', 'bob', 'BOB'],
    ];
    for (const names of same) expect(new Set(names.map(usernameKeyAsWritten))).toEqual(new Set([usernameKeyAsWritten(names[0]!)]));
    // Different letters stay different; what only folding first joins is usernameKey's to join.
    for (const [a, b] of [['wiii', 'will'], ['coco', 'cocoa'], ['Zoe', 'Zo\u00eb']]) expect(usernameKeyAsWritten(a!)).not.toBe(usernameKeyAsWritten(b!));
    expect(usernameKeyAsWritten('\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3')).not.toBe(usernameKeyAsWritten('\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2'));
    expect(usernameKey('\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3')).toBe(usernameKey('\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2'));
  });

  it('is a stored key: these values may only change with a migration that keys every stored name again', () => {
    expect(usernameKeyAsWritten('wiII')).toBe('will');
    expect(usernameKeyAsWritten('CardFan')).toBe('cardfan');
    expect(usernameKeyAsWritten('ADMIN')).toBe('admln');
    expect(usernameKeyAsWritten('\u0441\u043e\u0441\u043e')).toBe('coco');
  });
});
