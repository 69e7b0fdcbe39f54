#!/usr/bin/env bash
# The project's test command (`npm test`). Installs the OS services the tests start when they are
# missing, then runs every stage even when an earlier one failed, and ends with one line that adds
# them up: the checks (types, layer rule, lint, format, unused code), the main jest suite (which
# starts a throwaway Postgres and redis-server itself), the fault suite (alone, after the main
# one: its timing checks need a machine the main suite's workers are not loading) and the
# TypeScript client's suite. Named test files (`npm test -- tests/unit`) run only those, in the
# main suite, without the other stages. Exit status: 0 only when every stage passed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-os-package.sh redis-server redis-server || exit 1
bash scripts/ensure-os-package.sh chromium chromium || exit 1

summary="$(mktemp -t lcm-test-summary-XXXXXX)"
trap 'rm -f "$summary"' EXIT
export LCM_TEST_SUMMARY="$summary"
failed_stages=()

stage() {
  local name="$1"
  shift
  echo "== $name: $*"
  if ! "$@"; then failed_stages+=("$name"); fi
}

if [ $# -gt 0 ]; then
  stage main npx jest --ci "$@"
else
  stage types npx tsc --noEmit -p .
  # The layer rule (.dependency-cruiser.cjs): a backwards import fails the build.
  stage layers npx depcruise src --config .dependency-cruiser.cjs
  stage lint npx eslint .
  stage format npx prettier --check --log-level warn .
  stage unused npx knip
  stage main npx jest --ci
  stage faults npx jest --ci --config jest.faults.config.js
  # The client package (clients/typescript): its own locked dependencies (installed by `npm ci`
  # through `prepare`; again here only when its lock file changed since), type check, build, tests.
  stage packages node scripts/install-packages.js
  stage client-types npm --prefix clients/typescript run typecheck
  stage client npm --prefix clients/typescript test
fi

node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const sum = (k) => lines.reduce((n, l) => n + l[k], 0);
  const failedStages = process.argv.slice(2);
  const notRun = sum("notRun");
  process.stdout.write(
    `\nnpm test: ${sum("passed")} passed, ${sum("failed")} failed, ${notRun} ${notRun === 1 ? "file" : "files"} failed to run` +
      (sum("skipped") ? `, ${sum("skipped")} skipped` : "") +
      ` (${lines.map((l) => l.stage).join(", ") || "no jest stage"}); ` +
      (failedStages.length ? `failed stages: ${failedStages.join(", ")}` : "every stage passed") + "\n",
  );
' "$summary" "${failed_stages[@]}"
[ ${#failed_stages[@]} -eq 0 ]
