import { isIP } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import { AddressGuard, RefusedAddressError, UnresolvableHostError } from '../../domain/address-guard';
import type { PageFetchResult } from '../../domain/model';
import { pageEncoding } from '../../domain/page-encoding';
import { decodedBody } from './content-decoding';
import type { PageFetcher } from '../../domain/ports';

export interface UndiciPageFetcherOptions {
  guard: AddressGuard;
  /** Whole fetch budget, redirects included (VERIFY_TIMEOUT_MS, 10 s). */
  timeoutMs: number;
  /** Largest body accepted (VERIFY_MAX_BYTES, 5 MiB); larger pages are not scored. */
  maxBytes: number;
  maxRedirects?: number;
  /** The connector used after the guard has chosen the address; tests swap it to prove no connection is made. */
  baseConnector?: buildConnector.connector;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const TRANSIENT_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** Drops an unread body: undici then emits RequestAbortedError on it, which nobody else listens for. */
const discard = (body: { on(event: 'error', listener: () => void): unknown; destroy(): unknown }) => {
  body.on('error', () => undefined);
  body.destroy();
};

const fail = (failure: string, transient = false): PageFetchResult => ({ ok: false, failure, transient });

function errorChain(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = err; e && chain.length < 8; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

function describeError(err: unknown): PageFetchResult {
  const chain = errorChain(err);
  const refused = chain.find((e) => e instanceof RefusedAddressError);
  if (refused) return fail((refused as RefusedAddressError).message);
  const unresolvable = chain.find((e) => e instanceof UnresolvableHostError);
  if (unresolvable) return fail((unresolvable as UnresolvableHostError).message);
  // DOMException (the fetch timer's TimeoutError) is checked by name: it is not always an Error of this realm.
  if (chain.some((e) => ['TimeoutError', 'AbortError'].includes(String((e as { name?: unknown }).name)))) return fail('timed out', true);
  const code = chain.map((e) => (e as { code?: unknown }).code).find((c): c is string => typeof c === 'string');
  const message = err instanceof Error ? err.message : String(err);
  return fail(`fetch failed: ${code ?? message}`, code === undefined || TRANSIENT_CODES.has(code));
}

/**
 * Fetches a card's link with undici. The connector checks every resolved address through the
 * AddressGuard and connects to exactly the checked one, so literal IPs, names resolving to private
 * addresses and redirects to them (each hop is a new connection, re-checked) are all refused before
 * a packet is sent. Redirects are followed by hand, at most `maxRedirects`, http(s) only.
 */
export class UndiciPageFetcher implements PageFetcher {
  private readonly agent: Agent;
  private readonly maxRedirects: number;
  /** Aborted by close(): a stopping service does not wait out slow pages. */
  private readonly closing = new AbortController();

  constructor(private readonly options: UndiciPageFetcherOptions) {
    this.maxRedirects = options.maxRedirects ?? 5;
    const base = options.baseConnector ?? buildConnector({ timeout: options.timeoutMs });
    const guard = options.guard;
    const guarded: buildConnector.connector = (connectOptions, callback) => {
      const port = Number(connectOptions.port) || (connectOptions.protocol === 'https:' ? 443 : 80);
      guard.addressFor(connectOptions.hostname, port).then(
        (address) => {
          const hostname = connectOptions.hostname.replace(/^\[|\]$/g, '');
          // TLS still verifies the certificate against the name in the link.
          const servername = connectOptions.servername ?? (isIP(hostname) ? undefined : hostname);
          base({ ...connectOptions, hostname: address, servername }, callback);
        },
        (err: Error) => callback(err, null),
      );
    };
    this.agent = new Agent({ connect: guarded, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs, connections: 8 });
  }

  async fetchPage(link: string): Promise<PageFetchResult> {
    let url: URL;
    try {
      url = new URL(link);
    } catch {
      return fail('the link is not a valid URL');
    }
    if (this.closing.signal.aborted) return fail('interrupted: the fetcher is closed', true);
    // Not AbortSignal.any([AbortSignal.timeout(), closing]): on Node 20 the combined signal can lose its timer to GC
    // and never fire, so a trickled body (bodyTimeout only bounds gaps between chunks) was read to its end. The
    // timer kept here holds the controller until it fires or the fetch ends.
    const aborter = new AbortController();
    const timer = setTimeout(() => aborter.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), this.options.timeoutMs);
    const onClosing = () => aborter.abort(this.closing.signal.reason);
    this.closing.signal.addEventListener('abort', onClosing, { once: true });
    const signal = aborter.signal;
    try {
      for (let hop = 0; ; hop++) {
        if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail(`unsupported scheme ${url.protocol.replace(':', '')}: only http and https are fetched`);
        if (url.username || url.password) return fail('links with credentials are not fetched');
        const response = await request(url, {
          dispatcher: this.agent,
          method: 'GET',
          signal,
          // Only what is scored (DESIGN.md: text/html only): a server choosing by Accept sent XHTML, which then scored 0.
          headers: { accept: 'text/html', 'user-agent': 'CardLibraryVerifier/1.0' },
        });
        const { statusCode, headers, body } = response;
        if (REDIRECTS.has(statusCode)) {
          await body.dump();
          const location = headers.location;
          if (typeof location !== 'string' || location === '') return fail(`redirect ${statusCode} without a location`);
          if (hop >= this.maxRedirects) return fail(`more than ${this.maxRedirects} redirects`);
          try {
            url = new URL(location, url);
          } catch {
            return fail('redirect to an invalid URL');
          }
          continue;
        }
        if (statusCode < 200 || statusCode > 299) {
          await body.dump();
          return fail(`the page answered HTTP ${statusCode}`, statusCode >= 500 || statusCode === 429 || statusCode === 408);
        }
        const contentType = String(headers['content-type'] ?? '');
        if (!/^\s*text\/html\s*(;|$)/i.test(contentType)) {
          await body.dump();
          return fail(`not an HTML page (content-type ${contentType || 'missing'})`);
        }
        const declared = Number(headers['content-length']);
        if (Number.isFinite(declared) && declared > this.options.maxBytes) {
          discard(body);
          return fail(`page larger than ${this.options.maxBytes} bytes`);
        }
        const content = decodedBody(body, headers['content-encoding']);
        if (!content) {
          discard(body);
          return fail(`unsupported content-encoding ${String(headers['content-encoding'])}`);
        }
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of content) {
          size += (chunk as Buffer).length;
          if (size > this.options.maxBytes) {
            content.destroy();
            discard(body);
            return fail(`page larger than ${this.options.maxBytes} bytes`);
          }
          chunks.push(chunk as Buffer);
        }
        const bytes = Buffer.concat(chunks);
        const html = new TextDecoder(pageEncoding(contentType, bytes)).decode(bytes);
        return { ok: true, html, finalUrl: url.toString() };
      }
    } catch (err) {
      if (this.closing.signal.aborted) return fail('interrupted: the fetcher is closed', true);
      return describeError(err);
    } finally {
      clearTimeout(timer);
      this.closing.signal.removeEventListener('abort', onClosing);
    }
  }

  /** Aborts fetches in flight (they answer a transient "interrupted" failure) and closes connections. */
  async close(): Promise<void> {
    this.closing.abort();
    // destroy() can stay pending on a socket whose peer never answers; shutdown waits at most a moment.
    const destroyed = this.agent.destroy().catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([destroyed, new Promise<void>((resolve) => (timer = setTimeout(resolve, 500).unref()))]);
    clearTimeout(timer);
  }
}
