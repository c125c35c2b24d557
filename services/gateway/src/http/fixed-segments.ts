import type { Router } from 'express';

/** What the router keeps per route; `match` is its own matching (path-to-regexp), with no state kept. */
interface RouteLayer {
  route?: { path: unknown };
  match(path: string): { params: Record<string, string> } | false;
}

const PARAM = ':';

/** `/card_collection/:collection_id/:page` -> ['card_collection', ':collection_id', ':page']; undefined for patterns beyond plain segments. */
function segmentsOf(path: unknown): string[] | undefined {
  if (typeof path !== 'string' || !path.startsWith('/') || /[*{}()?+]/.test(path)) return undefined;
  return path.slice(1).split('/');
}

/** The segments before `index`, parameters written as `:`: routes that share it branch at `index`. */
function prefixKey(segments: string[], index: number): string {
  return segments
    .slice(0, index)
    .map((segment) => (segment.startsWith(PARAM) ? PARAM : segment))
    .join('/');
}

/**
 * A fixed path segment is never a parameter's value. `/card/:card_id` would also match `/card/count`,
 * `/card/update` and `/card/search`, and `/card_collection/:collection_id/:page` `/card_collection/search/1`:
 * such a path then got the parameter route's methods in Allow and its "must be a UUID" 400 for them.
 *
 * The fixed segments are read from the router's own routes: a literal segment of one route is fixed for every
 * route that has a parameter at the same place after the same segments. Each parameter route's layer is made not
 * to match a path whose parameter there holds one, both when the router routes (the request goes on to the next
 * route, else the 404/405 handler) and when unmatched.ts asks the layers which methods a path answers.
 * Call once, after every route is registered on `router`.
 */
export function keepFixedSegmentsOutOfParams(router: Router): void {
  const stack = (router as unknown as { stack?: RouteLayer[] }).stack ?? [];
  const caseSensitive = (router as unknown as { caseSensitive?: boolean }).caseSensitive === true;
  const fold = (segment: string) => (caseSensitive ? segment : segment.toLowerCase());
  const routes = stack.flatMap((layer) => {
    const segments = layer.route ? segmentsOf(layer.route.path) : undefined;
    return segments ? [{ layer, segments }] : [];
  });

  const fixed = new Map<string, Set<string>>();
  for (const { segments } of routes) {
    segments.forEach((segment, index) => {
      if (segment.startsWith(PARAM)) return;
      const key = prefixKey(segments, index);
      if (!fixed.has(key)) fixed.set(key, new Set());
      fixed.get(key)!.add(fold(segment));
    });
  }

  for (const { layer, segments } of routes) {
    const guarded = segments.flatMap((segment, index) => {
      const literals = segment.startsWith(PARAM) ? fixed.get(prefixKey(segments, index)) : undefined;
      return literals ? [{ name: segment.slice(PARAM.length), literals }] : [];
    });
    if (guarded.length === 0) continue;
    const match = layer.match.bind(layer);
    layer.match = (path) => {
      const matched = match(path);
      if (!matched) return matched;
      const takesFixed = guarded.some(({ name, literals }) => {
        const value = matched.params[name];
        return typeof value === 'string' && literals.has(fold(value));
      });
      return takesFixed ? false : matched;
    };
  }
}
