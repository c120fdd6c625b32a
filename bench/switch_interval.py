"""Run a Python script with another interpreter switch interval (how long a thread may hold
the GIL while another waits for it; Python's default is 5 ms). Under a device memory cap a
partition makes hundreds of host waits (each MSM pass plans its scalars), and each thread
that wakes from one must take the lock back; this measures whether that wait matters.

    PY="python3 bench/switch_interval.py 0.0005" OUT=$OUT CAPS=16GiB bash bench/capped_sweep.sh
    python3 bench/switch_interval.py 0.0005 bench/memory_trace.py bench --backend cuda ...
"""

import runpy
import sys

if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    sys.setswitchinterval(float(sys.argv[1]))
    script = sys.argv[2]
    sys.argv = sys.argv[2:]
    runpy.run_path(script, run_name="__main__")
