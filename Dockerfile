# syntax=docker/dockerfile:1
# Card Library Service: one image per service, all from this file.
#   docker build --target <gateway|identity|cards|search|files|notifications|all-in-one> -t card-library-<target> .
# Services run their TypeScript sources through tsx's loader in one node process (no separate compile step).
# One exact Node release (the one the test suite runs on), so a rebuild does not pick up another.
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

# ---- toolchain shared by the build stage: pnpm, pinned to the repository's packageManager ----
FROM ${NODE_IMAGE} AS pnpm
ENV PNPM_HOME=/pnpm PATH=/pnpm:$PATH CI=true
RUN npm install -g pnpm@9.15.9 && npm cache clean --force

# ---- build: full workspace install (build tools for better-sqlite3 here only), web app, one pruned tree per service ----
FROM pnpm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, keyed on the lockfile alone, so source edits reuse this layer.
COPY pnpm-lock.yaml pnpm-workspace.yaml .npmrc package.json ./
RUN pnpm fetch
COPY . .
RUN pnpm install --frozen-lockfile --offline
RUN pnpm build:web
# `pnpm deploy`: the package, its production dependencies and its workspace dependencies, nothing else. It resolves
# them again and needs the registry's metadata, which `pnpm fetch` does not cache: --prefer-offline, not --offline.
RUN for pkg in gateway identity cards search files notifications all-in-one; do \
      pnpm --filter "@cards/${pkg}" deploy --prod --prefer-offline "/out/${pkg}" || exit 1; \
    done
# better-sqlite3 was compiled from source: keep the addon, drop sources and intermediates (~30 MB an image).
RUN for d in /out/*/node_modules/.pnpm/better-sqlite3@*/node_modules/better-sqlite3; do \
      mv "$d/build/Release/better_sqlite3.node" /tmp/addon.node \
      && rm -rf "$d/build" "$d/deps" "$d/src" \
      && mkdir -p "$d/build/Release" && mv /tmp/addon.node "$d/build/Release/better_sqlite3.node" || exit 1; \
    done

# ---- runtime base: slim Node, tsx, a gRPC health probe, non-root user, writable /data ----
FROM ${NODE_IMAGE} AS runtime
ARG TSX_VERSION=4.23.15
ENV NODE_ENV=production DATA_DIR=/data
# tsx's loader is where `npm install -g` puts it (the CMD names it by path: an --import of a bare "tsx" does not find
# global installs); the build fails here if it moves. Then the package managers of the Node image go (npm, npx,
# corepack, yarn): nothing runs them in a container, and their bundled dependencies are what an operator's image scan
# reports against a service that never loads them (docs/licences.md, "What the image carries").
RUN npm install -g "tsx@${TSX_VERSION}" && npm cache clean --force \
 && test -f /usr/local/lib/node_modules/tsx/dist/loader.mjs \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /opt/yarn-v* /root/.npm \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg \
 && mkdir -p /data && chown 1000:1000 /data
# grpc.health.v1.Health/Check over plain HTTP/2, no dependencies: `node /usr/local/lib/grpc-health.cjs <port> [service]`
# exits 0 only on SERVING. HEALTHCHECK and docker-compose ask for `liveness`, which stays SERVING while the
# process runs: "" turns NOT_SERVING whenever an engine is unreachable, and a restart (what an unhealthy
# container gets from Swarm or an autoheal) cures no engine outage. Kubernetes uses its native grpc probes.
COPY <<'EOF' /usr/local/lib/grpc-health.cjs
const http2 = require('node:http2');
const [target = '50051', service = ''] = process.argv.slice(2);
const address = target.includes(':') ? target : `127.0.0.1:${target}`;
const name = Buffer.from(service);
const message = name.length ? Buffer.concat([Buffer.from([0x0a, name.length]), name]) : Buffer.alloc(0);
const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]);
const fail = (why) => { console.error(`unhealthy: ${why}`); process.exit(1); };
setTimeout(() => fail('timeout'), 3000).unref();
const client = http2.connect(`http://${address}`);
client.on('error', (err) => fail(err.message));
const request = client.request({ ':method': 'POST', ':path': '/grpc.health.v1.Health/Check', 'content-type': 'application/grpc', te: 'trailers' });
const chunks = [];
request.on('response', (headers) => {
  if (headers['grpc-status'] !== undefined && headers['grpc-status'] !== '0') fail(`grpc-status ${headers['grpc-status']}`);
});
request.on('data', (chunk) => chunks.push(chunk));
request.on('trailers', (trailers) => {
  if (trailers['grpc-status'] !== '0') fail(`grpc-status ${trailers['grpc-status']}`);
  const body = Buffer.concat(chunks);
  const status = body.length >= 7 && body[5] === 0x08 ? body[6] : 0;
  if (status !== 1) fail(`status ${status}`);
  console.log('SERVING');
  process.exit(0);
});
request.on('error', (err) => fail(err.message));
request.end(frame);
EOF
# The gateway's liveness (and the all-in-one's readiness) over HTTP, no dependencies: `node /usr/local/lib/livez.cjs
# [/healthz]` asks GET /livez (or the path given) on the metrics listener when there is one (METRICS_PORT:
# HTTP_MAX_CONNECTIONS and the request admission do not count it, so a flood of the gateway's port does not make the
# container unhealthy), else on PORT; exit 0 only on 200. /livez asks no peer: a peer's outage is not cured by
# restarting the gateway.
COPY <<'EOF' /usr/local/lib/livez.cjs
const http = require('node:http');
const path = process.argv[2] || '/livez';
const { METRICS_PORT, METRICS_HOST, PORT, HOST } = process.env;
const [port, bound] = METRICS_PORT ? [METRICS_PORT, METRICS_HOST] : [PORT || '8090', HOST];
const host = !bound || bound === '0.0.0.0' || bound === '::' ? '127.0.0.1' : bound;
const fail = (why) => { console.error(`unhealthy: ${why}`); process.exit(1); };
setTimeout(() => fail('timeout'), 2500).unref();
http
  .get({ host, port: Number(port), path, headers: { connection: 'close' } }, (res) => {
    let body = '';
    res.setEncoding('utf8').on('data', (chunk) => (body += chunk));
    res.on('end', () => {
      if (res.statusCode !== 200) fail(`GET ${path} on ${host}:${port} answered ${res.statusCode} ${body.slice(0, 300)}`);
      console.log(`${path === '/livez' ? 'alive' : 'ready'} (GET ${path} on ${host}:${port})`);
      process.exit(0);
    });
  })
  .on('error', (err) => fail(err.message));
EOF
WORKDIR /app
# The image's `node` user, by number, so Kubernetes' runAsNonRoot can verify it is not root.
USER 1000:1000
STOPSIGNAL SIGTERM
# One process, node itself, with tsx's loader: it gets SIGTERM and drains. Not the tsx CLI (`tsx src/main.ts`), which
# runs the service as its child, relays SIGTERM and SIGKILLs the child when it does not answer within ~30 ms (an event
# loop busy that long, e.g. with a large upload, skipped the drain), and costs ~47 MB a container.
CMD ["node", "--import", "/usr/local/lib/node_modules/tsx/dist/loader.mjs", "src/main.ts"]

# ---- one target per service (code owned by root, read-only for the node user) ----
FROM runtime AS gateway
COPY --from=build /out/gateway /app
COPY --from=build /src/web/dist /app/web/dist
# /metrics and the health check's /livez on 9464, a listener of its own (as in compose and the chart): not on the
# published 8090, where its counters would tell more than the API and HTTP_MAX_CONNECTIONS refuses probes too.
ENV HOST=0.0.0.0 PORT=8090 WEB_DIST_DIR=/app/web/dist METRICS_PORT=9464 METRICS_HOST=0.0.0.0
EXPOSE 8090 9464
# Alive while the process itself answers (livez.cjs above): /healthz is 503 whenever a peer is not ready.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 CMD node /usr/local/lib/livez.cjs

FROM runtime AS identity
COPY --from=build /out/identity /app
ENV IDENTITY_GRPC_HOST=0.0.0.0 IDENTITY_GRPC_PORT=50051 METRICS_HOST=0.0.0.0
EXPOSE 50051
HEALTHCHECK --interval=10s --timeout=4s --start-period=20s --retries=3 CMD node /usr/local/lib/grpc-health.cjs "$IDENTITY_GRPC_PORT" liveness

FROM runtime AS cards
COPY --from=build /out/cards /app
ENV CARDS_GRPC_HOST=0.0.0.0 CARDS_GRPC_PORT=50052 METRICS_HOST=0.0.0.0
EXPOSE 50052
HEALTHCHECK --interval=10s --timeout=4s --start-period=20s --retries=3 CMD node /usr/local/lib/grpc-health.cjs "$CARDS_GRPC_PORT" liveness

FROM runtime AS search
COPY --from=build /out/search /app
# The bundled word-vector model's cache under /data (its volume), not /tmp: a new container does not rebuild it.
ENV SEARCH_GRPC_HOST=0.0.0.0 SEARCH_GRPC_PORT=50053 METRICS_HOST=0.0.0.0 WORD_VECTORS_CACHE_DIR=/data/word-vectors
EXPOSE 50053
# Loading the bundled word-vector model takes a while.
HEALTHCHECK --interval=10s --timeout=4s --start-period=90s --retries=3 CMD node /usr/local/lib/grpc-health.cjs "$SEARCH_GRPC_PORT" liveness

FROM runtime AS files
COPY --from=build /out/files /app
ENV FILES_GRPC_HOST=0.0.0.0 FILES_GRPC_PORT=50054 FILES_HTTP_HOST=0.0.0.0 FILES_HTTP_PORT=50064 METRICS_HOST=0.0.0.0
EXPOSE 50054 50064
HEALTHCHECK --interval=10s --timeout=4s --start-period=20s --retries=3 CMD node /usr/local/lib/grpc-health.cjs "$FILES_GRPC_PORT" liveness

FROM runtime AS notifications
COPY --from=build /out/notifications /app
ENV NOTIFICATIONS_GRPC_HOST=0.0.0.0 NOTIFICATIONS_GRPC_PORT=50055 METRICS_HOST=0.0.0.0
EXPOSE 50055
HEALTHCHECK --interval=10s --timeout=4s --start-period=20s --retries=3 CMD node /usr/local/lib/grpc-health.cjs "$NOTIFICATIONS_GRPC_PORT" liveness

# Every service in one process, embedded engines under /data: `docker run -p 8090:8090 -v cards:/data card-library-all-in-one`
FROM runtime AS all-in-one
COPY --from=build /out/all-in-one /app
COPY --from=build /src/web/dist /app/web/dist
# The word-vector cache (~35 MB, ~10 s and 0.7 GB to build) on the /data volume, so a new container reuses it.
# /metrics on 9464, not on the published 8090: its counters tell more than the API (reset mails go only to accounts).
ENV HOST=0.0.0.0 PORT=8090 WEB_DIST_DIR=/app/web/dist WORD_VECTORS_CACHE_DIR=/data/word-vectors METRICS_PORT=9464 METRICS_HOST=0.0.0.0
EXPOSE 8090 9464
# Readiness, not only liveness: GET /healthz on the metrics listener (livez.cjs /healthz), so a service of this
# process that is not ready (an engine it needs failing) shows as unhealthy in `docker ps` and
# `docker inspect` (the 503's message names it): the container is the whole system. Still out of reach of a flood of
# PORT. The listener opens once every service has started, so its first 200 is also the start's end.
HEALTHCHECK --interval=10s --timeout=3s --start-period=90s --retries=3 CMD node /usr/local/lib/livez.cjs /healthz
