#!/usr/bin/env bash
# The project's test command (`npm test`): makes sure the OS services the tests start exist,
# type-checks, checks the layer rule, then runs jest (which starts a throwaway Postgres and redis-server itself).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-os-package.sh redis-server redis-server
bash scripts/ensure-os-package.sh chromium chromium
npx tsc --noEmit -p .
# The layer rule (.dependency-cruiser.cjs): a backwards import fails the build.
npx depcruise src --config .dependency-cruiser.cjs
npx jest --ci "$@"
# The fault suite (tests/faults), alone after the main suite: its timing checks need a machine
# the main suite's workers are not loading. Skipped when the command names its own tests.
if [ $# -eq 0 ]; then npx jest --ci --config jest.faults.config.js; fi
# The TypeScript client package (clients/typescript): its own locked dependencies (installed by
# `npm ci` through `prepare`; again here only when its lock file changed since), type check,
# build, and tests (the pull tool against the real API, and the drift of its generated types).
node scripts/install-packages.js
npm --prefix clients/typescript run typecheck
npm --prefix clients/typescript test
