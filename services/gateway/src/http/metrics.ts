import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { grpcServerMetrics } from '@cards/platform';
import { routeLabel } from './route-label';

/**
 * Prometheus registry with process metrics and one request-duration histogram labelled by route pattern, plus
 * the gRPC calls served in this process: the all-in-one's services (none in a gateway process of its own).
 */
export function createMetrics(): { registry: Registry; middleware: RequestHandler } {
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
    res.on('finish', () => end({ method: req.method, route: routeLabel(req, res), status: String(res.statusCode) }));
    next();
  };
  return { registry: Registry.merge([registry, grpcServerMetrics]), middleware };
}
