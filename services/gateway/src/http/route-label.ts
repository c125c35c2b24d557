import type { NextFunction, Request, Response } from 'express';

const MOUNT_PATH = 'routeMountPath';
const PATTERN_BEFORE_ROUTE = 'routePatternBeforeRoute';

/**
 * For a request refused before its route ran (a malformed or cut-off JSON body, read before routing): the pattern of
 * the route its method and path would have reached, as the route index finds it (never the path itself).
 */
export function recordPatternBeforeRoute(res: Response, pattern: string): void {
  res.locals[PATTERN_BEFORE_ROUTE] = pattern;
}

/**
 * The first handler of a nested router notes the path it is mounted at, as registered: express resets
 * req.baseUrl when an error leaves the router (a failed /api/auth would be labelled "/auth"), and
 * req.baseUrl is spelled as the request spelled it (/API/auth), which would let clients mint labels.
 */
export function recordMountPath(mountPath: string) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.locals[MOUNT_PATH] = mountPath;
    next();
  };
}

/**
 * The route pattern that answered (`/api/card/:card_id`), or "unmatched": bounded label cardinality for
 * metrics, and no ids, e-mail addresses or query strings in the access log. Read once the answer is sent.
 */
export function routeLabel(req: Request, res: Response): string {
  // Routes registered on the app itself have no mount path; a nested router records its own.
  const route = (req.route as { path?: string } | undefined)?.path;
  if (!route) return (res.locals[PATTERN_BEFORE_ROUTE] as string | undefined) ?? 'unmatched';
  const mountPath = (res.locals[MOUNT_PATH] as string | undefined) ?? '';
  return `${mountPath}${route}`;
}
