"""Contract tests, in the style of dp_accounting's accountant tests.

The bases live in :mod:`minsep.testing`. Every registered scheme, strategy, accountant and
loss model runs through them automatically (``tests/contracts/test_registered.py``); a test
module may also subclass a contract to check an implementation that is not registered, and
``test_contracts_catch_faults.py`` shows that each check fails on the fault it is written for.
"""
