"""``kafka-mc compare``: the same client workloads and fault budgets on every transactional
messaging model, and the table of which claims hold, fail or are not claimed
(explorers/compare.py, model/comparison.py)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from kafka_mc.explorers.cli.common import UsageError
from kafka_mc.explorers.compare import CompareError, compare, table
from kafka_mc.explorers.core.result import EXIT_OK


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="the same workloads on every messaging model: one table "
                                       "of which claims hold, fail or are not claimed")
    p.add_argument("--model", action="append", dest="models", metavar="MODEL",
                   help="a model to compare (repeatable; default: every model declaring claims)")
    p.add_argument("--workload", action="append", dest="workloads", metavar="NAME",
                   help="a workload of model/comparison.py (repeatable; default: all)")
    p.add_argument("--set", action="append", dest="sets", metavar="MODEL:SECTION.KEY=VALUE",
                   help="a configuration override for one model, e.g. "
                        "kafka:protocol.version=kafka-0.11 (repeatable)")
    p.add_argument("--out", default="out/compare",
                   help="where the counterexamples go, OUT/MODEL/WORKLOAD (default: out/compare)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds each check may take (default 600)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def main(args) -> int:
    if args.out == "":
        raise UsageError("--out is empty")
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: must be positive")
    try:
        result = compare(args.models, args.workloads, Path(args.out), args.timeout,
                         sets=args.sets,
                         progress=None if args.json else
                         (lambda what: print(f"checking {what}", file=sys.stderr, flush=True)))
    except CompareError as e:
        raise UsageError(str(e)) from None
    print(json.dumps(result.to_json(), indent=1) if args.json else table(result), end="" if
          not args.json else "\n")
    return EXIT_OK
