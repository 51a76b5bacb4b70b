"""The ``kafka-mc`` command (docs/design.md section 6).

Exit codes: 0 all checks hold; 2 usage or input error; 11 deadlock; 12 safety violation
(including a witness never reached); 13 liveness violation; 14 symbolic check inconclusive
(``--explorer symbolic``: induction failed, a counterexample to induction is written); 75 model
error; 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM; handled as Ctrl-C: the partial statistics are printed).
Bad input of any kind (flags, configuration, trace file, output path) is one line on stderr and
exit 2, before any search. A trace that cannot be written after a search does not lose its
result: the verdict and counterexample are printed, then the write error as one line, and the
exit code is the verdict's.

One module per command group (``check``, ``graph``, ``listing``, ``traces``, ``explore``,
``compare``, ``real``), each
with ``add_parser(subparsers)`` and ``main(args) -> int``; ``GROUPS`` lists them.
"""
from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import textwrap
import threading

from kafka_mc.model.capabilities import MissingCapability
from kafka_mc.model.config import ConfigError
from kafka_mc.explorers.cli import check, compare, explore, graph, listing, real, traces
from kafka_mc.explorers.cli.common import UsageError, Parser, error, missing_extra, version
from kafka_mc.explorers.core import interrupts
from kafka_mc.explorers.core.interrupts import interrupted_early
from kafka_mc.explorers.core.result import (EXIT_CODES, EXIT_INTERRUPTED, EXIT_TERMINATED,
                                            EXIT_USAGE)
from kafka_mc.traces.trace import TraceError

# The command groups, in the order ``--help`` lists their commands. Each adds its commands to the
# parser (``add_parser(subparsers)``) and runs the one parsed (``main(args) -> int``). A group of
# another package plugs in the same way: import it and add it here.
GROUPS = (check, graph, listing, traces, explore, compare, real)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="kafka-mc", description="Model checker for Kafka's transaction protocol.",
               epilog=exit_codes(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"kafka-mc {version()}",
                   help="print kafka-mc's version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    p.groups = {}   # command -> the group that runs it
    for group in GROUPS:
        before = set(sub.choices)
        group.add_parser(sub)
        p.groups.update((name, group) for name in sub.choices if name not in before)
    return p


def exit_codes() -> str:
    """The exit codes (``EXIT_CODES``), as ``--help`` ends."""
    width = max(len(code) for code, _ in EXIT_CODES)
    return "exit codes:\n" + "\n".join(
        textwrap.fill(meaning.replace("`", ""), 96, initial_indent=f"  {code:<{width}}  ",
                      subsequent_indent=" " * (width + 4)) for code, meaning in EXIT_CODES)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler's stop): handled as Ctrl-C is, then exit 143."""


def _interrupt(signum, frame):
    """Ctrl-C: remembered (``kafka_mc.explorers.core.interrupts``: code that swallows the exception does
    not resume the search), then ``KeyboardInterrupt`` as Python's own handler raises it."""
    interrupts.ask()
    raise KeyboardInterrupt


def _terminate(signum, frame):
    """SIGTERM: what Ctrl-C does (pyspark's SIGINT handler cancels the running Spark jobs first),
    remembered for the exit code. The explorer catches the interrupt and returns its partial
    result."""
    _terminated.set()
    interrupts.ask()
    on_interrupt = signal.getsignal(signal.SIGINT)
    if callable(on_interrupt) and on_interrupt not in (signal.default_int_handler, _interrupt,
                                                       interrupted_early):
        on_interrupt(signal.SIGINT, frame)
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """The command; its exit code. From here on Ctrl-C is exit 130 and SIGTERM 143 wherever it
    lands (before, while the command starts, ``kafka_mc.explorers.core.interrupts.interrupted_early`` says the same),
    with no traceback; and the exit code is the command's whatever happens to standard output
    and error (closed, full, a broken pipe: ``_Channel``)."""
    previous = None
    if _main_thread():
        on_interrupt = signal.getsignal(signal.SIGINT)
        previous = (on_interrupt, signal.signal(signal.SIGTERM, _terminate))
        if on_interrupt in (signal.default_int_handler, interrupted_early):  # not ignored
            signal.signal(signal.SIGINT, _interrupt)
    try:
        try:
            code = _run(argv)
        except KeyboardInterrupt:   # one landing outside the command (its output's last flush)
            _interrupted()
            code = EXIT_INTERRUPTED
        return EXIT_TERMINATED if code == EXIT_INTERRUPTED and _terminated.is_set() else code
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous[0])
            signal.signal(signal.SIGTERM, previous[1])
        _terminated.clear()
        interrupts.clear()


def _interrupted() -> None:
    try:
        print("kafka-mc: interrupted", file=sys.stderr)
    except (OSError, ValueError, AttributeError):
        pass


class _Channel:
    """Standard output or error, whose write errors never reach the command: the first one is
    remembered (``failed``) and what follows is dropped, so a search runs to its verdict and
    writes its traces whatever happens to the terminal. The descriptor is then pointed at
    /dev/null, so that Python's own last flush at exit has nowhere to fail."""

    def __init__(self, stream):
        self._stream = stream
        self.failed: Exception | None = None

    def write(self, text):
        if self.failed is None:
            try:
                return self._stream.write(text)
            except (OSError, ValueError) as e:   # ValueError: the stream was closed
                self._fail(e)
        return len(text)

    def flush(self):
        if self.failed is None:
            try:
                self._stream.flush()
            except (OSError, ValueError) as e:
                self._fail(e)

    def isatty(self) -> bool:
        try:
            return self._stream.isatty()
        except (OSError, ValueError):
            return False

    def _fail(self, e: Exception) -> None:
        self.failed = e
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass   # not a descriptor (a test's StringIO)

    def __getattr__(self, name):
        return getattr(self._stream, name)


# Commands whose exit code is a verdict (a search's, a replay's, a real run's): a failing
# standard output does not change it. The others' product is what they print: losing it is
# exit 2.
VERDICTS = ("check", "replay", "real run", "real conform", "real reproduce")


def _standard_streams() -> None:
    """A descriptor 0, 1 or 2 the command was started without (``>&-``) is opened on /dev/null
    (else the first file opened would take its number, and output meant for the terminal would
    go into it), and Python's missing stream (None) is made one."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stdout is None:
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


def _run(argv) -> int:
    _standard_streams()
    saved = sys.stdout, sys.stderr
    out, err = sys.stdout, sys.stderr = _Channel(sys.stdout), _Channel(sys.stderr)
    command = None
    try:
        code, command = _command(argv)
        out.flush()
    finally:
        sys.stdout, sys.stderr = saved
    if out.failed is not None and not isinstance(out.failed, BrokenPipeError):
        # (a broken pipe is the reader having read enough, e.g. `| head`: quietly)
        sys.stderr = err
        try:
            error("cannot write to standard output: "
                  f"{getattr(out.failed, 'strerror', None) or out.failed}")
            err.flush()
        finally:
            sys.stderr = saved[1]
        if command not in VERDICTS:
            code = EXIT_USAGE
    else:
        err.flush()
    return code


def _command(argv) -> tuple[int, str | None]:
    """(exit code, the command run)."""
    command = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        command = args.command
        if getattr(args, "real_command", None):     # "real run": its verdict is its exit code
            command = f"{command} {args.real_command}"
        if args.command is None:
            *names, last = parser.groups
            raise UsageError(f"a command is required: {', '.join(names)} or {last} "
                             "(see kafka-mc --help)")
        return parser.groups[args.command].main(args), command
    except (UsageError, ConfigError, TraceError, MissingCapability) as e:
        error(str(e))
        return EXIT_USAGE, command
    except ImportError as e:   # an optional dependency not installed (pyproject.toml's extras)
        message = missing_extra(e)
        if message is None:
            raise
        error(message)
        return EXIT_USAGE, command
    except KeyboardInterrupt:
        _interrupted()
        return EXIT_INTERRUPTED, command


_terminated = threading.Event()   # set when SIGTERM ended the command


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()

