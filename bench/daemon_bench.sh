#!/usr/bin/env bash
# gRPC + journal overhead: in-process `cuzk bench` vs `cuzk bench --addr` against `cuzk serve`,
# same circuit, proofs and concurrency. Usage: OUT=dir BACKEND=cuda PAIRS="65536:40 1048576:10"
set -u
OUT=${OUT:?}; BACKEND=${BACKEND:-cuda}; PAIRS=${PAIRS:-"65536:40 1048576:10"}; J=${J:-2}
K=${KEYS:-/tmp/cuzk-keys}; mkdir -p "$K"
CUZK="python3 -m cuzk.cli.main"
log() { echo "== $(date +%T) $*"; }
for pair in $PAIRS; do
  N=${pair%%:*}; C=${pair##*:}
  if [ ! -f "$K/synthetic-$N.params" ]; then
    log setup $N
    $CUZK setup --circuit "synthetic:$N" --out "$K" --seed 1 --backend "$BACKEND" 2>&1 | tail -2
  fi
  log "in-process $N x $C, -j $J"
  $CUZK bench --backend "$BACKEND" --circuit "synthetic:$N" --param-dir "$K" --proofs "$C" \
    --concurrency "$J" --json "$OUT/inproc_$N.json" 2>&1 | tail -16
  SOCK=/tmp/cuzk-bench-$N.sock; rm -f /tmp/cuzk-bench-$N.sqlite3
  $CUZK serve --listen "unix://$SOCK" --no-http --param-cache "$K" --backend "$BACKEND" \
    --journal "/tmp/cuzk-bench-$N.sqlite3" > "$OUT/serve_$N.log" 2>&1 &
  P=$!
  until $CUZK client --addr "unix://$SOCK" status > /dev/null 2>&1; do sleep 0.5; done
  log "daemon $N x $C, -j $J"
  $CUZK bench --addr "unix://$SOCK" --circuit "synthetic:$N" -c "$C" -j "$J" \
    --json "$OUT/daemon_$N.json" 2>&1 | tail -14
  kill -TERM $P; wait $P; log "daemon exit $?"
done
python3 - "$OUT" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
for f in sorted(out.glob("inproc_*.json")):
    n = f.stem.split("_")[1]
    a = json.loads(f.read_text())["summary"]
    b = json.loads((out / f"daemon_{n}.json").read_text())["summary"]
    sa, sb = a["wall_s"] / a["succeeded"], b["wall_s"] / b["succeeded"]
    print(f"synthetic:{n}: in-process {sa*1e3:.1f} ms/proof ({a['proofs_per_minute']:.1f}/min), daemon "
          f"{sb*1e3:.1f} ms/proof ({b['proofs_per_minute']:.1f}/min), overhead "
          f"{(sb-sa)*1e3:+.1f} ms = {100*(sb-sa)/sa:+.2f} %; daemon latency avg "
          f"{b['latency_avg_s']*1e3:.1f} ms, client-minus-engine median "
          f"{b['daemon_overhead_median_s']*1e3:.1f} ms")
PY
