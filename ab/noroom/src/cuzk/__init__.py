"""cuzk: a persistent, pipelined Groth16 proving engine for BLS12-381.

Layers, lowest first (a layer never imports one above it; ``tests/test_layering.py`` checks it):
``errors``/``openmp`` → ``field``/``curve`` (math) → ``poly`` → ``r1cs`` → ``gadgets`` →
``circuits`` → ``backend`` → ``groth16`` → ``interop`` → ``engine`` → ``server`` → ``cli``.
"""

__version__ = "0.1.0"
