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
megabytes and seconds. ``--curio`` (any kind, real or virtual) writes the bytes Curio sends
instead: a directory of the vanilla proof files (the compact C1 wrapper; bincode PoSt and
SnapDeals proofs, one per sector or partition, in order) and ``request.json`` with the rest of
the SubmitProofRequest (:func:`curio_message` rebuilds it), so anyone can replay a Curio
request. Every file is read back through the engine's parsers (``--curio``: through the
daemon's converter first) before the command succeeds (for PoSt partitions over
:data:`POST_CHECK_ALL` sectors, a sample of that many sectors).

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
        "--curio",
        action="store_true",
        help="--out is a directory of the bytes Curio sends: the vanilla proof files (compact "
        "C1 wrapper; bincode PoSt and SnapDeals proofs) and request.json (the rest of the "
        "SubmitProofRequest, proto3 JSON)",
    )
    g.add_argument("--sectors", type=int, help="WindowPoSt sectors (default: a full partition; "
                   f"--virtual: at most {VIRTUAL_SECTORS})")  # fmt: skip
    g.add_argument("--partition", type=int, default=0, help="WindowPoSt partition index")
    g.add_argument("--seed", type=int, help="reproducible sectors and randomness")
    g.add_argument("--out", required=True, type=Path, help="request file to write")


def cmd_gen_vanilla(args: argparse.Namespace) -> int:
    import secrets

    seed = args.seed if args.seed is not None else secrets.randbits(63)
    if args.virtual:
        return _gen_virtual(args, seed)
    if SIZES[args.sector_size][0] > SEALED_MAX:
        raise BadInput(f"{args.sector_size} sectors are not built here; add --virtual")
    if args.post in ("porep", "snap"):
        return _gen_sealed(args, seed)

    import numpy as np

    from cuzk.circuits.filecoin.post import post_params
    from cuzk.circuits.filecoin.vanilla_json import random_request

    suffix = SIZES[args.sector_size][1]
    params = post_params(f"{'winning' if args.post == 'winning-post' else 'wpost'}-{suffix}")
    t = time.perf_counter()
    text, vanilla = random_request(params, np.random.default_rng(seed), args.sectors,
                                   args.partition)  # fmt: skip
    if args.curio:
        randomness = int.from_bytes(bytes(json.loads(text)["randomness"]), "little")
        _write_curio_post(args.out, params, vanilla, randomness, _miner_id(seed), args.partition)
        _check_curio(args.out)
    else:
        args.out.write_text(text + "\n")
    print(f"wrote {args.out}: {params.circuit_id}, {len(vanilla)} sector(s), "
          f"{sum(len(v.proof.inclusion_proofs) for v in vanilla)} inclusion proofs "
          f"({time.perf_counter() - t:.2f} s)")  # fmt: skip
    return 0


# --sector-size → bytes, circuit id suffix
SIZES = {"2KiB": (2 << 10, "2k"), "8MiB": (8 << 20, "8m"), "512MiB": (512 << 20, "512m"),
         "32GiB": (32 << 30, "32g"), "64GiB": (64 << 30, "64g")}  # fmt: skip
SEALED_MAX = 8 << 20  # largest sector gen-vanilla builds for real


def _miner_id(seed: int) -> int:
    """A 40-bit actor id drawn from ``seed`` (the miner a --curio request names)."""
    from cuzk.circuits.filecoin.seal.virtual import Draws

    return Draws(seed).fe("miner id") >> 214


def _gen_sealed(args: argparse.Namespace, seed: int) -> int:
    """``gen-vanilla porep|snap``: a C1 output of a freshly sealed random sector, or a SnapDeals
    update request; the document is read back through the engine's parser before it is kept."""

    if args.sectors is not None or args.partition:
        raise BadInput(f"--sectors and --partition are PoSt options, not {args.post}'s")
    size, suffix = SIZES[args.sector_size]
    circuit_id = f"{args.post}-{suffix}"
    t = time.perf_counter()
    miner, sector = _miner_id(seed), seed % (1 << 32)
    if args.post == "porep":
        from cuzk.circuits.filecoin.seal import generate_c1
        from cuzk.circuits.filecoin.wire import prover_id

        ids = (prover_id(miner), sector) if args.curio else None
        text = generate_c1(size, seed, api=args.api, ids=ids)
    else:
        from cuzk.circuits.filecoin.snap_vanilla import generate_update

        text = generate_update(size, seed)
    partitions = _keep_sealed(args, circuit_id, text, miner, sector)
    print(f"wrote {args.out}: {circuit_id}, {partitions} partition(s) "
          f"({time.perf_counter() - t:.2f} s)")  # fmt: skip
    return 0


def _keep_sealed(args: argparse.Namespace, circuit_id: str, text: str, miner: int,
                 sector: int) -> int:  # fmt: skip
    """Write a PoRep C1 or SnapDeals document (``--curio``: as Curio sends it) once the
    engine's parser has read it back; its partition count."""
    from cuzk.circuits import open_statement

    if args.curio:
        _write_curio_sealed(args.out, args.post, text, SIZES[args.sector_size][0], miner, sector)
        return _check_curio(args.out)
    partitions = open_statement(circuit_id, payload=text.encode()).partitions
    args.out.write_text(text + "\n")
    return partitions


def _gen_virtual(args: argparse.Namespace, seed: int) -> int:
    """``gen-vanilla --virtual``: the same documents for a virtual sector of any size."""
    from cuzk.circuits.filecoin.seal import virtual

    size, suffix = SIZES[args.sector_size]
    t = time.perf_counter()
    if args.post not in ("porep", "snap"):
        return _gen_virtual_post(args, size, suffix, seed, t)
    if args.sectors is not None or args.partition:
        raise BadInput(f"--sectors and --partition are PoSt options, not {args.post}'s")
    miner, sector = _miner_id(seed), seed % (1 << 32)
    if args.post == "porep":
        from cuzk.circuits.filecoin.wire import prover_id

        ids = (prover_id(miner).to_bytes(32, "little"), sector) if args.curio else None
        doc = virtual.virtual_seal(size, seed, api=args.api, ids=ids).c1_document()
    else:
        doc = virtual.virtual_update(size, seed).document()
    text = json.dumps(doc, separators=(",", ":"))
    del doc  # the parser below builds its own objects; do not hold both
    circuit_id = f"{args.post}-{suffix}"
    partitions = _keep_sealed(args, circuit_id, text, miner, sector)
    print(f"wrote {args.out}: virtual {circuit_id}, {partitions} partition(s), "
          f"{len(text) / 1e6:.1f} MB of JSON, checked by its parser "
          f"({time.perf_counter() - t:.1f} s)")  # fmt: skip
    return 0


def _gen_virtual_post(args: argparse.Namespace, size: int, suffix: str, seed: int,
                      t: float) -> int:  # fmt: skip
    from cuzk.circuits.filecoin.post import post_params
    from cuzk.circuits.filecoin.seal import virtual
    from cuzk.circuits.filecoin.vanilla_json import sector_vanilla_json, write_request
    from cuzk.circuits.filecoin.wire import prover_id

    params = post_params(f"{'winning' if args.post == 'winning-post' else 'wpost'}-{suffix}")
    sectors = args.sectors
    if sectors is None and params.kind == "window":
        sectors = min(params.sector_count, VIRTUAL_SECTORS)
    vanilla, randomness = virtual.virtual_post(params, seed, sectors, args.partition)
    miner_id = _miner_id(seed)
    n = len(vanilla)
    picks = sorted({0, n - 1, *range(0, n, max(1, n // (POST_CHECK_ALL - 2)))})[:POST_CHECK_ALL]
    if args.curio:
        from cuzk.circuits.filecoin.vanilla_bincode import sector_proof_from_bincode

        names = _write_curio_post(args.out, params, vanilla, randomness, miner_id, args.partition)
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


# -- --curio: the bytes Curio sends ----------------------------------------------------------
#
# A directory: the vanilla proof files exactly as Curio puts them in the request (PoRep: the
# compact C1 wrapper; PoSt: one bincode FallbackPoStSectorProof per sector; SnapDeals: one
# bincode PartitionProof per partition) and request.json, holding the rest of Curio's
# SubmitProofRequest in proto3 JSON ("message": field names as in the .proto, bytes base64,
# uint64 as strings) and the files' names in request order ("vanilla_proof" or
# "vanilla_proofs"). :func:`curio_message` rebuilds the message; any gRPC client can.

CURIO_REQUEST = "request.json"


def curio_message(out: Path) -> Any:
    """The SubmitProofRequest a ``--curio`` directory holds (BadInput if it is malformed)."""
    from google.protobuf import json_format

    from cuzk import safejson
    from cuzk.cli.inputs import read_input
    from cuzk.server.proto import proving_pb2 as pb

    meta = safejson.loads(read_input(out / CURIO_REQUEST), str(out / CURIO_REQUEST))
    if not isinstance(meta, dict) or not isinstance(meta.get("message"), dict):
        raise BadInput(f"{out / CURIO_REQUEST}: expected an object with a 'message' object")
    try:
        msg = json_format.ParseDict(meta["message"], pb.SubmitProofRequest())
    except json_format.ParseError as e:
        raise BadInput(f"{out / CURIO_REQUEST}: {e}") from None
    if isinstance(meta.get("vanilla_proof"), str):
        msg.vanilla_proof = read_input(out / meta["vanilla_proof"])
    msg.vanilla_proofs.extend(read_input(out / n) for n in meta.get("vanilla_proofs", []))
    return msg


def _write_curio(out: Path, fields: dict[str, Any], files: dict[str, Any]) -> None:
    from google.protobuf import json_format

    from cuzk.server.proto import proving_pb2 as pb

    msg = json_format.MessageToDict(pb.SubmitProofRequest(**fields),
                                    preserving_proto_field_name=True)  # fmt: skip
    (out / CURIO_REQUEST).write_text(json.dumps({"message": msg, **files}, indent=1) + "\n")


def _write_curio_post(out: Path, params: Any, vanilla: list[Any], randomness: int, miner: int,
                      partition: int) -> list[str]:  # fmt: skip
    """PoSt as Curio sends it: HIGH (WindowPoSt) or CRITICAL (WinningPoSt), Go abi number,
    one bincode proof per sector; partition 0 is absent on the wire (proto3's default)."""
    from cuzk.circuits.filecoin.bincode_write import post_sector_proof
    from cuzk.circuits.filecoin.vanilla_json import sector_vanilla_json
    from cuzk.server.convert import SECTOR_SIZES

    out.mkdir(parents=True, exist_ok=True)
    names = [f"sector-{i:04d}-{sv.sector_id}.vproof" for i, sv in enumerate(vanilla)]
    for name, sv in zip(names, vanilla, strict=True):
        (out / name).write_bytes(post_sector_proof(sector_vanilla_json(sv, params)))
    rand = randomness.to_bytes(32, "little")
    winning = params.kind == "winning"
    ids = " ".join(str(sv.sector_id) for sv in vanilla)
    _write_curio(out, {
        "request_id": f"winpost-{miner}-{rand.hex()}" if winning
        else f"wdpost-{miner}-{partition}-[{ids}]",
        "proof_kind": "WINNING_POST" if winning else "WINDOW_POST_PARTITION",
        "registered_proof": SECTOR_SIZES.index(params.sector_size) + (0 if winning else 10),
        "sector_size": params.sector_size, "priority": "CRITICAL" if winning else "HIGH",
        "miner_id": miner, "randomness": rand, "partition_index": partition,
    }, {"vanilla_proofs": names})  # fmt: skip
    return names


def _write_curio_sealed(out: Path, kind: str, text: str, size: int, miner: int,
                        sector: int) -> None:  # fmt: skip
    """PoRep (the C1 output in Curio's compact wrapper) or SnapDeals (bincode partition
    proofs and the raw commitments) as Curio sends them, at NORMAL."""
    from cuzk.server.convert import SECTOR_SIZES

    out.mkdir(parents=True, exist_ok=True)
    fields: dict[str, Any] = {
        "request_id": f"{kind}-{miner}-{sector}", "sector_size": size, "priority": "NORMAL",
        "sector_number": sector, "miner_id": miner,
    }  # fmt: skip
    if kind == "porep":
        from cuzk.circuits.filecoin.porep_c1 import registered_porep, wrap_for_curio

        seal = registered_porep(json.loads(text)["registered_proof"])
        (out / "c1-wrapper.json").write_text(wrap_for_curio(text, sector, size))
        # filecoin-proofs-api's registry id is Go's abi.RegisteredSealProof number
        fields.update(proof_kind="POREP_SEAL_COMMIT", registered_proof=seal.registry_id)
        _write_curio(out, fields, {"vanilla_proof": "c1-wrapper.json"})
        return
    from cuzk.circuits.filecoin.bincode_write import snap_partition_proof

    doc = json.loads(text)
    names = [f"partition-{k:02d}.vproof" for k in range(len(doc["partition_proofs"]))]
    for name, part in zip(names, doc["partition_proofs"], strict=True):
        (out / name).write_bytes(snap_partition_proof(part))
    for c in ("comm_r_old", "comm_r_new", "comm_d_new"):
        fields[c] = bytes(doc[c])
    fields.update(proof_kind="SNAP_DEALS_UPDATE", registered_proof=SECTOR_SIZES.index(size))
    _write_curio(out, fields, {"vanilla_proofs": names})


def _check_curio(out: Path) -> int:
    """Read a ``--curio`` directory back the way the daemon reads a request (the converter,
    then the kind's parser, every partition checked); its partition count."""
    from cuzk.circuits import open_statement
    from cuzk.server.convert import to_engine

    request = to_engine(curio_message(out)).request
    return open_statement(request.circuit_id, payload=request.payload).partitions


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
