#!/usr/bin/env bash
# `npm run test:cluster`: two API nodes on a Postgres primary with a streaming replica and on a
# Redis Cluster (tests/cluster). Installs what it starts when missing: redis-server (with
# redis-cli) and Debian's PostgreSQL server packages (initdb, postgres, pg_basebackup in
# /usr/lib/postgresql/<version>/bin).
#
# Everything the test starts (postgres, redis-server, `lcm serve`) runs in a process group of
# its own and keeps its files in a temporary folder of its own: whatever way the run ends
# (passed, failed, interrupted), the group is stopped and the folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-os-package.sh redis-server redis-server
bash scripts/ensure-os-package.sh redis-cli redis-tools
bash scripts/ensure-os-package.sh '/usr/lib/postgresql/*/bin/pg_basebackup' postgresql
# The nodes run `lcm serve` from the compiled build: bring it up to date with the sources.
node scripts/build.js

work="$(mktemp -d -t lcm-test-cluster-XXXXXX)"
chmod 755 "$work" # the postgres system user (when run as root) works in here too
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 -- "-$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 -- "-$pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
TMPDIR="$work" setsid node node_modules/.bin/jest --ci --config jest.cluster.config.js "$@" &
pid=$!
status=0
wait "$pid" || status=$?
exit "$status"
