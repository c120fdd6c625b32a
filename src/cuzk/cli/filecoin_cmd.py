"""Filecoin subcommands of the ``cuzk`` command line: ``circuit-info`` and ``gen-vanilla``.

``cuzk circuit-info ID [--json] [--method auto|shape|structural]`` prints what a ``.params``
header would show for a circuit, without a witness: the constraint count (without the prover's
``input_i · 0 = 0`` rows), public inputs (without ONE), aux variables and the A/B density counts.
``shape`` synthesizes the whole circuit; ``structural`` synthesizes one PoSt sector and scales
(sectors share nothing but ONE); ``auto`` takes the real shape up to 512 MiB sectors and the
structural count for 32/64 GiB, whose WindowPoSt has over 125M constraints.

``cuzk gen-vanilla {winning-post,window-post} --sector-size 2KiB [--sectors N] [--seed S]
--out FILE`` builds random sectors (TreeR and TreeC from random data, up to 8 MiB), derives the
challenges as upstream does and writes a PoSt request: upstream's vanilla proof array in an
envelope with the randomness, prover id, partition and circuit id
(:func:`cuzk.circuits.filecoin.vanilla_json.read_request` reads it back into a circuit).
``porep`` seals a random sector and writes its C1 output; ``snap`` a SnapDeals update request.

``--virtual`` makes the same files for any sector size (32 GiB included) without building the
sector (:mod:`cuzk.circuits.filecoin.seal.virtual`): real challenges and parents, sparse trees,
megabytes and seconds. ``--format bincode`` writes PoSt and SnapDeals vanilla proofs as
filecoin-ffi returns them instead — a directory of ``.vproof`` files (one per sector or
partition, in order) and ``request.json`` with what ``cuzk client prove`` needs besides.
Every file is read back through the engine's parsers before the command succeeds (for PoSt
partitions over :data:`POST_CHECK_ALL` sectors, a sample of that many sectors).

Hook into ``cli/main.py``: ``filecoin_cmd.add_parsers(sub)`` in the parser builder and
``**filecoin_cmd.COMMANDS`` in its command table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from cuzk.circuits.catalogue import find_kind
from cuzk.errors import BadInput

SHAPE_MAX_SECTOR = 512 << 20  # auto: real shapes up to 512 MiB sectors
POST_CHECK_ALL = 64  # PoSt partitions with more sectors are checked on a sample this large
VIRTUAL_SECTORS = 8  # --virtual WindowPoSt sectors unless --sectors says otherwise


def add_parsers(sub: Any) -> None:
    """Register the Filecoin subcommands on the top-level subparsers."""
    from cuzk.circuits.filecoin.post import post_circuit_ids

    p = sub.add_parser(
        "circuit-info",
        help="constraint, input, aux and density counts of a circuit (no witness)",
        description="Counts of a circuit as a .params header fixes them. Known PoSt ids: "
        + ", ".join(post_circuit_ids()),
    )
    p.add_argument("circuit", metavar="ID", help="circuit id, e.g. winning-2k or synthetic:N")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--method",
        choices=["auto", "shape", "structural"],
        default="auto",
        help="shape: synthesize it all; structural: one PoSt sector × sectors (default auto)",
    )

    g = sub.add_parser(
        "gen-vanilla",
        help="vanilla proofs (upstream JSON layouts) from random small sectors, for proving",
        description="winning-post / window-post: a PoSt request for random sectors; porep: "
        "seal a random sector and write its C1 output; snap: a SnapDeals update of a random "
        "sector (our envelope around upstream's PartitionProofs). --virtual: the same for any "
        "sector size without building the sector.",
    )
    g.add_argument(
        "post",
        metavar="KIND",
        choices=["winning-post", "window-post", "porep", "snap"],
        help="winning-post, window-post, porep or snap",
    )
    g.add_argument(
        "--api",
        default="1.1.0",
        choices=["1.0.0", "1.1.0"],
        help="porep: StackedDrg…V1 (1.0.0) or …V1_1 (1.1.0, default)",
    )
    g.add_argument("--sector-size", default="2KiB", choices=list(SIZES),
                   help="512MiB and up need --virtual")  # fmt: skip
    g.add_argument("--virtual", action="store_true",
                   help="virtual sector: real challenges and parents, random labels and leaves "
                   "where nothing checks them, sparse trees (any size, seconds)")  # fmt: skip
    g.add_argument(
        "--format",
        choices=["json", "bincode"],
        default="json",
        help="bincode (--virtual PoSt/snap): --out is a directory of .vproof files",
    )
    g.add_argument("--sectors", type=int, help="WindowPoSt sectors (default: a full partition; "
                   f"--virtual: at most {VIRTUAL_SECTORS})")  # fmt: skip
    g.add_argument("--partition", type=int, default=0, help="WindowPoSt partition index")
    g.add_argument("--seed", type=int, help="reproducible sectors and randomness")
    g.add_argument("--out", required=True, type=Path, help="request file to write")


def cmd_gen_vanilla(args: argparse.Namespace) -> int:
    import numpy as np

    if args.virtual:
        return _gen_virtual(args)
    if args.format != "json":
        raise BadInput("--format bincode is written for --virtual sectors")
    if SIZES[args.sector_size][0] > SEALED_MAX:
        raise BadInput(f"{args.sector_size} sectors are not built here; add --virtual")
    if args.post in ("porep", "snap"):
        return _gen_sealed(args)

    from cuzk.circuits.filecoin.post import post_params
    from cuzk.circuits.filecoin.vanilla_json import random_request

    suffix = SIZES[args.sector_size][1]
    params = post_params(f"{'winning' if args.post == 'winning-post' else 'wpost'}-{suffix}")
    t = time.perf_counter()
    text, vanilla = random_request(params, np.random.default_rng(args.seed), args.sectors,
                                   args.partition)  # fmt: skip
    count = len(vanilla)
    args.out.write_text(text + "\n")
    print(f"wrote {args.out}: {params.circuit_id}, {count} sector(s), "
          f"{sum(len(v.proof.inclusion_proofs) for v in vanilla)} inclusion proofs "
          f"({time.perf_counter() - t:.2f} s)")  # fmt: skip
    return 0


# --sector-size → bytes, circuit id suffix
SIZES = {"2KiB": (2 << 10, "2k"), "8MiB": (8 << 20, "8m"), "512MiB": (512 << 20, "512m"),
         "32GiB": (32 << 30, "32g"), "64GiB": (64 << 30, "64g")}  # fmt: skip
SEALED_MAX = 8 << 20  # largest sector gen-vanilla builds for real


def _gen_sealed(args: argparse.Namespace) -> int:
    """``gen-vanilla porep|snap``: a C1 output of a freshly sealed random sector, or a SnapDeals
    update request; the document is read back through the engine's parser before it is kept."""
    import secrets

    from cuzk.circuits import open_statement

    if args.sectors is not None or args.partition:
        raise BadInput(f"--sectors and --partition are PoSt options, not {args.post}'s")
    seed = args.seed if args.seed is not None else secrets.randbits(63)
    size, suffix = SIZES[args.sector_size]
    circuit_id = f"{args.post}-{suffix}"
    t = time.perf_counter()
    if args.post == "porep":
        from cuzk.circuits.filecoin.seal import generate_c1

        text = generate_c1(size, seed, api=args.api)
    else:
        from cuzk.circuits.filecoin.snap_vanilla import generate_update

        text = generate_update(size, seed)
    statement = open_statement(circuit_id, payload=text.encode())
    args.out.write_text(text + "\n")
    print(f"wrote {args.out}: {circuit_id}, {statement.partitions} partition(s) "
          f"({time.perf_counter() - t:.2f} s)")  # fmt: skip
    return 0


def _gen_virtual(args: argparse.Namespace) -> int:
    """``gen-vanilla --virtual``: the same documents for a virtual sector of any size."""
    import secrets

    from cuzk.circuits import open_statement
    from cuzk.circuits.filecoin.seal import virtual

    seed = args.seed if args.seed is not None else secrets.randbits(63)
    size, suffix = SIZES[args.sector_size]
    t = time.perf_counter()
    if args.post in ("porep", "snap"):
        if args.sectors is not None or args.partition:
            raise BadInput(f"--sectors and --partition are PoSt options, not {args.post}'s")
        if args.post == "porep":
            if args.format != "json":
                raise BadInput("a C1 output is JSON (upstream's SealCommitPhase1Output)")
            doc = virtual.virtual_seal(size, seed, api=args.api).c1_document()
            text = json.dumps(doc, separators=(",", ":"))
        else:
            update = virtual.virtual_update(size, seed)
            doc = update.document()
            text = json.dumps(doc)
            if args.format == "bincode":
                _write_snap_bincode(args.out, doc, update)
        del doc  # the parser below builds its own objects; do not hold both
        circuit_id = f"{args.post}-{suffix}"
        statement = open_statement(circuit_id, payload=text.encode())
        if args.format == "json":
            args.out.write_text(text + "\n")
        print(f"wrote {args.out}: virtual {circuit_id}, {statement.partitions} partition(s), "
              f"{len(text) / 1e6:.1f} MB of JSON, checked by its parser "
              f"({time.perf_counter() - t:.1f} s)")  # fmt: skip
        return 0
    return _gen_virtual_post(args, size, suffix, seed, t)


def _gen_virtual_post(args: argparse.Namespace, size: int, suffix: str, seed: int,
                      t: float) -> int:  # fmt: skip
    from cuzk.circuits.filecoin.post import post_params
    from cuzk.circuits.filecoin.seal import virtual
    from cuzk.circuits.filecoin.vanilla_json import sector_vanilla_json, write_request
    from cuzk.circuits.filecoin.wire import prover_id
    from cuzk.server.convert import SECTOR_SIZES

    params = post_params(f"{'winning' if args.post == 'winning-post' else 'wpost'}-{suffix}")
    sectors = args.sectors
    if sectors is None and params.kind == "window":
        sectors = min(params.sector_count, VIRTUAL_SECTORS)
    vanilla, randomness = virtual.virtual_post(params, seed, sectors, args.partition)
    miner_id = virtual.Draws(seed).fe("miner id") >> 214  # a 40-bit actor id
    n = len(vanilla)
    picks = sorted({0, n - 1, *range(0, n, max(1, n // (POST_CHECK_ALL - 2)))})[:POST_CHECK_ALL]
    if args.format == "bincode":
        from cuzk.circuits.filecoin.bincode_write import post_sector_proof
        from cuzk.circuits.filecoin.vanilla_bincode import sector_proof_from_bincode

        args.out.mkdir(parents=True, exist_ok=True)
        names = [f"sector-{i:04d}-{sv.sector_id}.vproof" for i, sv in enumerate(vanilla)]
        for name, sv in zip(names, vanilla, strict=True):
            (args.out / name).write_bytes(post_sector_proof(sector_vanilla_json(sv, params)))
        index = SECTOR_SIZES.index(size) + (0 if params.kind == "winning" else 10)
        _write_meta(args.out, {
            "kind": params.kind if params.kind == "winning" else "wpost",
            "registered_proof": index, "sector_size": size, "miner_id": miner_id,
            "randomness": randomness.to_bytes(32, "little").hex(),
            "partition_index": args.partition, "vanilla_proofs": names,
        })  # fmt: skip
        docs = {i: sector_proof_from_bincode((args.out / names[i]).read_bytes(), names[i])
                for i in picks}  # fmt: skip
    else:
        from cuzk.circuits.filecoin.vanilla_json import read_request

        with args.out.open("w") as f:
            write_request(f, params, vanilla, randomness, prover_id(miner_id), args.partition)
            f.write("\n")
        if n <= POST_CHECK_ALL:  # the whole request, envelope included
            read_request(args.out.read_text())
        # Larger: the sampled sectors as write_request serialised them.
        docs = {i: json.loads(json.dumps(sector_vanilla_json(vanilla[i], params)))
                for i in picks}  # fmt: skip
    _check_post(params, docs, [sv.sector_id for sv in vanilla], randomness, args.partition)
    checked = len(picks)
    proofs = sum(len(v.proof.inclusion_proofs) for v in vanilla)
    print(f"wrote {args.out}: virtual {params.circuit_id}, {len(vanilla)} sector(s), {proofs} "
          f"inclusion proofs, {checked} sector(s) checked by the parser "
          f"({time.perf_counter() - t:.1f} s)")  # fmt: skip
    return 0


def _check_post(params: Any, docs: dict[int, dict[str, Any]], sector_ids: list[int],
                randomness: int, partition: int) -> None:  # fmt: skip
    """Read sector proofs (position → serde tree) back through the PoSt parser and check
    they prove the leaves the randomness challenges."""
    from cuzk.circuits.filecoin.merkle_json import leaf_index
    from cuzk.circuits.filecoin.vanilla_json import challenged_leaves, loads

    read = loads(json.dumps(list(docs.values())), params)
    want = challenged_leaves(params, sector_ids, randomness, partition)
    for i, sv in zip(docs, read, strict=True):
        got = [leaf_index(m, params.tree) for m in sv.proof.inclusion_proofs]
        if sv.sector_id != sector_ids[i] or got != want[i]:
            raise BadInput(f"sector {i}: proves leaves {got} of sector {sv.sector_id}, the "
                           f"challenges are {want[i]} of sector {sector_ids[i]}")  # fmt: skip


def _write_snap_bincode(out: Path, doc: dict[str, Any], update: Any) -> None:
    from cuzk.circuits.filecoin.bincode_write import snap_partition_proof
    from cuzk.server.convert import SECTOR_SIZES

    out.mkdir(parents=True, exist_ok=True)
    names = []
    for k, part in enumerate(doc["partition_proofs"]):
        names.append(f"partition-{k:02d}.vproof")
        (out / names[-1]).write_bytes(snap_partition_proof(part))
    size = update.params.sector_size
    meta: dict[str, Any] = {"kind": "snap", "registered_proof": SECTOR_SIZES.index(size),
                            "sector_size": size, "h": update.h}  # fmt: skip
    for name in ("comm_r_old", "comm_d_new", "comm_r_new"):
        meta[name] = getattr(update, name).to_bytes(32, "little").hex()
    _write_meta(out, {**meta, "vanilla_proofs": names})


def _write_meta(out: Path, meta: dict[str, Any]) -> None:
    (out / "request.json").write_text(json.dumps(meta, indent=1) + "\n")


def circuit_info(circuit_id: str, method: str = "auto") -> dict[str, Any]:
    """The counts for ``circuit_id`` as a JSON-ready dict (``method`` says how they were made).

    Raises:
        BadInput: unknown id, or ``structural`` asked of a circuit that has no structure to use.
    """
    from cuzk.circuits.filecoin.post import (
        param_file_stem,
        post_params,
        shape_counts,
        structural_counts,
    )

    t = time.perf_counter()
    found = find_kind(circuit_id)
    kind = found.name if found is not None else ""
    if kind in ("winning", "wpost"):
        params = post_params(circuit_id)
        if method == "auto":
            method = "shape" if params.sector_size <= SHAPE_MAX_SECTOR else "structural"
        counts = shape_counts(params) if method == "shape" else structural_counts(params)
        info: dict[str, Any] = {"circuit": circuit_id, **counts.as_dict()}
        info.update(
            sector_size=params.sector_size,
            sectors=params.sector_count,
            challenges_per_sector=params.challenge_count,
            tree_arities=params.tree.arities,
            identifier=params.identifier,
            param_file=param_file_stem(params) + ".params",
        )
    elif kind in ("porep", "snap"):
        from cuzk.circuits.filecoin import porep, snap

        if method == "auto":
            method = "structural"  # even 2 KiB PoRep is 2.7M constraints (a 3 GB shape)
        by_shape = method == "shape"
        if kind == "porep":
            pp = porep.porep_params(circuit_id)
            counts = porep.shape_counts(pp) if by_shape else porep.structural_counts(pp)
            size, ident, stem = pp.sector_size, pp.identifier, porep.param_file_stem(pp)
        else:
            sp = snap.snap_params(circuit_id)
            counts = snap.shape_counts(sp) if by_shape else snap.structural_counts(sp)
            size, ident, stem = sp.sector_size, sp.identifier, snap.param_file_stem(sp)
        info = {"circuit": circuit_id, **counts.as_dict(), "sector_size": size,
                "identifier": ident, "param_file": stem + ".params"}  # fmt: skip
    else:
        if method == "structural":
            raise BadInput(f"{circuit_id}: structural counts exist only for Filecoin circuits")
        from cuzk.circuits import get_circuit
        from cuzk.r1cs import ShapeCS

        cs = ShapeCS()
        get_circuit(circuit_id).synthesize(cs)
        n = len(cs.names)
        shape = cs.finish(circuit_id)
        info = {
            "circuit": circuit_id,
            "num_constraints": n,
            "num_inputs": shape.num_inputs - 1,
            "num_aux": shape.num_aux,
            "a_aux_density": int(shape.a_aux_density.sum()),
            "b_input_density": int(shape.b_input_density.sum()),
            "b_aux_density": int(shape.b_aux_density.sum()),
            "method": "shape",
        }
    info["seconds"] = round(time.perf_counter() - t, 3)
    return info


def cmd_circuit_info(args: argparse.Namespace) -> int:
    info = circuit_info(args.circuit, args.method)
    if args.json:
        print(json.dumps(info))
        return 0
    labels = [
        ("num_constraints", "constraints (without input rows)"),
        ("num_inputs", "public inputs (without ONE)"),
        ("num_aux", "aux variables"),
        ("a_aux_density", "aux in A"),
        ("b_input_density", "inputs in B (ONE included)"),
        ("b_aux_density", "aux in B"),
    ]
    print(f"{info['circuit']}  ({info['method']} count, {info['seconds']:.1f} s)")
    for key, label in labels:
        print(f"  {label:34} {info[key]:>14,}")
    if "sectors" in info:
        print(
            f"  {'sectors × challenges':34} {info['sectors']:>8} × {info['challenges_per_sector']}"
        )
        print(f"  {'TreeR arities (bottom-up)':34} {info['tree_arities']}")
    if "param_file" in info:
        print(f"  {'official parameters':34} {info['param_file']}")
    return 0


COMMANDS = {"circuit-info": cmd_circuit_info, "gen-vanilla": cmd_gen_vanilla}
"""Command name → handler, merged into ``cli/main.py``'s table."""
