# syntax=docker/dockerfile:1
# Build stage: install everything (npm ci runs the `prepare` script, which compiles src/,
# db/migrations and knexfile.ts into dist/), type-check the tests and benchmarks too so a broken
# tree never becomes an image, then drop the development dependencies (TypeScript, tsx, jest).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY . .
RUN npm ci && npx tsc --noEmit -p . && npm prune --omit=dev --ignore-scripts

# Run stage: the compiled build and production dependencies only, as an unprivileged user.
# bin/lcm.js runs dist/; there is no TypeScript at run time.
FROM node:20-bookworm-slim
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin/lcm.js ./bin/lcm.js
COPY --from=build /app/dist ./dist
COPY --from=build /app/db/seeds ./db/seeds
USER node
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/api/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "bin/lcm.js", "serve"]
