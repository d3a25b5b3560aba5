"""The console the command line prints its tables on.

Rich sizes a table to the terminal, and to 80 columns when the output is a
pipe or a file (``make run | tee``, a CI log).  The run summary's eleven
columns do not fit in 80, and Rich then cuts the figures themselves
("2.8…"), so piped output lost the numbers a user ran for.  Off a terminal
the console is wide enough for every table the CLI prints.
"""

from __future__ import annotations

from rich.console import Console

#: Columns off a terminal: the widest table (the run summary with its
#: receivers' rows) fits without cutting a figure.
PIPE_WIDTH = 200


def table_console() -> Console:
    """A console on stdout sized to the terminal, or :data:`PIPE_WIDTH` wide off one."""
    console = Console()
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console
