#!/usr/bin/env bash
# 32 GiB Filecoin proofs on one GPU host: keys, virtual inputs, then proofs through the engine.
# Steps are skipped when their output exists, so the script can be run again right after a
# device call ran out of time (the machine keeps its disk while it stays warm).
# Usage (GPU host): OUT=/tmp/out WORK=/var/tmp/cuzk32 CIRCUIT=porep-32g bash bench/filecoin_32g.sh
# Dry run here:    OUT=/tmp/o WORK=/tmp/w CIRCUIT=porep-2k BACKEND=cpu SIZE=2KiB bash bench/filecoin_32g.sh
set -u
OUT=${OUT:?set OUT}
WORK=${WORK:-/var/tmp/cuzk32}
CIRCUIT=${CIRCUIT:-porep-32g}
BACKEND=${BACKEND:-cuda}
SIZE=${SIZE:-32GiB}
PROOFS=${PROOFS:-2}
CONC=${CONC:-2}
SYNTH=${SYNTH:-14}        # synthesis processes (16 cores: leave two for the engine)
WPD=${WPD:-2}             # workers per device
SW=${SW:-2}               # synthesis workers
BENCH_ARGS=${BENCH_ARGS:-}  # more `cuzk bench` options, e.g. --defer-poseidon all
VANILLA_ARGS=${VANILLA_ARGS:-}  # more `cuzk gen-vanilla` options, e.g. --sectors 2349 --curio
STEPS=${STEPS:-"setup vanilla bench"}
TAG=${TAG:-}                # suffix of the bench output files
CUZK=${CUZK:-python3 -m cuzk.cli.main}
KEYS=$WORK/keys SHAPES=${SHAPES:-$WORK/shapes}  # SHAPES=/dev/shm/… when the disk is short
mkdir -p "$OUT" "$KEYS" "$SHAPES"
log() { echo "== $(date +%T) $*"; }
case $CIRCUIT in
  porep-*) KIND=porep ;;
  wpost-*) KIND=window-post ;;
  snap-*) KIND=snap ;;
  *) echo "unknown circuit $CIRCUIT"; exit 2 ;;
esac
VANILLA=${VANILLA:-$WORK/$CIRCUIT.vanilla}  # a directory with VANILLA_ARGS=--curio
for step in $STEPS; do
  case $step in
    setup)
      PARAMS=$($CUZK circuit-info "$CIRCUIT" --json | python3 -c \
        'import json, sys; print(json.load(sys.stdin)["param_file"])')
      if [ -s "$KEYS/$PARAMS" ]; then log "$CIRCUIT keys exist"; continue; fi
      log "setup $CIRCUIT"
      /usr/bin/time -v $CUZK setup --circuit "$CIRCUIT" --out "$KEYS" --seed 1 \
        --backend "$BACKEND" --shape-cache "$SHAPES" 2>&1 | tee "$OUT/setup_$CIRCUIT.log" \
        | grep -E "wrote|Elapsed|Maximum resident|shape|error" ;;
    vanilla)
      if [ -s "$VANILLA" ]; then log "vanilla exists"; continue; fi
      log "gen-vanilla $KIND $SIZE --virtual $VANILLA_ARGS"
      /usr/bin/time -v $CUZK gen-vanilla "$KIND" --sector-size "$SIZE" --virtual $VANILLA_ARGS \
        --out "$VANILLA" 2>&1 | tee "$OUT/vanilla_$CIRCUIT.log" \
        | grep -E "wrote|Elapsed|Maximum resident|error" ;;
    bench)
      log "bench $CIRCUIT × $PROOFS"
      /usr/bin/time -v $CUZK bench --backend "$BACKEND" --circuit "$CIRCUIT" --vanilla "$VANILLA" \
        --param-dir "$KEYS" --shape-cache "$SHAPES" --proofs "$PROOFS" --concurrency "$CONC" --workers-per-device "$WPD" --synthesis-workers "$SW" \
        --synthesis-processes "$SYNTH" $BENCH_ARGS --json "$OUT/bench_$CIRCUIT$TAG.json" \
        --timeline "$OUT/timeline_$CIRCUIT$TAG.png" 2>&1 | tee "$OUT/bench_$CIRCUIT$TAG.log" | tail -64 ;;
  esac
done
df -h "$WORK" | tail -1
