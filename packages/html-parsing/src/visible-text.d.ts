/**
 * The text a reader sees on an HTML page: entities decoded, tags other than inline ones (a, b, span, em, wbr...)
 * turned into word breaks, invisible elements (script, style, noscript, template, svg, math, iframe, object, canvas)
 * and characters (soft hyphen, zero-width space, word joiner, BOM) dropped, whitespace collapsed. Linear in the page.
 */
export declare function visibleText(html: string): string;
