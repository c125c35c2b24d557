import type { Request } from 'express';
import { nfcText, parseBody } from '../src/http/validation';
import { createCardBody } from '../src/routes/card-routes';
import { createCollectionBody } from '../src/routes/collection-routes';
import { createFileBody } from '../src/routes/file-routes';
import { loginBody, registerBody, updateUserBody } from '../src/routes/identity-routes';
import { cardSearchBody } from '../src/routes/search-routes';

const composed = 'caf\u00e9 Z\u00fcrich \uc548\ub155'; // "café Zürich 안녕": é, ü and two Hangul syllables precomposed
const decomposed = composed.normalize('NFD');
const request = (body: unknown) => ({ body }) as Request;

describe('user text is put in Unicode NFC at the gateway (parseBody)', () => {
  it('the test strings differ as sent', () => {
    expect(decomposed).not.toBe(composed);
    expect(decomposed.normalize('NFC')).toBe(composed);
  });

  it('a card: its tags, link and html', () => {
    const body = parseBody(createCardBody, request({ card_html: `<p>${decomposed}</p>`, link: `https://example.org/${decomposed}`, private: false, tag_set: [decomposed, `${decomposed}, x`] }));
    expect(body.card_html).toBe(`<p>${composed}</p>`);
    expect(body.link).toBe(`https://example.org/${composed}`);
    expect(body.tag_set).toEqual([composed, `${composed}, x`]);
    // One tag sent in both forms is one tag.
    expect(parseBody(createCardBody, request({ card_html: 'x', link: 'y', private: false, tag_set: [composed, decomposed] })).tag_set).toEqual([composed]);
    expect(parseBody(createCardBody, request({ card_html: 'x', link: 'y', private: false, tag_set: `${decomposed},${composed}` })).tag_set).toEqual([composed]);
  });

  it('search queries and their tag and link filters', () => {
    const body = parseBody(cardSearchBody, request({ content: decomposed, tag_set: [decomposed], link: [decomposed] }));
    expect(body).toEqual({ content: composed, tag_set: [composed], link: [composed] });
  });

  it('names, usernames-to-be and websites, e-mails; lengths are counted on the NFC form', () => {
    expect(parseBody(createCollectionBody, request({ name: decomposed, description: decomposed, is_public: true }))).toMatchObject({ name: composed, description: composed });
    expect(parseBody(updateUserBody, request({ website: `https://${decomposed}.example` })).website).toBe(`https://${composed}.example`);
    expect(parseBody(loginBody, request({ email: `${decomposed}@example.com`, password: 'p' }), { comparedOnly: true }).email).toBe(`${composed}@example.com`);
    // 255 "é" are 255 characters in NFC, 510 code points in NFD: the stored name fits.
    const name = '\u00e9'.repeat(255);
    const file = parseBody(createFileBody, request({ base64_docx_file: 'AAAA', file_name: name.normalize('NFD'), file_mime_type: 'x', private: false }));
    expect(file.file_name).toBe(name);
  });

  it('keeps passwords as sent (their stored hashes were made from the raw string) and opaque fields too', () => {
    const password = `p\u00e4ss-${decomposed}`.normalize('NFD');
    const registered = parseBody(registerBody, request({ password, password_confirmation: password }));
    expect(registered).toEqual({ password, password_confirmation: password });
    expect(parseBody(loginBody, request({ email: 'a@example.com', password }), { comparedOnly: true }).password).toBe(password);
    expect(nfcText({ base64_docx_file: decomposed, referral_tokens: [decomposed], tag_set: [decomposed] })).toEqual({ base64_docx_file: decomposed, referral_tokens: [decomposed], tag_set: [composed] });
  });

  it('walks nested values, leaves other types and keys alone, and keeps a "__proto__" key a plain key', () => {
    expect(nfcText({ a: [1, null, true, { b: decomposed }], [decomposed]: decomposed })).toEqual({ a: [1, null, true, { b: composed }], [decomposed]: composed });
    const parsed = nfcText(JSON.parse(`{"__proto__": {"polluted": "${decomposed}"}}`)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.keys(parsed)).toEqual(['__proto__']);
    expect((parsed as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('keeps an unpaired surrogate, so the ill-formed text check still refuses it', () => {
    expect(nfcText('a\ud800')).toBe('a\ud800');
    expect(() => parseBody(createCollectionBody, request({ name: `${decomposed}\ud800`, is_public: true }))).toThrow(/name:/);
  });
});
