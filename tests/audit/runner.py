"""Audit cases and how one is run and judged.

A :class:`Case` is one input with its expected outcome class:

* ``clear_error``: the input must be refused. Through the API: an exception of the
  ``MinsepError`` family whose message names the parameter (one of ``names``). Through the
  CLI: a non-zero exit status, no ``Traceback``, one message line on stderr (the ``error:``
  line, or the last line when none says "error") naming the parameter, and with ``--json`` a
  JSON object with an ``"error"`` key on stdout.
* ``valid``: the input must be accepted and give a sane answer (the case's ``check`` returns
  no problem; by default every number in a result is finite where it must be, and >= 0).
* ``bounded``: either of the two above (inputs where refusing with a clear message and
  answering correctly are both acceptable, e.g. extreme but legal values).

Anything else fails the case: another exception (TypeError, OverflowError, MemoryError, a
numpy RuntimeWarning...), a hang past the deadline, a crash of the worker, an accepted bad
input, a wrong value, or a message that does not name the parameter.

API and in-process CLI cases run in a forked worker (``fork`` keeps the parent's imports and
compiled kernels, so a case costs milliseconds) with an address-space cap, so that a runaway
allocation raises MemoryError in the worker instead of exhausting the machine.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import attrs

CLEAR_ERROR = "clear_error"
VALID = "valid"
BOUNDED = "bounded"
EXPECTATIONS = (CLEAR_ERROR, VALID, BOUNDED)

#: Worker address-space cap (bytes): far above any tiny configuration's needs.
MEMORY_LIMIT = 4 << 30
#: Default CPU-time budget of one case (CPU seconds, each process of the case); only a hang
#: detector, cases take well under 2 CPU-s. A budget of CPU time, not of wall time: a loaded
#: machine slows a case down without making it spend more CPU, so no verdict depends on the
#: machine's speed or load (issue 30, friction 9).
DEFAULT_TIMEOUT = 20.0
#: Budget of a case run as a real ``python -m minsep`` process (interpreter start included).
SUBPROCESS_TIMEOUT = 40.0
#: A case that spends no CPU yet never answers (a deadlock) is ended after this many wall
#: seconds per CPU second of budget: a backstop far beyond any load, never a speed check.
DEADLOCK_FACTOR = 30.0

#: A value check: None when the value is sane, else the problem in words.
Check = Callable[[Any], str | None]


@attrs.frozen
class Verdict:
    """The judged outcome of one case."""

    passed: bool
    observed: str
    seconds: float = 0.0


@attrs.frozen
class Case:
    """One audit input.

    Attributes:
        id: unique, stable name (``area-what``).
        area: the part of minsep it exercises (``cli``, ``scheme``, ``accountant``...).
        expect: ``clear_error``, ``valid`` or ``bounded``.
        kind: ``api`` (call ``call``), ``cli`` (``minsep.framework.cli.main.main(argv)`` in a
            worker) or ``subprocess`` (``python -m minsep argv``).
        call: the API call (kind ``api``); its return value goes to ``check``.
        argv: the CLI arguments (kinds ``cli`` and ``subprocess``).
        names: an error message must contain one of these (case-insensitive, ``-`` = ``_``).
        contains: an error message must contain all of these as well (e.g. "did you mean").
        check: extra check of a returned value / parsed JSON output / CLI stdout.
        timeout: the CPU-time budget in CPU seconds (per process of the case).
        note: why the case is there (for readers of the catalogue).
    """

    id: str
    area: str
    expect: str = attrs.field(validator=attrs.validators.in_(EXPECTATIONS))
    kind: str = "api"
    call: Callable[[], Any] | None = None
    argv: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    contains: tuple[str, ...] = ()
    check: Check | None = None
    timeout: float = DEFAULT_TIMEOUT
    note: str = ""


# -- judging ----------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return text.lower().replace("-", "_")


def names_ok(case: Case, message: str) -> str | None:
    """None when ``message`` names the parameter (and holds every ``contains``), else why not."""
    text = _norm(message)
    if case.names and not any(_norm(n) in text for n in case.names):
        return f"message does not name {' or '.join(case.names)}"
    missing = [c for c in case.contains if _norm(c) not in text]
    if missing:
        return f"message lacks {missing!r}"
    return None


def _short(text: str, limit: int = 150) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_minsep(exc: BaseException) -> bool:
    from minsep.framework.errors import MinsepError

    return isinstance(exc, MinsepError)


def judge_api(case: Case) -> Verdict:
    """Call ``case.call`` here and judge the outcome (run inside the worker)."""
    assert case.call is not None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # numpy overflow etc. are defects
            value = case.call()
    except BaseException as exc:  # the audit must see everything, MemoryError included
        kind = type(exc).__name__
        if not _is_minsep(exc):
            where = traceback.extract_tb(exc.__traceback__)[-1]
            origin = f"{os.path.basename(where.filename)}:{where.lineno}"
            return Verdict(False, f"traceback {kind} at {origin}: {_short(str(exc))}")
        if case.expect == VALID:
            return Verdict(False, f"refused a valid input: {kind}: {_short(str(exc))}")
        problem = names_ok(case, str(exc))
        if problem:
            return Verdict(False, f"{kind}, but {problem}: {_short(str(exc))}")
        return Verdict(True, f"{kind}: {_short(str(exc), 100)}")
    if case.expect == CLEAR_ERROR:
        return Verdict(False, f"accepted: returned {_short(repr(value), 120)}")
    problem = case.check(value) if case.check else default_check(value)
    if problem:
        return Verdict(False, f"wrong answer: {_short(problem)}")
    return Verdict(True, f"returned {_short(repr(value), 80)}")


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error" in line.lower()]


def judge_cli(case: Case, code: int, stdout: str, stderr: str) -> Verdict:
    """Judge a CLI run from its exit status and streams."""
    wants_json = "--json" in case.argv
    if "Traceback" in stderr or "Traceback" in stdout:
        last = [line for line in stderr.splitlines() if line.strip()][-1:] or ["?"]
        return Verdict(False, f"traceback (exit {code}): {_short(last[0])}")
    refused = code != 0
    if refused:
        lines = _error_lines(stderr)
        summary = _short(lines[-1] if lines else stderr or stdout, 110)
        if case.expect == VALID:
            return Verdict(False, f"exit {code} on a valid input: {summary}")
        if len(lines) > 1:
            return Verdict(False, f"exit {code} with {len(lines)} error lines: {summary}")
        message = lines[0] if lines else (stderr.strip().splitlines() or [""])[-1]
        if not message:
            return Verdict(False, f"exit {code} with nothing on stderr")
        problem = names_ok(case, message)
        if problem:
            return Verdict(False, f"exit {code}, but {problem}: {summary}")
        if wants_json:
            problem = json_error_problem(stdout)
            if problem:
                return Verdict(False, f"exit {code}, {problem}")
        return Verdict(True, f"exit {code}: {summary}")
    if case.expect == CLEAR_ERROR:
        return Verdict(False, f"accepted (exit 0): {_short(stdout, 100)}")
    if not stdout.strip():
        return Verdict(False, "exit 0 with nothing on stdout")
    value: Any = stdout
    if wants_json:
        try:
            value = json.loads(stdout)
        except ValueError as exc:
            return Verdict(False, f"--json output is not JSON: {exc}")
    problem = case.check(value) if case.check else default_check(value)
    if problem:
        return Verdict(False, f"wrong answer: {_short(problem)}")
    return Verdict(True, "exit 0")


def json_error_problem(stdout: str) -> str | None:
    """None when ``stdout`` is a JSON object with an ``"error"`` entry."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return "no JSON error object on stdout with --json" + (
            "" if stdout.strip() else " (stdout empty)"
        )
    if not (isinstance(data, dict) and "error" in data):
        return f"--json output has no 'error' key: {_short(stdout, 80)}"
    return None


# -- value checks -----------------------------------------------------------------------------


def _bad_numbers(data: Any, path: str = "") -> list[str]:
    """Paths of NaN anywhere, and of negative numbers, in plain data."""
    found: list[str] = []
    if isinstance(data, dict):
        if set(data) == {"__float__"}:
            value = float(data["__float__"])
            if value != value:
                found.append(f"{path} = nan")
            elif value < 0:
                found.append(f"{path} = {value}")
            return found
        for key, item in data.items():
            found += _bad_numbers(item, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list | tuple):
        for i, item in enumerate(data):
            found += _bad_numbers(item, f"{path}[{i}]")
    elif isinstance(data, float | int) and not isinstance(data, bool):
        if data != data:
            found.append(f"{path} = nan")
        elif data < 0 and not path.endswith("seed"):
            found.append(f"{path} = {data}")
    return found


def default_check(value: Any) -> str | None:
    """Results (objects or their JSON): no NaN, no negative numbers, ε/δ/σ in range."""
    from minsep.framework.results import Result

    data = value.to_dict() if isinstance(value, Result) else value
    if isinstance(data, dict):
        bad = _bad_numbers(data)
        if bad:
            return "bad numbers: " + ", ".join(bad[:4])
        for key in ("delta", "certified_delta", "failure_probability"):
            item = data.get(key)
            if isinstance(item, float | int) and not 0 <= item <= 1:
                return f"{key} = {item} is not a probability"
        sigma = data.get("sigma")
        if isinstance(sigma, float | int) and not sigma > 0:
            return f"sigma = {sigma} is not > 0"
    return None


# -- running ----------------------------------------------------------------------------------


def _limit_memory() -> None:
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _limit_cpu(seconds: float) -> None:
    """SIGXCPU after ``seconds`` of CPU time (SIGKILL 5 s later), inherited by children."""
    soft = max(1, math.ceil(seconds))
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5))


def _limits(cpu_seconds: float) -> None:
    _limit_memory()
    _limit_cpu(cpu_seconds)


def _deadlock_backstop(case: Case) -> float:
    return case.timeout * DEADLOCK_FACTOR


def _ended(code: int | None, case: Case) -> str | None:
    """The verdict text for a process ended by its CPU budget (None otherwise)."""
    if code is not None and code in (-signal.SIGXCPU, -signal.SIGKILL):
        return f"hang: more than {case.timeout:g} CPU-s without an answer"
    return None


def _run_cli_here(case: Case) -> Verdict:
    from minsep.framework.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("error", RuntimeWarning)
            code: Any = main(list(case.argv))
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        origin = f"{os.path.basename(where.filename)}:{where.lineno}"
        return Verdict(False, f"traceback {type(exc).__name__} at {origin}: {_short(str(exc))}")
    if code is None:
        code = 0
    elif not isinstance(code, int):  # SystemExit("message") prints it and exits 1
        err.write(f"{code}\n")
        code = 1
    return judge_cli(case, code, out.getvalue(), err.getvalue())


def _worker(case: Case, conn: Any) -> None:
    os.setsid()  # its own process group: a timeout ends the worker and anything it started
    _limit_memory()
    _limit_cpu(case.timeout)
    try:
        verdict = _run_cli_here(case) if case.kind == "cli" else judge_api(case)
    except BaseException as exc:  # a failing check must still report
        verdict = Verdict(False, f"audit check raised {type(exc).__name__}: {_short(str(exc))}")
    try:
        conn.send(verdict)
    except Exception as exc:
        conn.send(Verdict(False, f"verdict could not be sent back: {exc}"))
    conn.close()
    with contextlib.suppress(Exception):
        from minsep.framework.montecarlo import shutdown_clusters, shutdown_pools

        shutdown_pools()
        shutdown_clusters()
    sys.stdout.flush()
    os._exit(0)  # skip atexit hooks of the inherited interpreter


def _run_forked(case: Case) -> Verdict:
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: we exec nothing
        process = context.Process(target=_worker, args=(case, send), daemon=False)
        process.start()
    send.close()
    try:
        if receive.poll(_deadlock_backstop(case)):
            try:
                return receive.recv()  # type: ignore[no-any-return]
            except EOFError:
                pass
        else:
            return Verdict(
                False, f"deadlock: no answer and no CPU use within {_deadlock_backstop(case):g} s"
            )
    finally:
        if process.is_alive() and process.pid is not None:
            _kill_group(process.pid)
        process.join(5)
        receive.close()
    code = process.exitcode
    if (hang := _ended(code, case)) is not None:
        return Verdict(False, hang)
    how = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
    return Verdict(False, f"worker crashed ({how}) without an answer")


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (a worker or process this module started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _run_subprocess(case: Case) -> Verdict:
    env = dict(os.environ, PYTHONWARNINGS="error::RuntimeWarning")
    process = subprocess.Popen(
        [sys.executable, "-m", "minsep", *case.argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, ended as a whole on a timeout
        preexec_fn=lambda: _limits(case.timeout),  # nothing else runs between fork and exec
    )
    try:
        stdout, stderr = process.communicate(timeout=_deadlock_backstop(case))
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        process.communicate()
        return Verdict(False, f"deadlock: no exit within {_deadlock_backstop(case):g} s")
    if (hang := _ended(process.returncode, case)) is not None:
        return Verdict(False, hang)
    if process.returncode < 0:
        return Verdict(False, f"killed by signal {-process.returncode}")
    return judge_cli(case, process.returncode, stdout, stderr)


def run_case(case: Case) -> Verdict:
    """Run ``case`` in isolation and judge it; never raises for a misbehaving minsep."""
    start = time.perf_counter()
    verdict = _run_subprocess(case) if case.kind == "subprocess" else _run_forked(case)
    return attrs.evolve(verdict, seconds=time.perf_counter() - start)


def warm_up() -> None:
    """Import the CLI, every plugin and compile the loss kernels once, before any worker is
    forked (so that each worker starts with them loaded)."""
    from minsep.framework.cli.main import build_parser
    from minsep.framework.montecarlo import EngineConfig, sample
    from minsep.framework.registries import accountants, schemes, strategies

    lookup: Any = schemes.get  # registries return base classes; these are concrete
    make: Any = strategies.get
    build_parser()  # imports every command module, plugins included
    for registry in (accountants, schemes, strategies):
        registry.names()

    scheme = lookup("b_min_sep")(n_steps=4, rate=0.25, min_sep=2)
    for strategy in (make("identity")(), make("banded_toeplitz")((1.0, 0.5))):
        sample(
            scheme.loss_model(strategy),
            [1.0],
            n_samples=64,
            seed=0,
            config=EngineConfig(chunk_size=64, progress=False),
        )


def unique_ids(cases: Sequence[Case]) -> None:
    """Raise when two cases share an id."""
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValueError(f"duplicate audit case id {case.id!r}")
        seen.add(case.id)
