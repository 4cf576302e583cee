"""Contract test bases, in the style of dp_accounting's accountant tests.

Every registered scheme, strategy and accountant runs through these automatically
(``tests/contracts/test_registered.py``); a test module may also subclass a contract to check
an implementation that is not registered.
"""
