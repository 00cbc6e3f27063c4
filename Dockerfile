# The pixelmill image: one image for the workers, the webhook receiver, the emulator and the CLI;
# the command picks the role (`worker`, `webhook-server`, `emulator`, `run FILE`, ...).
# docker-compose.yml builds it; see docs/deployment.md.

FROM node:20-slim AS build
WORKDIR /app
# No Temporal binaries in the image: workers connect to a cluster, they never start one.
ENV PIXELMILL_SKIP_TEMPORAL_INSTALL=1
COPY package.json package-lock.json ./
# `npm install`, not `npm ci`, as in .ci/run: the lockfile lacks some optional platform builds of
# @swc/core and `npm ci` refuses it. The lockfile's versions still hold. --ignore-scripts: the
# package's own scripts (Temporal binaries, `prepare`) are not wanted or not possible yet.
RUN npm install --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --ignore-scripts

FROM node:20-slim
# MALLOC_ARENA_MAX and the ENTRYPOINT's flags are those of bin/pixelmill.js's shebang
# (less memory, less CPU).
ENV NODE_ENV=production \
    PIXELMILL_SKIP_TEMPORAL_INSTALL=1 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/manifests ./manifests
COPY --from=build /app/deploy/emulator.yaml ./deploy/emulator.yaml
# /data holds the emulator's task journal; a named volume mounted there inherits this owner.
RUN mkdir -p /data /app/out && chown node:node /data /app/out
USER node
ENTRYPOINT ["node", "--max-semi-space-size=4", "--heap-growing-percent=20", "--v8-pool-size=2", "bin/pixelmill.js"]
CMD ["--help"]
