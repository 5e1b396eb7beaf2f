#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets of this package and runs each for a bounded time; prints the
# executions of each and in all; fails on any crash (keeping the input in Fuzz/Artifacts/<target>/), on a
# warning in the fuzz code, or when fewer than FUZZ_MIN_EXECUTIONS inputs ran in all. On a machine too busy to reach
# that total in the bounded time, the targets run again, each for its time, at most twice more, before it fails (found
# in CI beside other work: 807,643 executions in the first round).
#
#   FUZZ_TARGETS="RequestFuzz"   run only these targets (default: all three)
#   FUZZ_SECONDS=10              run each target this long (default: 75 s, 60 s and 25 s, as below)
#   FUZZ_JOBS=1                  targets run at once (default: one per core)
#   FUZZ_MIN_EXECUTIONS=0        the total to reach (default 1,000,000)
#
# Each target starts from its checked-in seeds (Fuzz/Corpus/<target>/), copied into Fuzz/.build/fuzz-corpus/,
# where what it learns is kept for the next local run; the checked-in corpus is never written.
# Reproduce a crash with: Fuzz/.build/release/<target> Fuzz/Artifacts/<target>/crash-…
set -uo pipefail
cd "$(dirname "$0")"
SWIFT=${SWIFT:-swift}
read -r -a targets <<< "${FUZZ_TARGETS:-StoreModelFuzz RequestFuzz BrokerURLFuzz}"
declare -A seconds=([StoreModelFuzz]=75 [RequestFuzz]=60 [BrokerURLFuzz]=25)
minimum=${FUZZ_MIN_EXECUTIONS:-1000000}
work=.build/fuzz-corpus
logs=.build/fuzz-logs
mkdir -p "$work" "$logs" Artifacts

# The build: every module, the project's own included, is instrumented for coverage, and libFuzzer linked in.
echo "fuzz: building ${targets[*]} (release, -sanitize=fuzzer)"
start=$(date +%s)
nice -n 10 "$SWIFT" build -c release -Xswiftc -sanitize=fuzzer 2>&1 | tee "$logs/build.txt" | grep -E "error:|warning:|Build complete"
status=${PIPESTATUS[0]}
build_seconds=$(( $(date +%s) - start ))
if [ "$status" -ne 0 ]; then echo "fuzz: the build failed (log: Fuzz/$logs/build.txt)"; exit 1; fi
if grep -E '/Fuzz/.*: warning:' "$logs/build.txt" | grep -v '/Fuzz/.build/'; then echo "fuzz: the fuzz targets have warnings (above)"; exit 1; fi
echo "fuzz: built in ${build_seconds} s"
bin=$("$SWIFT" build -c release --show-bin-path)

# One target in round `round`: its own corpus copy, artifacts folder and log; its exit code goes to
# $logs/<target>.<round>.rc, its log to $logs/<target>.<round>.txt.
run_target() {
    local target=$1 round=$2 time_limit=${FUZZ_SECONDS:-${seconds[$1]:-30}}
    local dict=()
    mkdir -p "$work/$target" "Artifacts/$target"
    cp -n Corpus/"$target"/* "$work/$target"/ 2>/dev/null || true
    [ -f "Dictionaries/$target.dict" ] && dict=(-dict="Dictionaries/$target.dict")
    echo "fuzz: $target for ${time_limit} s (round $round)"
    # The Swift runtime's backtracer would take the trap before libFuzzer's handler, and no input would be
    # saved: it is turned off, and libFuzzer prints the stack instead.
    SWIFT_BACKTRACE=enable=no nice -n 10 timeout --kill-after=10 $(( time_limit + 120 )) "$bin/$target" \
        -max_total_time="$time_limit" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="Artifacts/$target/" "${dict[@]}" "$work/$target" > "$logs/$target.$round.txt" 2>&1
    echo $? > "$logs/$target.$round.rc"
}

# The targets run side by side, as many at a time as there are cores (FUZZ_JOBS), longest first. One round runs each
# target once; a round runs only while no target has crashed and the total is below the minimum, three at most.
jobs_at_once=${FUZZ_JOBS:-$(nproc)}
fuzz_start=$(date +%s)
declare -A executions_of code_of
for target in "${targets[@]}"; do executions_of[$target]=0; code_of[$target]=0; done
failed=()
total=0
rounds=0
while [ "${#failed[@]}" -eq 0 ] && [ "$total" -lt "$minimum" ] && [ "$rounds" -lt 3 ]; do
    rounds=$(( rounds + 1 ))
    [ "$rounds" -gt 1 ] && echo "fuzz: $total executions in all after round $(( rounds - 1 )), fewer than $minimum: round $rounds"
    for target in "${targets[@]}"; do
        rm -f "$logs/$target.$rounds.rc"
        while [ "$(jobs -rp | wc -l)" -ge "$jobs_at_once" ]; do wait -n; done
        run_target "$target" "$rounds" &
    done
    wait
    for target in "${targets[@]}"; do
        code=$(cat "$logs/$target.$rounds.rc" 2>/dev/null || echo 1)
        executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$target.$rounds.txt" | tail -1)
        executions_of[$target]=$(( ${executions_of[$target]} + ${executions:-0} ))
        total=$(( total + ${executions:-0} ))
        if [ "$code" -ne 0 ]; then
            code_of[$target]=$code
            failed+=("$target")
            echo "fuzz: $target FAILED (exit $code); from its log (Fuzz/$logs/$target.$rounds.txt):"
            grep -E "Fatal error|ERROR: libFuzzer|SUMMARY|Test unit written|^Base64" "$logs/$target.$rounds.txt" | sed 's/^/    /' | cut -c1-2000
            # The top of the stack, from the trap down.
            grep -E "^ +#[0-9]+ " "$logs/$target.$rounds.txt" | grep -vE "libFuzzer|fuzzer::|libc.so|__sanitizer|_assertionFailure" | head -8 | sed 's/^/    /' | cut -c1-300
        fi
    done
done

report=()
for target in "${targets[@]}"; do
    if [ "${code_of[$target]}" -ne 0 ]; then
        report+=("$(printf '%-16s %10d executions  CRASHED (exit %d)' "$target" "${executions_of[$target]}" "${code_of[$target]}")")
    else
        report+=("$(printf '%-16s %10d executions  ok' "$target" "${executions_of[$target]}")")
    fi
done
fuzz_seconds=$(( $(date +%s) - fuzz_start ))

echo
echo "fuzz: executions per target (build ${build_seconds} s, fuzzing ${fuzz_seconds} s in $rounds round$([ "$rounds" -gt 1 ] && echo s))"
printf '    %s\n' "${report[@]}"
printf '    %-16s %10d executions\n' "total" "$total"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} crashed; the inputs are in Fuzz/Artifacts/<target>/"
    exit 1
fi
if [ "$total" -lt "$minimum" ]; then
    echo "fuzz: FAILED: $total executions in all, fewer than $minimum"
    exit 1
fi
echo "fuzz: passed"
