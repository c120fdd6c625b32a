"""Circuit gadgets with bellperson's exact constraint and allocation order, and the native code
that checks them.

Filecoin's parameter files fix every constraint and variable position, so each gadget here
reproduces its upstream counterpart (bellpepper-core 0.2 booleans and numbers, bellperson's
UInt32/MultiEq/SHA-256, neptune's legacy Poseidon circuit, storage-proofs-core's insertion and
PoR) including constant folding and the order of allocations. Layer: imports ``cuzk.field`` and
``cuzk.r1cs`` only.

Modules: :mod:`boolean`, :mod:`num`, :mod:`multipack`, :mod:`multieq`, :mod:`uint32`,
:mod:`sha256` (circuit, constants, Filecoin's node hash, native replays), :mod:`poseidon`
(constants, native, bulk kernel, circuit), :mod:`insertion`, :mod:`merkle` (native trees),
:mod:`por`.

Every gadget takes the constraint system first and an optional ``ns`` name prefix last (names
never reach the R1CS; they label constraints for CheckCS and ShapeCS). Values are ``None`` in
shape mode.
"""

from cuzk.gadgets.boolean import FALSE, TRUE, AllocatedBit, Boolean
from cuzk.gadgets.num import AllocatedNum, Num
from cuzk.gadgets.uint32 import UInt32

__all__ = ["FALSE", "TRUE", "AllocatedBit", "AllocatedNum", "Boolean", "Num", "UInt32"]
