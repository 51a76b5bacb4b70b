"""``kafka-mc list``: the models, protocol presets, invariants, mutants or shipped configurations."""
from __future__ import annotations

from kafka_mc.model import registry
from kafka_mc.model.config import shipped_configs, shown
from kafka_mc.model.display import columns
from kafka_mc.explorers.core.result import EXIT_OK


def add_parser(sub) -> None:
    ls = sub.add_parser("list", help="list models, protocols, invariants or configs")
    ls.add_argument("what", choices=["models", "protocols", "invariants", "mutants", "configs"],
                    help="what to list: the models, their protocol presets, the properties, "
                         "the deliberately broken variants, the shipped configurations")
    ls.add_argument("--model", help="the model whose invariants to list (default: the default)")


def main(args) -> int:
    models = registry.models()
    if args.what == "models":
        for name, e in sorted(models.items()):
            print(f"{name:<18} {e.summary}")
    elif args.what == "protocols":
        presets = [(name, p) for name, e in sorted(models.items()) for p in e.presets]
        width = columns()
        for name, p in presets:   # one line each, as kafka-mc real versions
            doc, head = models[name].preset_docs.get(p, ""), f"{p:<14} ({name})"
            room = width - len(head) - 2
            print(head + (f"  {shown(doc, max(room - 3, 10))}" if doc else ""))
        if not presets:
            print("no registered model has protocol presets yet")
    elif args.what == "mutants":
        for name, e in sorted(models.items()):
            for mutant, invariant, doc in e.mutants:
                print(f"{mutant:<38} {invariant:<26} {doc} ({name})")
    elif args.what == "invariants":
        cfg = registry.load(None, model=args.model)
        props = registry.bind(cfg).properties()
        for p in props:
            named = "" if p.default else "(checked when named) "
            print(f"{p.name:<30} {p.expectation.value:<10} {named}{p.claim}")
    else:
        for path in shipped_configs():
            print(path.stem)
    return EXIT_OK
