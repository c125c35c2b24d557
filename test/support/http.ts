/** A tiny cookie-keeping HTTP client for end-to-end tests: one instance = one browser. */
export class ApiClient {
  cookie: string | undefined;

  constructor(readonly baseUrl: string) {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
    }
    if (this.cookie) (init.headers as Record<string, string>).cookie = this.cookie;
    const res = await fetch(`${this.baseUrl}${path}`, init);
    const setCookie = res.headers.getSetCookie();
    for (const c of setCookie) {
      const [pair] = c.split(';');
      if (pair?.startsWith('ai-editor=')) this.cookie = pair === 'ai-editor=' ? undefined : pair;
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json: json as any, setCookie };
  }

  get(path: string) {
    return this.request('GET', path);
  }
  post(path: string, body?: unknown) {
    return this.request('POST', path, body ?? {});
  }
  put(path: string, body?: unknown) {
    return this.request('PUT', path, body ?? {});
  }
  delete(path: string, body?: unknown) {
    return this.request('DELETE', path, body);
  }
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any;
  setCookie: string[];
}
