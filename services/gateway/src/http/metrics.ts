import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { eventPipelineMetrics, grpcServerMetrics, serviceMetrics } from '@cards/platform';
import type { RequestEndObserver } from './request-end';

/**
 * Prometheus registry with process metrics and one request-duration histogram labelled by route pattern, plus
 * the gRPC calls served, the event pipeline and the services' own metrics of this process (rate-limit hits; in the
 * all-in-one, every service's).
 */
export interface GatewayMetrics {
  registry: Registry;
  observe: RequestEndObserver;
}

export function createMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Gateway request duration by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  // Answers written in full only: a request whose client left first got no status to count it under.
  const observe: RequestEndObserver = ({ req, res, route, ms, answered }) => {
    if (answered) duration.observe({ method: req.method, route, status: String(res.statusCode) }, ms / 1000);
  };
  return { registry: Registry.merge([registry, grpcServerMetrics, eventPipelineMetrics, serviceMetrics]), observe };
}
