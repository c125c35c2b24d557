/**
 * The text a reader sees on an HTML page: entities decoded, tags turned into word breaks, invisible elements (script,
 * style, noscript, template, svg, math, iframe, object, canvas) dropped, whitespace collapsed. Linear in the page.
 */
export declare function visibleText(html: string): string;
