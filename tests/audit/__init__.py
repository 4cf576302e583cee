"""The bad-input audit (issue #13): hundreds of bad or edge inputs through the CLI and the API.

Every case states what must happen (``clear_error``, ``valid`` or ``bounded``) and runs in a
forked worker with a CPU-time budget and a memory cap, so a traceback, a hang, a crash or a silent
wrong answer is reported as a failure of that case instead of stopping the audit.

Run it as ``python -m tests.audit`` (every case, a table and the counts; exit status 1 when any
case fails) or through pytest (``tests/audit/test_audit.py``: a fast subset by default, every
case with ``-m slow``).
"""
