import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';

const MOUNT_PATH = 'metricsMountPath';

/** Prometheus registry with process metrics and one request-duration histogram labelled by route pattern. */
export function createMetrics(): { registry: Registry; middleware: RequestHandler; recordMountPath: RequestHandler } {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Gateway request duration by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const middleware = (req: Request, res: Response, next: NextFunction) => {
    const end = duration.startTimer();
    res.on('finish', () => {
      // The route pattern, not the path, keeps label cardinality bounded.
      const route = (req.route as { path?: string } | undefined)?.path;
      const mountPath = (res.locals[MOUNT_PATH] as string | undefined) ?? req.baseUrl;
      end({ method: req.method, route: route ? `${mountPath}${route}` : 'unmatched', status: String(res.statusCode) });
    });
    next();
  };
  // Express resets req.baseUrl when an error leaves a nested router, so a failed /api/auth would be
  // counted as "/auth": the router's first handler notes where it is mounted.
  const recordMountPath = (req: Request, res: Response, next: NextFunction) => {
    res.locals[MOUNT_PATH] = req.baseUrl;
    next();
  };
  return { registry, middleware, recordMountPath };
}
