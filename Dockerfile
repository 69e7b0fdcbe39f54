# syntax=docker/dockerfile:1
# Build stage: install everything and type-check, so a broken tree never becomes an image.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npx tsc --noEmit -p . && npm prune --omit=dev

# Run stage: production dependencies and sources only, as an unprivileged user. The API runs
# the TypeScript sources through tsx (a production dependency), like `npm start` does.
FROM node:20-bookworm-slim
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/package.json ./
COPY --from=build /app/bin ./bin
COPY --from=build /app/src ./src
COPY --from=build /app/db ./db
USER node
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/api/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "bin/lcm.js", "serve"]
