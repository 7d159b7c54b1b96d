# The object-store backfill worker (examples/object_store/main.ts) on Bun.
#
#   docker build -f deploy/docker/bun.Dockerfile -t splitlease-objstore:bun .
#
# Build from the repository root. The runtime version is package.json's
# devDependency `bun`; tests/deploy/manifests_test.ts checks that it, the
# entry point and the files copied here match the repository.

# Dependencies: the package's runtime dependencies at the lockfile's versions,
# plus aws4fetch (the example's S3 client, a devDependency of the repository).
# No install scripts run.
FROM node:24.9.0-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm pkg delete devDependencies.aws4fetch \
 && npm pkg set dependencies.aws4fetch=1.0.20 \
 && npm install --omit=dev --ignore-scripts --no-audit --no-fund

FROM oven/bun:1.4.5-slim
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json mod.ts nats.ts ./
COPY src ./src
COPY adapters ./adapters
COPY examples/object_store ./examples/object_store
RUN mkdir -p /out && chown 1000:1000 /out
# A fixed non-root uid, by number so Kubernetes' runAsNonRoot can check it; it owns
# only /out.
USER 1000:1000
ENV PORT=8080 OUTPUT=/out/records.ndjson STORE=nats
EXPOSE 8080
# Exec form, replacing the image's docker-entrypoint.sh: bun is PID 1 and gets
# SIGTERM itself (the worker drains on it). `bun <file>` runs the file in this
# process (no `bun run` script runner in between).
ENTRYPOINT ["bun", "examples/object_store/main.ts"]
