# The object-store backfill worker (examples/object_store/main.ts) on Deno.
#
#   docker build -f deploy/docker/deno.Dockerfile -t splitlease-objstore:deno .
#
# Build from the repository root. The runtime version is package.json's
# devDependency `deno`; tests/deploy/manifests_test.ts checks that it, the
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

FROM denoland/deno:2.9.6
WORKDIR /app
# Deno's cache lives in the app directory, owned by the user that runs it.
ENV DENO_DIR=/app/.deno-dir
COPY --from=deps /app/node_modules ./node_modules
COPY deno.json package.json mod.ts nats.ts ./
COPY src ./src
COPY adapters ./adapters
COPY examples/object_store ./examples/object_store
# Type-check-free warm-up: resolve and transpile everything once at build time.
RUN deno cache examples/object_store/main.ts \
 && mkdir -p /out \
 && chown -R 1993:1993 /app/.deno-dir /out
# A fixed non-root uid, by number so Kubernetes' runAsNonRoot can check it; it owns
# only the Deno cache and /out.
USER 1993:1993
ENV PORT=8080 OUTPUT=/out/records.ndjson STORE=nats
EXPOSE 8080
# Exec form: deno is PID 1 and gets SIGTERM itself (the worker drains on it);
# no shell in between to swallow the signal.
ENTRYPOINT ["deno", "run", "--cached-only", "--allow-net", "--allow-env", "--allow-read", "--allow-write=/out", "examples/object_store/main.ts"]
