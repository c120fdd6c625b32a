#!/usr/bin/env bash
# Issue 4's engine matrix: 10-partition proofs of synthetic:SIZE with 1, 2 and 3 workers per
# device, single-lock vs staging (MODES), on one device — then every device of the host.
# Writes cuzk bench JSON, logs and timelines to $OUT. Usage (H200 host, CUDA):
#   OUT=/tmp/out SIZE=4194304 BACKEND=cuda DEVICES_ALL=2 bash bench/engine_matrix.sh
# Dry run here: OUT=/tmp/m SIZE=2048 BACKEND=cpu PROOFS=2 bash bench/engine_matrix.sh
set -u
OUT=${OUT:?set OUT}
SIZE=${SIZE:-4194304}
BACKEND=${BACKEND:-cuda}
PARTS=${PARTS:-10}
PROOFS=${PROOFS:-3}
WORKERS=${WORKERS-"1 2 3"}  # empty: only the all-devices run
MODES=${MODES:-"single staging"}
DEVICES_ALL=${DEVICES_ALL:-1}
PROOFS_ALL=${PROOFS_ALL:-$((PROOFS * DEVICES_ALL))}
KEYS=${KEYS:-/tmp/cuzk-keys}
SHAPES=${SHAPES:-/tmp/cuzk-shapes}
CUZK=${CUZK:-python3 -m cuzk.cli.main}
mkdir -p "$OUT" "$KEYS" "$SHAPES"
log() { echo "== $(date +%T) $*"; }

if [ ! -f "$KEYS/synthetic-$SIZE.params" ]; then
  log setup
  /usr/bin/time -f "setup %e s" $CUZK setup --circuit "synthetic:$SIZE" --out "$KEYS" --seed 1 \
    --backend "$BACKEND" --shape-cache "$SHAPES" || exit 1
fi
run() {  # name, extra args
  local name=$1; shift
  log "$name"
  $CUZK bench --backend "$BACKEND" --circuit "synthetic:$SIZE" --partitions "$PARTS" \
    --proofs "$PROOFS" --concurrency 2 --synthesis-workers 4 --param-dir "$KEYS" \
    --shape-cache "$SHAPES" --json "$OUT/$name.json" "$@" 2>&1 | tail -25
}
for w in $WORKERS; do
  for mode in $MODES; do
    if [ "$mode" = single ]; then flag=--no-staging; else flag=--staging; fi
    run "w${w}_${mode}" --devices 1 --workers-per-device "$w" "$flag"
  done
done
if [ "$DEVICES_ALL" -gt 1 ]; then
  run "d${DEVICES_ALL}_w2" --devices "$DEVICES_ALL" --workers-per-device 2 \
    --proofs "$PROOFS_ALL" --concurrency $((2 * DEVICES_ALL)) --staging \
    --timeline "$OUT/d${DEVICES_ALL}_timeline.png"
fi
