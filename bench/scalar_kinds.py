"""How a Filecoin partition's MSM scalars split into zeros, ones and the rest (issue 31: whether
the points of zero scalars are worth skipping before they cross the bus).

Usage: python bench/scalar_kinds.py [porep-2k snap-2k ...] [--seed 1234] [--chunk 4096]

For partition 0 of each circuit (random data), prints the share of zero, one and other values
in z, in L's scalars (the aux tail), in A's and in B's (z gathered through the shape's rows),
and the share of aligned chunks of --chunk scalars that are all zero (what a streamed pass
could skip without gathering points on the host).
"""

from __future__ import annotations

import argparse

import numpy as np

from cuzk.circuits import open_statement
from cuzk.circuits.catalogue import get_circuit
from cuzk.field import fr
from cuzk.r1cs import DEFAULT_OPTIONS, synthesize_shape, synthesize_witness


def partition(cid: str, seed: int):  # type: ignore[no-untyped-def]
    if cid.startswith("porep"):
        from cuzk.circuits.filecoin.seal import generate_c1

        return open_statement(cid, payload=generate_c1(2048, seed).encode()).circuit(0)
    if cid.startswith("snap"):
        from cuzk.circuits.filecoin.snap_vanilla import generate_update

        return open_statement(cid, payload=generate_update(2048, seed).encode()).circuit(0)
    from cuzk.circuits.filecoin.post import post_params
    from cuzk.circuits.filecoin.vanilla_json import random_request

    text, _ = random_request(post_params(cid), np.random.default_rng(seed))
    return open_statement(cid, payload=text.encode()).circuit(0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("circuits", nargs="*", default=["porep-2k"])
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--chunk", type=int, default=4096)
    args = ap.parse_args()
    one = fr.ones(1)[0]
    for cid in args.circuits:
        cs = synthesize_witness(partition(cid, args.seed), DEFAULT_OPTIONS)
        z = np.concatenate([fr.from_ints(cs.inputs), cs.aux_vector()])
        zero, ones = (z == 0).all(axis=1), (z == one).all(axis=1)
        shape = synthesize_shape(get_circuit(cid), cid)
        for name, sel in (
            ("z", slice(None)),
            ("L (aux)", slice(len(cs.inputs), None)),
            ("A rows", np.asarray(shape.a_z_rows)),
            ("B rows", np.asarray(shape.b_z_rows)),
        ):
            zz, oo = zero[sel], ones[sel]
            whole = len(zz) // args.chunk * args.chunk
            empty = zz[:whole].reshape(-1, args.chunk).all(axis=1).mean() if whole else 0.0
            print(
                f"{cid} {name}: {len(zz)} scalars, zero {zz.mean():.3f}, one {oo.mean():.3f}, "
                f"other {1 - zz.mean() - oo.mean():.3f}; {args.chunk}-scalar chunks all zero "
                f"{empty:.3f}"
            )


if __name__ == "__main__":
    main()
