#!/usr/bin/env bash
# porep-32g (or CIRCUIT) under several device memory caps in one device call: the keys and
# inputs once (bench/filecoin_32g.sh setup vanilla), then one traced bench per cap, each under
# its own time limit so one that hangs cannot eat the others' time. Every device request of
# 64 MiB or more is logged per cap (bench/memory_trace.py) to $OUT/memory_<cap>.log.gz.
# The cap "none" runs the same bench uncapped (keys resident in device memory), for comparison.
# TRACER=stream_trace.py traces the device's streams instead (bench/stream_trace.py), to
# $OUT/streams_<cap>.log.
# SPY="py-spy record --idle --threads --nonblocking --format raw -r 50" samples every thread
# of each bench, waiting ones too (bench/gil_summary.py reads the file).
# COLD=1 takes the key files out of the page cache before each cap (bench/page_cache.py), so
# the bench's "loading: the key in N s" is a read from the disk.
# Usage (GPU host): OUT=/tmp/out CAPS="20GiB 18GiB 16GiB none" bash bench/capped_sweep.sh
# Dry run here:     PY=.venv/bin/python CUZK=".venv/bin/python -m cuzk.cli.main" OUT=/tmp/o WORK=/tmp/w \
#                   CIRCUIT=porep-2k BACKEND=cpu SIZE=2KiB CAPS=2GiB bash bench/capped_sweep.sh
set -u
OUT=${OUT:?set OUT}
CAPS=${CAPS:-"20GiB 18GiB 16GiB"}
export PROOFS=${PROOFS:-4} CONC=${CONC:-2}
# Seconds each cap's bench may take: loading (≈ 90 s for porep-32g at 16 GiB), then the two
# warm-up proofs (one per device worker) and PROOFS proofs of 10 partitions at ≤ 3.5 s each.
PER_CAP_S=${PER_CAP_S:-$((120 + 35 * (PROOFS + 2)))}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
export OUT WORK=${WORK:-/var/tmp/cuzk32} CIRCUIT=${CIRCUIT:-porep-32g}
STEPS="setup vanilla" bash "$HERE/filecoin_32g.sh" > "$OUT/prep.log" 2>&1 || { tail -20 "$OUT/prep.log"; exit 1; }
grep -E '^==|Elapsed' "$OUT/prep.log"
for cap in $CAPS; do
  echo "== $(date +%T) cap $cap"
  limit=""; [ "$cap" = none ] || limit="--device-memory-limit $cap"
  # COLD=1: the key files out of the page cache first, so the bench's key load reads the disk
  [ "${COLD:-0}" = 1 ] && ${PY:-python3} "$HERE/page_cache.py" evict "$WORK"/keys/* | tail -1
  # SPY: a sampling profiler's command line that takes "-o FILE -- python3 ..." (py-spy
  # record), so where each thread waits is on record per cap, in $OUT/spy_<cap>.txt
  run=${PY:-python3}
  [ -n "${SPY:-}" ] && run="$SPY -o $OUT/spy_$cap.txt -- $run"
  CUZK="$run $HERE/${TRACER:-memory_trace.py}" MEMORY_LOG="$OUT/memory_$cap.log" \
    STREAM_LOG="$OUT/streams_$cap.log" STEPS=bench TAG="_$cap" \
    BENCH_ARGS="$limit ${BENCH_ARGS:-}" \
    timeout --kill-after=10 "$PER_CAP_S" bash "$HERE/filecoin_32g.sh" > "$OUT/sweep_$cap.log" 2>&1
  echo "exit $?"
  grep -E 'cuzk:|failed|proofs \(|per proof|fill:|peak|give-backs|host → device|kernels  |prover\.(abc|h|msm)' "$OUT/sweep_$cap.log"
  [ -f "$OUT/memory_$cap.log" ] && echo "H workspaces: $(grep -c 'H workspace' "$OUT/memory_$cap.log"), \
with requests past them: $(grep 'H workspace' "$OUT/memory_$cap.log" | grep -vc ': 0 requests')"
  grep -m2 refused "$OUT/memory_$cap.log" 2>/dev/null | cut -c1-220
  grep 'page-locked in' "$OUT/memory_$cap.log" 2>/dev/null | sed -E 's/INFO [^ ]+ at byte/at byte/'
  # (the engine's close gives every pool block back too: those are not waits, and not counted)
  [ -f "$OUT/memory_$cap.log" ] && echo "pool give-backs (device-wide waits): $(grep 'gave back' "$OUT/memory_$cap.log" | grep -vc uncap_memory)"
  if [ -f "$OUT/memory_$cap.log" ]; then
    gzip -f "$OUT/memory_$cap.log"
    # the partitions' phases past the first four (the warm-ups' and the first proof's start)
    ${PY:-python3} "$HERE/trace_phases.py" "$OUT/memory_$cap.log.gz" --skip 4 2>&1 | tail -9
  fi
done
