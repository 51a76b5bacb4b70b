"""The ``kafka-mc`` command (DESIGN.md section 6).

Exit codes: 0 all checks hold; 2 usage or input error; 11 deadlock; 12 safety violation
(including a witness never reached); 13 liveness violation; 14 symbolic check inconclusive
(``--explorer symbolic``: induction failed, a counterexample to induction is written); 75 model
error; 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM; handled as Ctrl-C: the partial statistics are printed).
Bad input of any kind (flags, configuration, trace file, output path) is one line on stderr and
exit 2, before any search. A trace that cannot be written after a search does not lose its
result: the verdict and counterexample are printed, then the write error as one line, and the
exit code is the verdict's.

One module per command group (``check``, ``graph``, ``listing``, ``traces``, ``explore``), each
with ``add_parser(subparsers)`` and ``main(args) -> int``; ``GROUPS`` lists them.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from model.config import ConfigError
from explorers.cli import check, explore, graph, listing, traces
from explorers.cli.common import UsageError, Parser, error, version
from explorers.core.result import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE
from traces.trace import TraceError

# The command groups, in the order ``--help`` lists their commands. Each adds its commands to the
# parser (``add_parser(subparsers)``) and runs the one parsed (``main(args) -> int``). A group of
# another package plugs in the same way: import it and add it here.
GROUPS = (check, graph, listing, traces, explore)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="kafka-mc", description="Model checker for Kafka's transaction protocol.")
    p.add_argument("--version", action="version", version=f"kafka-mc {version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    p.groups = {}   # command -> the group that runs it
    for group in GROUPS:
        before = set(sub.choices)
        group.add_parser(sub)
        p.groups.update((name, group) for name in sub.choices if name not in before)
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler's stop): handled as Ctrl-C is, then exit 143."""


def _terminate(signum, frame):
    """SIGTERM: what Ctrl-C does (pyspark's SIGINT handler cancels the running Spark jobs first),
    remembered for the exit code. The explorer catches the interrupt and returns its partial
    result."""
    _terminated.set()
    on_interrupt = signal.getsignal(signal.SIGINT)
    if callable(on_interrupt) and on_interrupt is not signal.default_int_handler:
        on_interrupt(signal.SIGINT, frame)
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    previous = signal.signal(signal.SIGTERM, _terminate) if _main_thread() else None
    try:
        code = _run(argv)
        return EXIT_TERMINATED if code == EXIT_INTERRUPTED and _terminated.is_set() else code
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        _terminated.clear()


class StdoutError(OSError):
    """Standard output failed (a full or failing device), as opposed to any other write."""


class _Guarded:
    """Standard output whose own write errors are told apart (``StdoutError``)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        return self._guarded(self._stream.write, text)

    def flush(self):
        return self._guarded(self._stream.flush)

    @staticmethod
    def _guarded(call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise StdoutError(e.errno, e.strerror) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _run(argv) -> int:
    stdout, sys.stdout = sys.stdout, _Guarded(sys.stdout)
    try:
        code = _command(argv)
        sys.stdout.flush()
        return code
    except StdoutError as e:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        error(f"cannot write to standard output: {e.strerror}")
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return EXIT_OK
    finally:
        sys.stdout = stdout


def _command(argv) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            *names, last = parser.groups
            raise UsageError(f"a command is required: {', '.join(names)} or {last} "
                             "(see kafka-mc --help)")
        return parser.groups[args.command].main(args)
    except (UsageError, ConfigError, TraceError) as e:
        error(str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("kafka-mc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


_terminated = threading.Event()   # set when SIGTERM ended the command


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()

