/**
 * A URL for logs and error messages: its password masked, and the value of every query parameter (an api_key=..., a
 * signature) masked too; the scheme, user name, host, port and path are kept. Text that is no URL is answered as
 * "(not a URL)", never as given (it may be a secret pasted into the wrong variable).
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '(not a URL)';
  }
  if (parsed.password) parsed.password = '***';
  if (parsed.search) {
    const keys = [...new Set(parsed.searchParams.keys())];
    parsed.search = keys.map((key) => `${encodeURIComponent(key)}=***`).join('&');
  }
  parsed.hash = '';
  return parsed.toString();
}
