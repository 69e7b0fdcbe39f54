# syntax=docker/dockerfile:1
# Build stage: install everything (npm ci runs the `prepare` script, which compiles src/,
# db/migrations and knexfile.ts into dist/ and installs the API reference's browser bundle in
# packages/api-reference), type-check the tests and benchmarks too so a broken tree never becomes
# an image, then drop the development dependencies (TypeScript, tsx, jest, the `node` package).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY . .
RUN npm ci && npx tsc --noEmit -p . && npm prune --omit=dev --ignore-scripts

# Run stage: the compiled build and production dependencies only, as the unprivileged `node`
# user. bin/lcm.js runs dist/; there is no TypeScript at run time. Without DATABASE_URL the
# embedded Postgres keeps its data in the node user's home (a volume there keeps it).
FROM node:24-bookworm-slim
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0 EMBEDDED_DATA_DIR=/home/node/lcm-data/postgres
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin/lcm.js ./bin/lcm.js
COPY --from=build /app/dist ./dist
COPY --from=build /app/db/seeds ./db/seeds
COPY --from=build /app/packages/api-reference/package.json ./packages/api-reference/package.json
COPY --from=build /app/packages/api-reference/node_modules/@scalar/api-reference/package.json ./packages/api-reference/node_modules/@scalar/api-reference/package.json
COPY --from=build /app/packages/api-reference/node_modules/@scalar/api-reference/dist ./packages/api-reference/node_modules/@scalar/api-reference/dist
USER node
RUN mkdir -p /home/node/lcm-data
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/api/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "bin/lcm.js", "serve"]
