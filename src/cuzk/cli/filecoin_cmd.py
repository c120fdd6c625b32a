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

Hook into ``cli/main.py``: ``filecoin_cmd.add_parsers(sub)`` in the parser builder and
``**filecoin_cmd.COMMANDS`` in its command table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from cuzk.errors import BadInput

SHAPE_MAX_SECTOR = 512 << 20  # auto: real shapes up to 512 MiB sectors


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
        "sector (our envelope around upstream's PartitionProofs).",
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
    g.add_argument("--sector-size", default="2KiB", choices=["2KiB", "8MiB"])
    g.add_argument("--sectors", type=int, help="WindowPoSt sectors (default: a full partition)")
    g.add_argument("--partition", type=int, default=0, help="WindowPoSt partition index")
    g.add_argument("--seed", type=int, help="reproducible sectors and randomness")
    g.add_argument("--out", required=True, type=Path, help="request file to write")


def cmd_gen_vanilla(args: argparse.Namespace) -> int:
    import numpy as np

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


SIZES = {"2KiB": (2 << 10, "2k"), "8MiB": (8 << 20, "8m")}  # --sector-size → bytes, id suffix


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
    if circuit_id.startswith(("winning-", "wpost-")):
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
    elif circuit_id.startswith(("porep-", "snap-")):
        from cuzk.circuits.filecoin import porep, snap

        if method == "auto":
            method = "structural"  # even 2 KiB PoRep is 2.7M constraints (a 3 GB shape)
        by_shape = method == "shape"
        if circuit_id.startswith("porep-"):
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
