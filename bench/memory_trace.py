"""Run a cuzk command with the device-memory trace on (what decides whether a partition fits
under a memory cap): every device allocation of 64 MiB or more, with the pool's bytes in use
and held and the code that asked, and every refusal, go to $MEMORY_LOG, and so does each
streamed key vector's load (how long page-locking, reading and converting it took).

    CUZK="python3 bench/memory_trace.py" MEMORY_LOG=/tmp/out/memory.log bash bench/filecoin_32g.sh
"""

import logging
import os
import sys

from cuzk.backend.cuda.memory import memory_log
from cuzk.cli.main import main

if __name__ == "__main__":
    handler = logging.FileHandler(os.environ.get("MEMORY_LOG", "memory.log"))
    handler.setFormatter(logging.Formatter("%(relativeCreated)9.0f %(levelname)s %(message)s"))
    memory_log.addHandler(handler)
    memory_log.setLevel(logging.DEBUG)
    loads = logging.getLogger("cuzk.backend.cuda.msm_bases")
    loads.addHandler(handler)
    loads.setLevel(logging.INFO)
    sys.exit(main(sys.argv[1:]))
