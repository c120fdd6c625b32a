#!/usr/bin/env bash
# Steps for one call on the GPU machine, each under what is left of a deadline, logs in $OUT
# (each folder of $OUT is packed into <folder>.tgz at the end: see tidy below).
# Usage there: OUT=$OUT DEADLINE=590 bash bench/device_steps.sh tests p24 e22
# SRC=$PWD/ab/<tree>/src runs every step but abcap and smsmab (their trees are $AB's) on that
# source tree instead of the checkout's src (the tests too: a pending kernel change on trial).
#   tests  the GPU test suite (CuPy tests and the CUDA halves of the conformance suite)
#   p24    2^24 synthetic proofs: keys, then one at a time and two in flight
#   e22    the engine's 10 × 2^22 proofs (bench/engine_matrix.sh, staging, 2 workers)
#   c22    the engine's MSM copies: 2^22 synthetic proofs with --msm-copies 1, then 13
#   etests the engine's Filecoin GPU test: an 8 MiB SnapDeals update from its payload (keys made
#          on the GPU, 4 partitions through staging); its CPU tests (marked heavy) run elsewhere
#   wtests the device-witness GPU tests (snap-8m's included), then the interop and groth16 ones
#   mtests the MSM GPU tests alone
#   ctests the GPU tests of the capped path (MSMs, whole proofs, a/b/c, the engine under a cap)
#   qtests the few of them over streamed keys, page-locked host memory, the two lanes and planned passes
#   cap    porep-32g under $CAPS (default "16GiB 24GiB"), 2 proofs each after the warm-ups, with
#          the device-request trace (TRACER=stream_trace.py for the device timeline instead;
#          COLD=1 reads the key from the disk, not the page cache; SPY_ON=1 samples every
#          thread with py-spy into spy_<cap>.txt); logs in $OUT/cap (back as cap.tgz: three
#          caps' files would pass the 8 that come back)
#   cap4w  porep-32g at 16 GiB with four device workers over PROOFS (default 14) proofs: many
#          partitions under a tight cap without a deadlock or an out-of-memory error
#   wab    porep-32g (or CIRCUIT) under $CAPS (default 16GiB) with two device workers, then
#          four, in one call on one machine (PROOFS each, default 2; logs in $OUT/wpd2 and
#          $OUT/wpd4): the A/B that decides whether a cap should default to four workers
#   sorder five porep-32g partitions synthesized at once on 8 pool processes, and an urgent one
#          0.3 s later, the pool's tasks first come first served and in rank order
#          (bench/synth_order.py on prep's C1): when each witness is ready
#   opener the engine's payload opener on prep's porep-32g C1 with 1 helper and with this host's
#          default (each helper decoding and checking its share of the partitions): what a
#          request waits before its partitions queue (HELPERS=1,5,10 for other counts)
#   prep   porep-32g's keys and inputs alone (capped_sweep.sh's first half), so that later calls
#          on the same warm machine spend their time on the benches
#   abcap  porep-32g at 16 GiB (ABCAP) once per source tree of $AB (commits made here with
#          bench/ab_trees.sh ab <commits>, carried as `ab`), PROOFS (default 2) proofs each,
#          logs in $OUT/<commit>
#   smsm   one G1 2^27 MSM, dense scalars (H's), resident, in passes and streamed, at the
#          pass sizes $PASS_MIB (default "576,768": the H lane's buffers under a cap, and
#          session 27's larger ones, measured slower in the engine and not kept)
#   smsmw  the same MSM at 576 MiB passes with the carried buckets' window forced: dense at 19
#          (what the first pass chooses), 20 and 21; PoRep-like bits at 16, 18 and 20
#   smsmab H's MSM alone (as smsm, dense, 576 MiB passes) once per source tree of $AB (made with
#          bench/ab_trees.sh ab <commits>, carried as `ab`), with $WINDOWS (e.g. "dense:20") also
#          timed (CHUNKS=21: the accumulation at 2^21 chunks, the engine's second lane's);
#          logs in $OUT/smsm_<tree>.log: the A/B of an MSM kernel change in one call
#   lanes  the two MSM lanes of a capped device side by side without the engine (lane_pair.py):
#          H (G1 2^27 dense, second lane) beside a chain of planned bits MSMs (2^27, 2^25, 2^27)
#          on the first, alone and together, at the second lane's chunk counts $DCHUNKS
#          (default 19,20,21,22): whether H's long blocks stretch the first lane
#   ncumsm Nsight Compute on the dense MSM's first digits (count, scatter) and accumulation
#          launches (G1 2^23, one pass, H's kind of scalars, at the second lane's chunk count):
#          what bounds each (atomics, memory, latency), before changing either
#   msmred G1 2^16–2^24 and G2 2^14–2^24, the bucket reduction's plan vs the fixed 32-bucket one
#   copies precomputed bases (GpuMsm.precompute): their GPU tests, then plain vs K copies on
#          distinct bases, G1 2^20/24/26 and G2 2^20/22 (results cross-checked, making time),
#          at choose_window's window and at narrower ones (K@C)
#   msmba  batch-affine against XYZZ bucket accumulation (G1 2^20/24/26, G2 2^20/22)
#   dwit   witness made on the device, 2 KiB circuits (SHA-256 and Poseidon deferred)
#   snap8m SnapDeals 8 MiB (4 × 10M constraints): keys, an update, 6 proofs with 2 in flight
#   snapc  snap-8m again (after snap8m, same keys) with 1 and 4 proofs in flight
#   p32    porep-32g: keys, virtual C1, 6 proofs with 2 in flight, then 2 one at a time
#   w32    wpost-32g: keys, virtual vanilla proofs, 3 proofs one at a time (61 GB key: run it
#          after p32 only on a fresh disk, or remove /var/tmp/cuzk32 first)
#   p32x   porep-32g through the engine on 1, 2 (and 4) of the host's GPUs, 2 proofs in flight
#          per GPU (issue 20: the scaling; keys once)
#   p32u   after p32x on a host with ≥ 128 GB of disk: wpost-32g keys and a full Curio
#          partition, then porep-32g on every GPU with that WindowPoSt submitted CRITICAL every
#          30 s (cuzk bench --urgent): how long it waits
#   w32c   wpost-32g, a full partition (2,349 sectors) as Curio sends it: keys, the --curio
#          directory, 3 proofs one at a time (the latency, request reading included)
#   w32cap the same partition under a 24 GiB device memory cap (issue 31), 2 proofs one at a
#          time after the bench's warm-ups; clears /var/tmp/cuzk32 first (the 61 GB key needs
#          the disk to itself)
set -u
OUT=${OUT:?set OUT}
DEADLINE=${DEADLINE:-590}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:${SRC:-$PWD/src} PYTHONUNBUFFERED=1
# CuPy's compiled kernels: a fresh machine spends ≈ 40 s compiling the MSM modules at the
# first key load. KCACHE=1 returns them as $OUT/kcache.tgz; a copy of that file carried as
# .kcache.tgz (git-ignored) starts the next machine with them.
export CUPY_CACHE_DIR=/tmp/kc
mkdir -p /tmp/kc
[ -f .kcache.tgz ] && tar xzf .kcache.tgz -C /tmp/kc
# At most 8 files come back from $OUT (bench/NOTES.md, session 35: a call's 14 files lost a
# tree's JSON and memory trace). At the exit each folder of $OUT becomes one <folder>.tgz
# (its charts dropped: the bench JSON keeps the timelines they draw), and what is left is listed.
tidy() {
  [ "${KCACHE:-0}" = 1 ] && tar czf "$OUT/kcache.tgz" -C /tmp/kc .
  find "$OUT" -name '*.png' -delete
  for d in "$OUT"/*/; do
    [ -d "$d" ] || continue
    local name; name=$(basename "$d")
    tar czf "$OUT/$name.tgz" -C "$OUT" "$name" && rm -rf "$d"
  done
  local n; n=$(find "$OUT" -type f | wc -l)
  echo "== \$OUT holds $n files$([ "$n" -gt 8 ] && echo ': more than the 8 that come back')"
  ls "$OUT"
}
trap tidy EXIT
CUZK="python3 -m cuzk.cli.main"
SMSM_H="python3 bench/streamed_msm.py --group g1 --log 27 --mix dense --runs 3"  # H's MSM alone
left() { echo $((DEADLINE - SECONDS)); }
step() {  # name, command...
  local name=$1; shift
  local t=$(left)
  if [ "$t" -lt 30 ]; then echo "== $name skipped: ${t}s left"; return; fi
  echo "== $(date +%T) $name (${t}s left)"
  timeout "$t" bash -c "$*" >"$OUT/$name.log" 2>&1
  echo "== $name rc=$? after $SECONDS s"; tail -${TAIL:-12} "$OUT/$name.log"
}
SPY=""
spy() {  # SPY=1: py-spy samples the cap benches' threads (idle ones too), if ptrace allows
  [ "${SPY_ON:-0}" = 1 ] || return 0
  if /tmp/site/bin/py-spy record -d 1 --nonblocking -o /tmp/spy_try.txt --format raw \
      -- python3 -c 'import time; time.sleep(1.5)' >/tmp/spy_try.log 2>&1; then
    SPY="/tmp/site/bin/py-spy record --idle --threads --nonblocking --format raw -r 50"
  else
    echo "== py-spy cannot run here: $(tail -1 /tmp/spy_try.log)"
  fi
}
nvidia-smi -L; df -h /tmp /var/tmp | tail -2
for s in "$@"; do
  case $s in
    tests) TAIL=6 step tests "python3 -m pytest -q -m gpu -p no:cacheprovider tests/backend \
      tests/interop/test_cuda_interop.py tests/groth16" ;;
    p24) step p24 "$CUZK setup --circuit synthetic:16777216 --out /tmp/k24 --seed 1 --backend cuda \
      --shape-cache /tmp/s24 && for c in 1 2; do $CUZK bench --backend cuda \
      --circuit synthetic:16777216 --proofs \$((2 + 2 * c)) --concurrency \$c --param-dir /tmp/k24 \
      --shape-cache /tmp/s24 --json $OUT/p24_c\$c.json 2>&1 | grep -E 'seconds per|kernels|synthesis |stage '; done" ;;
    c22) step c22 "$CUZK setup --circuit synthetic:4194304 --out /tmp/k22 --seed 1 --backend cuda \
      --shape-cache /tmp/s22 && for k in 1 13; do $CUZK bench --backend cuda \
      --circuit synthetic:4194304 --proofs 8 --concurrency 2 --param-dir /tmp/k22 --msm-copies \$k \
      --shape-cache /tmp/s22 --json $OUT/c22_k\$k.json 2>&1 | grep -E 'seconds per|wall time|kernels|msm|busy'; done" ;;
    etests) TAIL=6 step etests "python3 -m pytest -q -s -m gpu -p no:cacheprovider \
      tests/engine/test_filecoin_engine.py" ;;
    wtests) TAIL=20 step wtests "python3 -m pytest -v -m gpu -p no:cacheprovider --durations 5 \
      tests/backend/test_cuda_witness.py tests/interop/test_cuda_interop.py tests/groth16" ;;
    mtests) TAIL=6 step mtests "python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/backend/test_cuda_msm.py" ;;
    ctests) TAIL=6 step ctests "python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/backend/test_cuda_msm.py tests/backend/test_cuda_prove.py \
      tests/backend/test_cuda_abc.py tests/engine/test_cuda_capped_engine.py" ;;
    qtests) TAIL=6 step qtests "python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/backend/test_cuda_fr.py tests/backend/test_cuda_msm.py \
      tests/backend/test_cuda_prove.py tests/backend/test_cuda_abc.py -k 'pinned or two_lanes or streamed or planned'" ;;
    cap) spy; TAIL=40 step cap "SPY='$SPY' OUT=$OUT/cap CAPS='${CAPS:-16GiB 24GiB}' PROOFS=2 PER_CAP_S=${PER_CAP_S:-240} COLD=${COLD:-0} \
      TRACER=${TRACER:-memory_trace.py} bash bench/capped_sweep.sh" ;;
    cap4w) TAIL=40 step cap4w "OUT=$OUT/cap4w CAPS=16GiB PROOFS=${PROOFS:-14} WPD=4 PER_CAP_S=${PER_CAP_S:-560} \
      bash bench/capped_sweep.sh" ;;
    wab) for w in 2 4; do TAIL=30 step "wpd$w" "OUT=$OUT/wpd$w CAPS='${CAPS:-16GiB}' \
      PROOFS=${PROOFS:-2} WPD=$w PER_CAP_S=${PER_CAP_S:-220} bash bench/capped_sweep.sh"; done ;;
    opener) step opener "python3 bench/bench_open.py porep-32g /var/tmp/cuzk32/porep-32g.vanilla \
      --helpers ${HELPERS:-1,$(python3 -c 'from cuzk.engine.opener import default_helpers as d; print(d())')} \
      --runs 3" ;;
    sorder) step sorder "python3 bench/synth_order.py --payload /var/tmp/cuzk32/porep-32g.vanilla \
      --partitions 5 --processes 8 --runs 2 --urgent-after 0.3" ;;
    prep) step prep "OUT=$OUT/prep CAPS=' ' bash bench/capped_sweep.sh" ;;
    abcap) for c in ${AB:?set AB}; do step "ab_$c" "mkdir -p $OUT/$c && \
      PYTHONPATH=/tmp/site:$PWD/ab/$c/src OUT=$OUT/$c CAPS=${ABCAP:-16GiB} PROOFS=${PROOFS:-2} PER_CAP_S=${PER_CAP_S:-$((200 + 20 * ${PROOFS:-2}))} \
      bash bench/capped_sweep.sh"; done ;;
    smsm) step smsm "$SMSM_H --pass-mib ${PASS_MIB:-576,768} --out $OUT" ;;
    smsmw) step smsmw "python3 bench/streamed_msm.py --group g1 --log 27 --mix dense,bits \
      --pass-mib 576 --runs 3 --windows dense:19,20,21 --windows bits:16,18,20 --out $OUT" ;;
    smsmab) for t in ${AB:?set AB}; do mkdir -p $OUT/$t; step "smsm_$t" "PYTHONPATH=/tmp/site:$PWD/ab/$t/src \
      $SMSM_H --pass-mib 576 ${WINDOWS:+--windows $WINDOWS} ${CHUNKS:+--chunks $CHUNKS} --out $OUT/$t"; done ;;
    ncumsm) step ncumsm "mkdir -p $OUT/ncu && NCU=\$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1) && \
      \$NCU --clock-control none --kernel-name regex:'msm_digits|msm_accumulate' --launch-count 3 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
      --section WarpStateStats --section SchedulerStats python3 bench/streamed_msm.py --group g1 \
      --log 23 --mix dense --pass-mib 576 --runs 1 --chunks \$(python3 -c 'from cuzk.backend.cuda.msm \
      import DENSE_LANE_CHUNKS as c; print(c.bit_length() - 1)') --out $OUT/ncu" ;;
    lanes) step lanes "python3 bench/lane_pair.py --dense-chunks ${DCHUNKS:-19,20,21,22} --out $OUT" ;;
    msmred) step msmred "python3 bench/gpu_msm.py --g1 16:24 --g2 14:24 --no-fp --no-save \
      --runs 5 --reduce-threads 0 --profile 14,16,20" ;;
    copies) step copies "python3 -m pytest -q -m gpu -p no:cacheprovider tests/backend/test_cuda_msm.py \
      -k precomputed; python3 bench/gpu_msm.py --g1 '' --g2 '' --no-fp --no-save --runs 5 \
      --copies g1:20,24,26:2,4,13,13@20,6@20 --copies g2:20,22:2,4,16,16@18" ;;
    msmba) step msmba "python3 bench/gpu_msm.py --g1 '' --g2 '' --no-fp --no-save --runs 5 \
      --batch-affine g1:20,24,26 --batch-affine g2:20,22" ;;
    dwit) step dwit "for c in porep-2k snap-2k wpost-2k winning-2k; do \
      python3 bench/bench_device_witness.py --circuit \$c --backend cuda; done" ;;
    snap8m) step snap8m "rm -rf /var/tmp/cuzk8m; OUT=$OUT WORK=/var/tmp/cuzk8m CIRCUIT=snap-8m \
      SIZE=8MiB CONC=2 PROOFS=6 CUZK='$CUZK' bash bench/filecoin_32g.sh" ;;
    snapc) step snapc "for c in 1 4; do OUT=$OUT WORK=/var/tmp/cuzk8m CIRCUIT=snap-8m SIZE=8MiB \
      STEPS=bench CONC=\$c PROOFS=\$((4 * c)) TAG=_c\$c CUZK='$CUZK' bash bench/filecoin_32g.sh; done" ;;
    p32) step p32 "OUT=$OUT WORK=/var/tmp/cuzk32 SHAPES=/dev/shm/shapes CIRCUIT=porep-32g CONC=2 \
      PROOFS=6 CUZK='$CUZK' bash bench/filecoin_32g.sh && OUT=$OUT WORK=/var/tmp/cuzk32 \
      SHAPES=/dev/shm/shapes CIRCUIT=porep-32g STEPS=bench CONC=1 PROOFS=2 WPD=1 TAG=_one \
      CUZK='$CUZK' bash bench/filecoin_32g.sh" ;;
    p32x) step p32x "N=\$(nvidia-smi -L | wc -l); for d in 1 2 4; do [ \$d -le \$N ] || break; \
      OUT=$OUT WORK=/var/tmp/cuzk32 SHAPES=/dev/shm/shapes CIRCUIT=porep-32g CONC=\$((2 * d)) \
      PROOFS=\$((4 * d)) TAG=_d\$d BENCH_ARGS=\"--devices \$d\" CUZK='$CUZK' \
      bash bench/filecoin_32g.sh; done" ;;
    p32u) step p32u "N=\$(nvidia-smi -L | wc -l); OUT=$OUT WORK=/var/tmp/cuzk32 \
      SHAPES=/dev/shm/shapes CIRCUIT=wpost-32g STEPS='setup vanilla' \
      VANILLA=/var/tmp/cuzk32/wpost-32g.curio VANILLA_ARGS='--sectors 2349 --seed 3 --curio' \
      CUZK='$CUZK' bash bench/filecoin_32g.sh && OUT=$OUT WORK=/var/tmp/cuzk32 \
      SHAPES=/dev/shm/shapes CIRCUIT=porep-32g STEPS=bench CONC=\$((2 * N)) PROOFS=\$((4 * N)) \
      TAG=_urgent BENCH_ARGS=\"--devices \$N --urgent wpost-32g=/var/tmp/cuzk32/wpost-32g.curio \
      --urgent-every 30\" CUZK='$CUZK' bash bench/filecoin_32g.sh" ;;
    w32) step w32 "rm -rf /var/tmp/cuzk32 /dev/shm/shapes; OUT=$OUT WORK=/var/tmp/cuzk32 \
      SHAPES=/dev/shm/shapes CIRCUIT=wpost-32g CONC=1 PROOFS=3 CUZK='$CUZK' bash bench/filecoin_32g.sh" ;;
    w32c) step w32c "rm -rf /var/tmp/cuzk32 /dev/shm/shapes; \
      OUT=$OUT WORK=/var/tmp/cuzk32 SHAPES=/dev/shm/shapes CIRCUIT=wpost-32g CONC=1 PROOFS=3 \
      VANILLA=/var/tmp/cuzk32/wpost-32g.curio VANILLA_ARGS='--sectors 2349 --seed 3 --curio' \
      TAG=_curio CUZK='$CUZK' bash bench/filecoin_32g.sh" ;;
    w32cap) step w32cap "rm -rf /var/tmp/cuzk32 /dev/shm/shapes; \
      OUT=$OUT WORK=/var/tmp/cuzk32 SHAPES=/dev/shm/shapes CIRCUIT=wpost-32g CONC=1 PROOFS=2 \
      VANILLA=/var/tmp/cuzk32/wpost-32g.curio VANILLA_ARGS='--sectors 2349 --seed 3 --curio' \
      CAPS=24GiB PER_CAP_S=$(($(left) - 240)) bash bench/capped_sweep.sh" ;;
    e22) step e22 "OUT=$OUT SIZE=4194304 BACKEND=cuda PROOFS=6 WORKERS=2 MODES=staging \
      DEVICES_ALL=1 CUZK='$CUZK' bash bench/engine_matrix.sh" ;;
  esac
done
