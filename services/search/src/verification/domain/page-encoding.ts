/** How far into a page the HTML standard looks for a `<meta>` naming the encoding. */
const PRESCAN_BYTES = 1024;

/** The WHATWG label as TextDecoder knows it, or undefined when TextDecoder does not know it. */
function knownEncoding(label: string | undefined): string | undefined {
  if (!label) return undefined;
  try {
    return new TextDecoder(label.trim()).encoding;
  } catch {
    return undefined;
  }
}

function byteOrderMarkEncoding(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  return undefined;
}

const charsetParameter = (value: string) => /charset\s*=\s*["']?\s*([^"';\s>]+)/i.exec(value)?.[1];

/** A tag's attributes, names lower-cased, the first of a repeated name kept (as the HTML parser keeps it). */
function attributesOf(tag: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const [, name, ...values] of tag.slice('<meta'.length).matchAll(/([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]*)))?/g)) {
    const key = name!.toLowerCase();
    if (!attributes.has(key)) attributes.set(key, values.find((v) => v !== undefined) ?? '');
  }
  return attributes;
}

/** `<meta charset>` or `<meta http-equiv="content-type" content="...; charset=...">` in the page's first 1024 bytes. */
function metaEncoding(bytes: Uint8Array): string | undefined {
  const head = Buffer.from(bytes.subarray(0, PRESCAN_BYTES)).toString('latin1').replace(/<!--[\s\S]*?(-->|$)/g, '');
  for (const [tag] of head.matchAll(/<meta[\s/][^>]*>?/gi)) {
    const attributes = attributesOf(tag);
    const charset = attributes.get('charset');
    const declared = charset ?? (attributes.get('http-equiv')?.trim().toLowerCase() === 'content-type' ? charsetParameter(attributes.get('content') ?? '') : undefined);
    const named = knownEncoding(declared);
    if (!named) continue;
    // A page that could be read as ASCII this far is not UTF-16, whatever it says (HTML standard, prescan).
    if (named.startsWith('utf-16')) return 'utf-8';
    return named === 'x-user-defined' ? 'windows-1252' : named;
  }
  return undefined;
}

/**
 * The encoding to read a fetched HTML page in, as a browser picks it (HTML standard, "determining the character
 * encoding"): a byte order mark, then the Content-Type header's charset, then a `<meta>` in the first 1024 bytes,
 * else UTF-8. Pages that name their encoding only in a `<meta>` are common; read as UTF-8 their accented words
 * would not match the card's and the page would score as unrelated.
 */
export function pageEncoding(contentType: string, bytes: Uint8Array): string {
  return byteOrderMarkEncoding(bytes) ?? knownEncoding(charsetParameter(contentType)) ?? metaEncoding(bytes) ?? 'utf-8';
}
