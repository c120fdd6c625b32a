"""Small circuits for tests: one hand-written, one random."""

from __future__ import annotations

import random
from dataclasses import dataclass

from cuzk.field.constants import R
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination


@dataclass(frozen=True)
class CubeCircuit:
    """x³ + x + 5 = y with y public; ``cheat`` breaks the witness of one named constraint."""

    x: int
    cheat: bool = False
    circuit_id: str = "test:cube"

    def synthesize(self, cs: ConstraintSystem) -> None:
        x_val = self.x % R
        y_val = (x_val**3 + x_val + 5) % R
        y = cs.alloc_input("y", y_val)
        x = cs.alloc("x", x_val)
        with cs.namespace("cube"):
            sq = cs.alloc("x^2", x_val * x_val % R)
            cs.enforce("square", x, x, sq)
            cube_val = sq_val = x_val * x_val % R
            cube_val = sq_val * x_val % R + (1 if self.cheat else 0)
            cube = cs.alloc("x^3", cube_val)
            cs.enforce("cube", sq, x, cube)
        cs.enforce("sum", lambda lc: lc.add_term(cube).add_term(x).add_term(ONE, 5), ONE, y)


@dataclass(frozen=True)
class RandomCircuit:
    """Random linear combinations over random variables: a shape-agnostic stress for CSR code.
    Its constraints are generally unsatisfied; it exists to compare evaluation paths."""

    seed: int
    num_inputs: int = 3
    num_aux: int = 40
    num_constraints: int = 60
    circuit_id: str = "test:random"

    def synthesize(self, cs: ConstraintSystem) -> None:
        rng = random.Random(self.seed)
        vars_ = [cs.alloc_input(f"in{i}", rng.randrange(R)) for i in range(self.num_inputs)]
        vars_ += [
            cs.alloc(f"aux{i}", rng.choice([0, 1, rng.randrange(R)])) for i in range(self.num_aux)
        ]
        vars_.append(ONE)
        for k in range(self.num_constraints):
            sides = []
            for _ in range(3):
                lc = LinearCombination()
                for _ in range(rng.randrange(0, 6)):
                    coeff = rng.choice([1, R - 1, 2, rng.randrange(R)])
                    lc.add_term(rng.choice(vars_), coeff)
                sides.append(lc)
            cs.enforce(f"c{k}", *sides)
