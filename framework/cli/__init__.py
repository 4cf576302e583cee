"""The ``minsep`` command line: one small module per subcommand.

A subcommand is a :class:`~minsep.framework.cli.command.Command`. Built-in ones are listed in
``main.BUILTIN``; others (in training/, paper/, or third-party packages) are discovered through
the ``minsep.commands`` entry-point group.
"""
