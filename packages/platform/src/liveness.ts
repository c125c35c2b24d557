/**
 * Liveness over HTTP: `GET /livez` answers 200 with this body while the process answers HTTP at all (its event loop
 * turns). Nothing else is asked, so a peer or engine outage never restarts a process; a wedged one (a TCP connect still
 * succeeds) fails it. The gateway answers it on its HTTP port and every metrics listener (startMetricsServer) on its
 * own port, which no connection cap nor request admission of the gateway's port counts: the chart's startup and
 * liveness probes ask it there, so a connection flood on the gateway's port cannot get the pod restarted.
 */
export const LIVENESS_PATH = '/livez';

/** The body of a 200 to GET /livez, wherever it is answered. */
export const LIVENESS_ANSWER: Readonly<{ status: 'ok' }> = Object.freeze({ status: 'ok' });

/**
 * Readiness over HTTP: `GET /healthz` answers 200 while every service behind the gateway answers SERVING, else 503 with
 * a {"message"} naming those that do not. The gateway answers it on its HTTP port, and on its metrics listener
 * (startMetricsServer's `readiness`) where the all-in-one image's health check asks it.
 */
export const READINESS_PATH = '/healthz';

/** What GET /healthz answers: its status code and JSON body. */
export interface ReadinessAnswer {
  status: 200 | 503;
  body: { status: 'ok' } | { message: string };
}
