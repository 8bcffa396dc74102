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
ENTRYPOINT ["node", "/opt/fakegpu/bin/fakegpu.js"]
CMD ["plugin"]
