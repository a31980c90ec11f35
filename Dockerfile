# One image for every service and job. Run it with the command as its
# argument (tools/deploy/src/entrypoint.ts):
#   ingest-gateway | identity-resolver | profile-api | consent-api |
#   conversion-forwarder | migrate | topics | svcctl <words> | healthcheck
#
#   docker build -t svc:local .
#   docker build --build-arg BASE_IMAGE=<another Node 20 image> -t svc:local .
#
# Its OCI labels name the licence here; the product's version, the commit and
# the source are the build's to add (infra/local/images.sh does), as --label:
# a layer cache would keep an earlier build's values for a LABEL made of
# build arguments.
#   docker build --label org.opencontainers.image.version="$(node -p "require('./package.json').version")" \
#     --label org.opencontainers.image.revision="$(git rev-parse HEAD)" \
#     --label org.opencontainers.image.source=<the repository's URL> -t svc:local .
#
# Behind a TLS-inspecting proxy, pass its CA for npm as a build secret:
#   docker build --secret id=npm_ca,src=/path/to/ca.pem -t svc:local .

# Any image with Node.js 20 and npm; the official one by default.
ARG BASE_IMAGE=node:20-bookworm-slim

# ---- manifests: what npm needs to install, and nothing that changes with the code,
# so the install layers below are reused until a dependency changes. The shipped
# packages only: the test kit and the browser library stay out of the image.
FROM ${BASE_IMAGE} AS manifests
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false
COPY package.json package-lock.json ./
COPY libs/contracts/package.json libs/contracts/
COPY libs/runtime/package.json libs/runtime/
COPY libs/accounts/package.json libs/accounts/
COPY libs/bus/package.json libs/bus/
COPY libs/identity/package.json libs/identity/
COPY libs/conversions/package.json libs/conversions/
COPY libs/service/package.json libs/service/
COPY libs/openapi/package.json libs/openapi/
COPY services/ingest-gateway/package.json services/ingest-gateway/
COPY services/identity-resolver/package.json services/identity-resolver/
COPY services/profile-api/package.json services/profile-api/
COPY services/consent-api/package.json services/consent-api/
COPY services/conversion-forwarder/package.json services/conversion-forwarder/
COPY services/standalone/package.json services/standalone/
COPY tools/svcctl/package.json tools/svcctl/
COPY tools/deploy/package.json tools/deploy/

# ---- deps: production dependencies only. Optional ones are left out too: the
# embedded PostgreSQL's binaries (a container always gets DATABASE_URL) and
# platform shims Node does not need. Install scripts never run.
FROM manifests AS deps
RUN --mount=type=cache,id=svc-npm,target=/root/.npm,sharing=locked \
    --mount=type=secret,id=npm_ca \
    if [ -f /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
    npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund

# ---- build: every dependency, then the TypeScript of the shipped packages.
FROM manifests AS build
# The services' test projects reference the test kit, so tsc builds it too.
COPY libs/testkit/package.json libs/testkit/
RUN --mount=type=cache,id=svc-npm,target=/root/.npm,sharing=locked \
    --mount=type=secret,id=npm_ca \
    if [ -f /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.base.json ./
COPY libs libs
COPY services services
COPY tools tools
RUN npx tsc -b tools/deploy tools/svcctl \
 && mkdir /out \
 && cp -r --parents libs/contracts/dist libs/runtime/dist libs/accounts/dist libs/bus/dist libs/identity/dist libs/conversions/dist libs/service/dist libs/openapi/dist services/*/dist tools/svcctl/dist tools/deploy/dist /out/

# ---- the image: manifests, production node_modules and compiled output; no
# compiler, no sources, no npm cache.
FROM ${BASE_IMAGE}
WORKDIR /app
COPY LICENSE ./
COPY --from=deps /app ./
COPY --from=build /out ./
# Services listen on every interface of the container; nothing writes to the
# root filesystem (HOME is /tmp for anything that asks), so it can be read-only.
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 HOME=/tmp
# A numeric id without a passwd entry: Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
EXPOSE 8080
LABEL org.opencontainers.image.title="svc" \
      org.opencontainers.image.description="Event ingestion, identity and profiles service" \
      org.opencontainers.image.licenses="Apache-2.0"
# Exec form: node is PID 1 and receives SIGTERM itself.
# --max-semi-space-size: SERVICE_NODE_FLAGS (libs/runtime/src/lifecycle/node-flags.ts) says why.
ENTRYPOINT ["node", "--enable-source-maps", "--max-semi-space-size=64", "/app/tools/deploy/dist/entrypoint.js"]
