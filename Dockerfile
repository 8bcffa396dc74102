# The fakegpu node plugin image (used by deploy/helm/fakegpu). Build: docker build -t fakegpu:0.1.0 .
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY test ./test
RUN npx tsc -p tsconfig.json && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /opt/fakegpu
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/src ./dist/src
COPY package.json ./
COPY bin ./bin
COPY proto ./proto
COPY deploy/deviceclasses.yaml ./deploy/deviceclasses.yaml
# The IMEX daemon stand-in that the ComputeDomain controller's DaemonSets run (the chart's
# computeDomains.daemonImage defaults to this image), written from its one source, DAEMON_SCRIPT.
RUN node -e "import('/opt/fakegpu/dist/src/node/imex-daemon/daemon-script.js').then((m) => require('node:fs').writeFileSync('/usr/local/bin/compute-domain-daemon', m.DAEMON_SCRIPT, { mode: 0o755 }))" \
  && compute-domain-daemon 2>&1 | grep -q '^usage: compute-domain-daemon run|check$'
ENTRYPOINT ["node", "/opt/fakegpu/bin/fakegpu.js"]
CMD ["plugin"]
