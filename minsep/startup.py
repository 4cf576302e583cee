"""Start-up cost in CPU-seconds: ``python -m minsep.startup [--workers N] [--repeats R]``.

Load-independent figures (CPU time, not wall time, so that a shared machine reads about the
same as an idle one), each the median of ``--repeats`` fresh interpreters:

* ``import``: ``import minsep.schemes, minsep.accountants`` (every registry);
* ``help``: ``minsep epsilon --help`` (the whole CLI parser);
* ``pool``: a fresh process pool of ``--workers`` running one small b-min-sep chunk each: the
  parent's imports and model, the forkserver (its preloads, once per process) and each worker
  up to and including its first chunk (read from /proc; Linux only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

__all__ = ["main", "measure_pool", "process_cpu"]

_IMPORT = "import minsep.schemes, minsep.accountants"
_HELP = (
    "import sys\nfrom minsep.framework.cli.main import main\n"
    "try:\n    main(['epsilon', '--help'])\nexcept SystemExit:\n    pass\n"
)


def process_cpu(pid: int) -> float:
    """User plus system CPU-seconds of process ``pid`` so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _child_cpu(code: str) -> float:
    """CPU-seconds of a fresh interpreter running ``code`` (its own and its children's)."""
    before = os.times()
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL, timeout=300)
    after = os.times()
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def measure_pool(workers: int) -> dict[str, Any]:
    """In this (fresh) process: import, build a model, run one chunk per worker on a new pool."""
    start_cpu, start = time.process_time(), time.perf_counter()
    import multiprocessing.forkserver as forkserver

    from minsep.framework.interfaces import Direction
    from minsep.framework.montecarlo import ChunkTask, ProcessExecutor
    from minsep.framework.montecarlo.executors import _default_start_method, _pool
    from minsep.framework.setup import build_scheme, build_strategy

    scheme = build_scheme("b_min_sep", 1000, 0.01, {"min_sep": 4})
    model = scheme.loss_model(build_strategy(1000, 4))
    parent = time.process_time() - start_cpu
    task = ChunkTask(
        model, (1.0,), 256 * workers, 1, chunk_size=256, directions=(Direction.REMOVE,)
    )
    executor = ProcessExecutor(max_workers=workers)
    first = time.perf_counter()
    list(executor.map(task, range(workers)))
    figures: dict[str, Any] = {
        "parent_cpu": parent,
        "first_chunks_wall": time.perf_counter() - first,
        "total_wall": time.perf_counter() - start,
    }
    pool = _pool(workers, _default_start_method())
    figures["workers_cpu"] = sorted(process_cpu(pid) for pid in pool._processes or {})
    server = getattr(forkserver._forkserver, "_forkserver_pid", None)
    figures["forkserver_cpu"] = process_cpu(server) if server else 0.0
    return figures


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m minsep.startup``."""
    parser = argparse.ArgumentParser(prog="python -m minsep.startup", description=__doc__)
    parser.add_argument("--workers", type=int, default=2, help="pool size (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per figure")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--pool-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pool_only:  # the child of the pool figure
        print(json.dumps(measure_pool(args.workers)))
        return 0
    result: dict[str, Any] = {
        "import_cpu": statistics.median(_child_cpu(_IMPORT) for _ in range(args.repeats)),
        "help_cpu": statistics.median(_child_cpu(_HELP) for _ in range(args.repeats)),
    }
    runs = []
    for _ in range(args.repeats):
        out = subprocess.run(
            [sys.executable, "-m", "minsep.startup", "--pool-only", "--workers", str(args.workers)],
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    for key in ("parent_cpu", "forkserver_cpu", "first_chunks_wall"):
        result[key] = statistics.median(r[key] for r in runs)
    result["worker_cpu"] = statistics.median(c for r in runs for c in r["workers_cpu"])
    result["load"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"CPU-seconds, median of {args.repeats} fresh processes (load {result['load']:.2f})")
    print(f"  import minsep.schemes, .accountants  {result['import_cpu']:.2f}")
    print(f"  minsep epsilon --help                {result['help_cpu']:.2f}")
    print(f"  pool parent (imports + model)        {result['parent_cpu']:.2f}")
    print(f"  pool forkserver (once per process)   {result['forkserver_cpu']:.2f}")
    print(f"  pool worker, up to its first chunk   {result['worker_cpu']:.2f}")
    wall = result["first_chunks_wall"]
    print(f"  wall to the first chunk of each of {args.workers} workers: {wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
