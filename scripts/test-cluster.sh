#!/usr/bin/env bash
# `npm run test:cluster`: two API nodes on a Postgres primary with a streaming replica and on a
# Redis Cluster (tests/cluster). Installs what it starts when missing: redis-server (with
# redis-cli) and Debian's PostgreSQL server packages (initdb, postgres, pg_basebackup in
# /usr/lib/postgresql/<version>/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-os-package.sh redis-server redis-server
bash scripts/ensure-os-package.sh redis-cli redis-tools
bash scripts/ensure-os-package.sh '/usr/lib/postgresql/*/bin/pg_basebackup' postgresql
npx jest --ci --config jest.cluster.config.js "$@"
