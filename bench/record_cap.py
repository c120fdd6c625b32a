"""Record one capped bench in a results file's ``filecoin.<circuit>.vram_cap.<cap>`` entry, the
fields issue 31 asks for, read the same way every time from ``cuzk bench --json``'s summary.

    python3 bench/record_cap.py bench/results/h200.json porep-32g 16GiB \\
        bench/results/s26/call1_bench_porep-32g_16GiB.json.gz --note "2026-12-06, session 26 ..."
    python3 bench/record_cap.py bench/results/h100.json porep-32g 16GiB@32cfe3c BENCH --baseline
    python3 bench/record_cap.py bench/results/h200.json wpost-32g 24GiB BENCH --latency

Fields: s/proof, s/proof with the pipeline full (the kernels' span over the proofs: no
fill or drain), GPU s a partition (the kernels' median), steady device busy, the device's
measured peak, host RSS and page-locked key bytes, the bytes a partition uploads and their rate
over the kernels' time, the key load, pool give-backs, what streams, proofs and whether all
verified. An entry already there is replaced; its s/proof and GPU s are kept in the new one's
``before`` (one step back, not a chain). ``--baseline`` writes under ``vram_cap_baselines``
(a same-card A/B's other side) instead; ``--latency`` names s/proof ``latency_s`` (a bench
with one proof in flight, as WindowPoSt's entries are).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

GIB = 2**30


def summary_of(path: str) -> dict[str, Any]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    summary: dict[str, Any] = doc["summary"]
    if "s_per_proof_steady" not in summary and summary["succeeded"]:  # benches before it
        from cuzk.engine.request import PartitionTimeline
        from cuzk.engine.timeline import kernels_span

        span = kernels_span([PartitionTimeline(**t) for t in doc["timelines"]])
        summary["s_per_proof_steady"] = span / summary["succeeded"]
    return summary


def entry(summary: dict[str, Any], note: str) -> dict[str, Any]:
    """The results entry of one bench summary (one device)."""
    device = summary["device_memory"][0]
    measured = summary["partitions_measured"]
    return {
        "s_per_proof": round(summary["s_per_proof"], 3),
        "s_per_proof_steady": round(summary["s_per_proof_steady"], 3),
        "gpu_s_per_partition": round(summary["stage_medians_s"]["kernels"], 4),
        "device_busy_steady": round(summary["device_busy_steady"][0], 3),
        "peak_vram_gib": round(device["peak_bytes"] / GIB, 2),
        "peak_host_gib": round(summary["host_peak_rss_bytes"] / GIB, 2),
        "pinned_host_gib": round(summary["host_srs_bytes"] / GIB, 2),
        "pcie_gb_per_partition": round(device["uploaded_bytes"] / measured / 1e9, 1),
        "pcie_gb_s_in_kernel_time": round(
            device["uploaded_bytes"] / device["kernel_seconds"] / 1e9, 1
        ),
        # the fill (benches since session 36): the first request queued, the first witness
        # (since session 38), the first kernels
        **{
            k: round(summary[k], 2)
            for k in ("first_queued_s", "first_witness_s", "first_kernels_s")
            if summary.get(k) is not None
        },
        "key_load_s": round(summary["keys_s"], 2),
        "give_backs": device["give_backs"],
        "streamed": summary["streamed"],
        "proofs": summary["succeeded"],
        "verified": summary["failed"] == 0 and summary["succeeded"] > 0,
        "note": note,
    }


def record(
    results: dict[str, Any], circuit: str, cap: str, new: dict[str, Any], section: str
) -> None:
    entries = results.setdefault("filecoin", {}).setdefault(circuit, {}).setdefault(section, {})
    old = entries.get(cap)
    if old is not None and (old.get("s_per_proof") or old.get("latency_s")) is not None:
        keys = ("s_per_proof", "latency_s", "gpu_s_per_partition")
        new["before"] = {k: old[k] for k in keys if old.get(k) is not None}
        new["before"]["note"] = str(old.get("note", ""))[:200]
    entries[cap] = new


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="the results file (created if missing)")
    ap.add_argument("circuit")
    ap.add_argument("cap", help='"16GiB", …, "none"')
    ap.add_argument("bench", help="cuzk bench --json output (.json or .json.gz)")
    ap.add_argument("--note", default="", help="date, session, commit, where the raw files are")
    ap.add_argument("--baseline", action="store_true", help="under vram_cap_baselines")
    ap.add_argument("--latency", action="store_true", help="s/proof as latency_s (1 in flight)")
    args = ap.parse_args()
    path = Path(args.results)
    results = json.loads(path.read_text()) if path.exists() else {}
    new = entry(summary_of(args.bench), args.note)
    if args.latency:
        new = {("latency_s" if k == "s_per_proof" else k): v for k, v in new.items()}
    record(
        results, args.circuit, args.cap, new, "vram_cap_baselines" if args.baseline else "vram_cap"
    )
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    shown = {k: v for k, v in new.items() if k not in ("note", "streamed", "before")}
    print(f"{args.circuit} {args.cap}: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
