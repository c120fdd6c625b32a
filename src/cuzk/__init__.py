"""cuzk: a persistent, pipelined Groth16 proving engine for BLS12-381.

Layers, lowest first (a layer never imports one above it):
``field``/``curve`` (math) → ``poly`` → ``r1cs`` → ``circuits`` → ``backend`` →
``groth16`` → ``engine`` → ``server`` → ``cli``.
"""

__version__ = "0.1.0"
