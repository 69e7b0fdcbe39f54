#!/usr/bin/env bash
# The project's test command (`npm test`): makes sure the OS services the tests start exist,
# type-checks, then runs jest (which starts a throwaway Postgres and redis-server itself).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-os-package.sh redis-server redis-server
bash scripts/ensure-os-package.sh chromium chromium
npx tsc --noEmit -p .
npx jest --ci "$@"
