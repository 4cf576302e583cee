"""Correlation of blocks of rows with c on the host: direct, overlap-save or one long FFT.

``out[r, i] = sum_{j < k, i + j < n} c_j z[r, i + j]`` (the sliding dot of docs/math.md §2) by

* ``direct``: the compiled O(n k) sum (:func:`~minsep.schemes.kernels.cpu_kernels.correlate_rows`);
* ``overlap``: overlap-save with real FFTs of a short length N (a few times k): output block
  ``[a, a + L)`` with ``L = N - k + 1`` is the first L values of the circular correlation of
  ``z[a : a + N]`` (zero beyond n) with c, where no index wraps around;
* ``fft``: one real FFT pair of length ``>= n + k - 1`` per row.

The FFT methods run on numpy's pocketfft (engine ``numpy``) or, where the optional ``fftw``
extra (pyfftw) is installed, on FFTW (engine ``fftw``, :mod:`.fftw_correlation`: faster
transforms where measured, docs/performance.md).

All three compute the same sums (FFTs to about 1e-15 relative,
``tests/unit/schemes/kernels/test_correlation.py`` pins 1e-12). Which is fastest depends on n, k
and the machine (vector width, caches), so
:func:`plan` times the candidates on one block of the running machine, once per (n, k) and
process, instead of trusting a crossover measured elsewhere. With k <= :data:`ALWAYS_DIRECT`
the direct sum wins on every machine measured (an FFT pair costs more than 16 bands of direct
sums; docs/performance.md), so it is taken without measuring.

The environment variable ``MINSEP_CORRELATION`` overrides the measurement: ``direct``,
``overlap`` or ``fft`` force a method (on numpy's engine), ``fixed`` takes the deterministic
rule of :func:`fixed_plan` (direct up to :data:`FIXED_DIRECT_MAX_BANDS` bands, overlap-save
above, numpy's engine); ``measure`` (or unset) measures, FFTW included when installed. The
methods agree only to rounding, so a measured choice is written to a cache file of the machine
(:func:`cache_file`) and read back by every later process: the workers of a pool correlate as
the parent does and a run's bits do not depend on the executor (delete the file to measure
again, e.g. after a hardware change). Set ``fixed`` or a method where runs must agree bit for
bit across machines.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import os
import platform
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs
import numpy as np
import scipy
from scipy import fft as host_fft

from minsep.framework.errors import ConfigurationError
from minsep.schemes.kernels import cpu_kernels, fftw_correlation
from minsep.schemes.kernels.buffers import reusable

METHODS = ("direct", "overlap", "fft")
#: Values of ``MINSEP_CORRELATION``.
CHOICES = ("measure", "fixed", *METHODS)
#: Up to this many bands the direct sum is taken without measuring.
ALWAYS_DIRECT = 16
#: The deterministic rule's crossover (where it was measured: docs/performance.md).
FIXED_DIRECT_MAX_BANDS = 64
#: Bands above which the direct sum is not even measured (O(n k): it costs more than an FFT pair
#: beyond about 100 bands on the machines measured, docs/performance.md).
DIRECT_MEASURE_MAX_BANDS = 128
#: FFT lengths of overlap-save tried, as multiples of the band count.
OVERLAP_MULTIPLES = (2, 4, 8, 16)
#: Repetitions of each candidate when measuring (the best counts: load only slows a run down).
#: Under load 5 sometimes picked a slower plan; 15 picked the same one every time, for under a
#: second once per machine (docs/performance.md).
REPEATS = 15


def choice(environ: Mapping[str, str] | None = None) -> str:
    """The ``MINSEP_CORRELATION`` setting (``measure`` when unset)."""
    env = os.environ if environ is None else environ
    value = env.get("MINSEP_CORRELATION", "").strip().lower() or "measure"
    if value not in CHOICES:
        raise ConfigurationError(
            f"environment variable MINSEP_CORRELATION = {value!r} is invalid: must be one of "
            f"{list(CHOICES)}",
            parameter="MINSEP_CORRELATION",
        )
    return value


def _fast_length(size: int) -> int:
    return int(host_fft.next_fast_len(size, real=True))


@attrs.frozen
class Plan:
    """How to correlate rows of n steps with k bands.

    Attributes:
        method: ``direct``, ``overlap`` or ``fft``.
        n_steps: n.
        bands: k, the number of effective coefficients.
        length: the FFT length N (0 for ``direct``); for ``overlap`` each block yields
            ``N - k + 1`` outputs.
        rows: rows per block (the scratch is sized for it and reused; a shorter block uses
            part of it; FFTW's plans are made for exactly this many rows).
        engine: ``numpy`` or ``fftw``, the FFT library of ``overlap`` and ``fft``.
    """

    method: str
    n_steps: int
    bands: int
    length: int = 0
    rows: int = attrs.field(default=1, eq=False)
    engine: str = "numpy"

    @property
    def block_outputs(self) -> int:
        """L: outputs per FFT (``n`` for ``fft``)."""
        return self.length - self.bands + 1 if self.method == "overlap" else self.n_steps

    @property
    def blocks(self) -> int:
        """FFTs per row."""
        return -(-self.n_steps // self.block_outputs) if self.method == "overlap" else 1

    def run(self, z: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
        """``out[r, i] = sum_j c_j z[r, i + j]`` (cut at n) for every row of ``z``."""
        if self.method == "direct":
            cpu_kernels.correlate_rows(z, c, out)
        elif self.engine == "fftw":
            from minsep.schemes.kernels import fftw_correlation

            step = self.block_outputs
            fftw_correlation.correlate(
                z, c, out, length=self.length, step=step, blocks=self.blocks, rows=self.rows
            )
        elif self.method == "fft":
            self._full(z, c, out)
        else:
            self._overlap(z, c, out)

    def input_block(self, size: int) -> np.ndarray | None:
        """Where the ``size <= rows`` rows of a block may be drawn so that :meth:`run_input`
        correlates them without copying them (FFTW's input array), or None (other engines:
        draw elsewhere and :meth:`run`)."""
        if self.engine != "fftw" or self.method == "direct" or size > self.rows:
            return None
        step = self.block_outputs
        shape = (self.n_steps, self.bands, self.length, step, self.blocks, self.rows)
        return fftw_correlation.input_rows(*shape)[:size]

    def run_input(self, size: int, c: np.ndarray, out: np.ndarray) -> None:
        """:meth:`run` on the rows drawn into :meth:`input_block`."""
        fftw_correlation.correlate_input(
            size, c, out, length=self.length, step=self.block_outputs, blocks=self.blocks,
            rows=self.rows,
        )  # fmt: skip

    def _scratch(self, role: str, rows: int, *shape: int, dtype: type = np.float64) -> np.ndarray:
        return reusable((max(rows, self.rows), *shape), dtype, role=role)[:rows]

    def _full(self, z: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
        rows, n, length = z.shape[0], self.n_steps, self.length
        spectrum = self._scratch("fft-spectrum", rows, length // 2 + 1, dtype=np.complex128)
        np.fft.rfft(z, n=length, axis=-1, out=spectrum)
        spectrum *= _kernel(tuple(c.tolist()), length)
        inverse = self._scratch("fft-inverse", rows, length)
        np.fft.irfft(spectrum, n=length, axis=-1, out=inverse)
        out[...] = inverse[:, :n]

    def _overlap(self, z: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
        rows, n, length = z.shape[0], self.n_steps, self.length
        step, blocks = self.block_outputs, self.blocks
        width = blocks * step + self.bands - 1  # every segment inside, zeros past n
        padded = self._scratch("fft-input", rows, width)
        padded[:, :n] = z
        padded[:, n:] = 0.0
        item = padded.itemsize
        segments = np.lib.stride_tricks.as_strided(
            padded, shape=(rows, blocks, length), strides=(width * item, step * item, item),
            writeable=False,
        )  # fmt: skip
        spectrum = self._scratch("fft-spectrum", rows, blocks, length // 2 + 1, dtype=np.complex128)
        np.fft.rfft(segments, axis=-1, out=spectrum)
        spectrum *= _kernel(tuple(c.tolist()), length)
        inverse = self._scratch("fft-inverse", rows, blocks, length)
        np.fft.irfft(spectrum, n=length, axis=-1, out=inverse)
        whole = (blocks - 1) * step  # outputs of the blocks that end before n
        if whole:
            np.copyto(out[:, :whole].reshape(rows, blocks - 1, step), inverse[:, :-1, :step])
        out[:, whole:] = inverse[:, -1, : n - whole]


@functools.lru_cache(maxsize=64)
def _kernel(coefficients: tuple[float, ...], length: int) -> np.ndarray:
    """``conj(rfft(c, length))``: correlation in the frequency domain (cached, read-only)."""
    kernel = np.conj(np.fft.rfft(np.asarray(coefficients, dtype=np.float64), n=length))
    kernel.setflags(write=False)
    return kernel


def candidates(n_steps: int, bands: int, rows: int = 1, *, fftw: bool = True) -> list[Plan]:
    """The plans worth timing for (n, k): direct (up to :data:`DIRECT_MEASURE_MAX_BANDS`),
    overlap-save at FFT lengths of :data:`OVERLAP_MULTIPLES` times k that still split a row,
    and one long FFT, each FFT plan on numpy and (``fftw`` and pyfftw installed) on FFTW."""
    full = _fast_length(n_steps + bands - 1)
    plans = [Plan("direct", n_steps, bands)] if bands <= DIRECT_MEASURE_MAX_BANDS else []
    lengths = sorted({_fast_length(max(m * bands, bands + 15)) for m in OVERLAP_MULTIPLES})
    plans += [Plan("overlap", n_steps, bands, n, rows) for n in lengths if n < full]
    plans.append(Plan("fft", n_steps, bands, full, rows))
    if fftw and fftw_correlation.available():
        plans += [attrs.evolve(p, engine="fftw") for p in plans if p.method != "direct"]
    return plans


def fixed_plan(n_steps: int, bands: int, rows: int = 1) -> Plan:
    """The deterministic rule: direct up to :data:`FIXED_DIRECT_MAX_BANDS` bands, else
    overlap-save with N about 4 k (or one long FFT when that does not split a row)."""
    if bands <= FIXED_DIRECT_MAX_BANDS:
        return Plan("direct", n_steps, bands)
    full = _fast_length(n_steps + bands - 1)
    length = _fast_length(4 * bands)
    if length < full:
        return Plan("overlap", n_steps, bands, length, rows)
    return Plan("fft", n_steps, bands, full, rows)


def forced_plan(method: str, n_steps: int, bands: int, rows: int = 1) -> Plan:
    """The plan of a forced method (overlap-save with the rule's N of about 4 k)."""
    if method == "direct":
        return Plan("direct", n_steps, bands)
    full = _fast_length(n_steps + bands - 1)
    if method == "overlap":
        length = _fast_length(max(4 * bands, bands + 15))
        if length < full:
            return Plan("overlap", n_steps, bands, length, rows)
    return Plan("fft", n_steps, bands, full, rows)


def plan(n_steps: int, bands: int, rows: int) -> Plan:
    """The plan for blocks of ``rows`` rows of n steps and k bands, per ``MINSEP_CORRELATION``
    (measured once per process and (n, k, rows) by default)."""
    setting = choice()
    if bands <= ALWAYS_DIRECT or setting == "direct":
        return Plan("direct", n_steps, bands)
    if setting == "fixed":
        return fixed_plan(n_steps, bands, rows)
    if setting in METHODS:
        return forced_plan(setting, n_steps, bands, rows)
    return measured_plan(n_steps, bands, rows)


@functools.cache
def measured_plan(n_steps: int, bands: int, rows: int) -> Plan:
    """The fastest of :func:`candidates` on this machine, shared by its processes.

    The choice is looked up in (or, the first time, measured by :func:`measure` and written to)
    the machine's cache file (:func:`cache_file`), under a file lock: every worker process of
    a pool then correlates with the same method as the parent, so the bits of a run do not
    depend on which process drew a chunk. Without a usable cache directory each process
    measures for itself. Cached per process as well."""
    path = cache_file()
    if path is None:
        return measure(n_steps, bands, rows)
    key = f"{n_steps},{bands},{rows}"
    try:
        with _locked(path):
            table = _read(path)
            known = _plan_of(table.get(key), n_steps, bands, rows)
            if known is not None:
                return known
            chosen = measure(n_steps, bands, rows)
            table[key] = [chosen.method, chosen.length, chosen.engine]
            _write(path, table)
            return chosen
    except OSError:  # an unwritable or vanished cache directory: measure here
        return measure(n_steps, bands, rows)


def measure(n_steps: int, bands: int, rows: int) -> Plan:
    """The fastest of :func:`candidates`: each runs :data:`REPEATS` times on one block of fixed
    normals, interleaved, and the least CPU time of this thread counts (other processes on the
    machine slow a run down but do not bill it)."""
    plans = candidates(n_steps, bands, rows)
    z = np.random.Generator(np.random.SFC64(0)).standard_normal((rows, n_steps))
    c = np.linspace(1.0, 0.5, bands)
    out = np.empty_like(z)
    best = [float("inf")] * len(plans)
    for repeat in range(REPEATS + 1):
        for index, candidate in enumerate(plans):
            start = time.thread_time()
            candidate.run(z, c, out)
            if repeat:  # the first round compiles and warms the FFT plans
                best[index] = min(best[index], time.thread_time() - start)
    return plans[int(np.argmin(best))]


def cache_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """The file of measured choices: in ``MINSEP_CACHE_DIR``, else ``$XDG_CACHE_HOME/minsep``,
    else ``~/.cache/minsep``; its name carries the numpy and scipy versions and the machine
    type (other builds may rank the methods differently), and pyfftw's version where it is
    installed (so that installing it measures again). None when no directory can be made."""
    env = os.environ if environ is None else environ
    root = env.get("MINSEP_CACHE_DIR") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "minsep"
    )
    fftw = _installed_version("pyfftw")
    name = f"correlation-{platform.machine()}-numpy{np.__version__}-scipy{scipy.__version__}"
    name += f"-pyfftw{fftw}.json" if fftw else ".json"
    try:
        os.makedirs(root, exist_ok=True)
    except OSError:
        return None
    return Path(root) / name


def _installed_version(distribution: str) -> str | None:
    """The installed version of a distribution from its metadata (nothing is imported)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _plan_of(entry: object, n_steps: int, bands: int, rows: int) -> Plan | None:
    """The cached entry ``[method, length, engine]`` as a plan, if it is one of the candidates
    (a stale or edited file can cost speed, never correctness: every candidate computes the same
    correlation; an entry of FFTW where pyfftw is gone, or of an older format, is measured
    again)."""
    if not (isinstance(entry, list) and len(entry) == 3):
        return None
    for candidate in candidates(n_steps, bands, rows, fftw=entry[2] == "fftw"):
        if [candidate.method, candidate.length, candidate.engine] == entry:
            return candidate
    return None


def _read(path: Path) -> dict[str, object]:
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def _write(path: Path, table: dict[str, object]) -> None:
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(table, sort_keys=True))
    os.replace(temporary, path)  # readers see the old or the new file, never a torn one


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path``'s lock file where the platform has ``fcntl``."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock, last writer wins
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
