import { pageEncoding } from '../src/verification/domain/page-encoding';

const bytes = (text: string) => Buffer.from(text, 'latin1');

describe('pageEncoding', () => {
  it('takes the Content-Type charset first', () => {
    expect(pageEncoding('text/html; charset=ISO-8859-1', bytes('<meta charset="utf-8"><p>caf\xe9</p>'))).toBe('windows-1252');
    expect(pageEncoding('text/html;charset="shift_jis"', bytes('<p>x</p>'))).toBe('shift_jis');
  });

  it('reads a <meta charset> or <meta http-equiv content-type> when the header names none', () => {
    expect(pageEncoding('text/html', bytes('<!doctype html><html><head><meta charset="iso-8859-1"><title>t</title>'))).toBe('windows-1252');
    expect(pageEncoding('text/html', bytes("<head><META HTTP-EQUIV='Content-Type' CONTENT='text/html; charset=koi8-r'>"))).toBe('koi8-r');
    expect(pageEncoding('text/html', bytes('<head><meta name=viewport content="width=device-width"><meta charset=windows-1250>'))).toBe('windows-1250');
  });

  it('lets a byte order mark win over everything', () => {
    expect(pageEncoding('text/html; charset=iso-8859-1', Buffer.from([0xef, 0xbb, 0xbf, 0x3c]))).toBe('utf-8');
    expect(pageEncoding('text/html', Buffer.from([0xff, 0xfe, 0x3c, 0x00]))).toBe('utf-16le');
    expect(pageEncoding('text/html', Buffer.from([0xfe, 0xff, 0x00, 0x3c]))).toBe('utf-16be');
  });

  it('falls back to UTF-8 for unknown labels, a meta in a comment or past 1024 bytes, and a meta claiming UTF-16', () => {
    expect(pageEncoding('text/html; charset=no-such-encoding', bytes('<p>x</p>'))).toBe('utf-8');
    expect(pageEncoding('text/html', bytes('<!-- <meta charset="koi8-r"> --><p>x</p>'))).toBe('utf-8');
    expect(pageEncoding('text/html', bytes(`<p>${'x'.repeat(1100)}</p><meta charset="koi8-r">`))).toBe('utf-8');
    expect(pageEncoding('text/html', bytes('<meta charset="utf-16le">'))).toBe('utf-8');
    expect(pageEncoding('text/html', bytes('<meta http-equiv="refresh" content="0; charset=koi8-r">'))).toBe('utf-8');
  });
});
