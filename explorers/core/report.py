"""What the CLI prints: progress on stderr (a live line on a terminal, plain periodic lines
otherwise), the result on stdout (TLC-style text, or one JSON object with ``--json``)."""
from __future__ import annotations

import json
import sys
from typing import IO, Any

from kafka_mc.model import registry
from kafka_mc.model.config import shipped_name
from kafka_mc.model.symmetry import symmetry_note
from kafka_mc.explorers.core.result import Outcome
from kafka_mc.traces import explain, layout


def _n(x: int) -> str:
    return f"{x:,}"


class ProgressPrinter:
    """Callable given to an explorer; ``close`` ends a live line."""

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream if stream is not None else sys.stderr   # the one in use now
        self.live = self.stream.isatty()
        self.width = 0

    def __call__(self, p) -> None:
        line = (f"progress: depth {p.depth}, {_n(p.distinct)} distinct, {_n(p.generated)} generated, "
                f"{_n(p.queue)} queued, {_n(int(p.states_per_second))} distinct/s, {p.seconds:.0f} s")
        if self.live:
            self.stream.write("\r" + line.ljust(self.width))
            self.width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.live and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def describe_config(cfg) -> str:
    """The model and what its configuration sets beyond the defaults
    (``kafka_mc.model.registry.summary``)."""
    return f"model {cfg.model} ({registry.summary(cfg.model, dict(cfg.values))})"


def text(outcome: Outcome, cfg, model, traces: dict[str, str], verbose: bool = False,
         width: int | None = None) -> str:
    """The TLC-style report: the run and its verdict, each violation with its explained path
    (what the user came for, first), then what the search covered, and after a blank line the
    properties and the coverage of the actions and state machines; every line within ``width`` (the terminal's,
    ``kafka_mc.traces.layout.columns``). ``verbose``: each step's action and changes too."""
    width = width or layout.columns()
    lines = _fit(_headline(outcome, cfg), width)
    for v in outcome.violations:   # each followed by a blank line
        lines += _violation(v, outcome, model, traces, verbose, width) + [""]
    rest = _search(outcome) + _symmetry(model) + _extent(outcome)
    rest.append("")   # (the verdict and the search's figures are the first paragraph)
    rest += _properties(outcome) + _coverage(outcome)
    return "\n".join(lines + _fit(rest, width))


def _fit(lines: list[str], width: int) -> list[str]:
    """Lines within ``width``: each broken at spaces, continued two columns deeper than it
    starts."""
    out = []
    for line in lines:
        lead = len(line) - len(line.lstrip(" "))
        out += [line] if len(line) <= width else layout.wrap(line.strip(), width, lead + 2,
                                                             " " * lead)
    return out


def _headline(outcome: Outcome, cfg) -> list[str]:
    """The configuration and explorer, and the verdict when there is no violation to show."""
    where = "" if cfg.source == "<built-in>" else f" [{shipped_name(cfg.source)}]"
    lines = [f"kafka-mc check: {describe_config(cfg)}, explorer {outcome.explorer}{where}"]
    if outcome.exit_code == 0:
        lines.append("Model checking completed. No error has been found.")
    elif outcome.interrupted and not outcome.violations:
        lines.append("Interrupted: the results below are partial.")
    return lines


def _search(outcome: Outcome) -> list[str]:
    """States, time and memory; the BFS's memory, partial-order reduction and workers
    (``outcome.extra`` "memory", "reduction", "workers") when the explorer reports them."""
    s, x = outcome.stats, outcome.extra
    lines = [f"  {_n(s.distinct)} distinct states, {_n(s.generated)} generated, depth {s.depth}, "
             f"{s.seconds:.2f} s ({_n(int(s.states_per_second))} distinct states/s)"]
    lines.append(f"  peak memory {s.peak_memory_mb:.0f} MB ({s.bytes_per_state:.0f} bytes per state); "
                 + ("fingerprints exact (packed states)" if s.collision_probability == 0
                    else f"fingerprint collision probability {s.collision_probability:.1e}"))
    if "memory" in x and s.distinct:  # the BFS's visited set and tree (explorers/bfs/visited.py)
        m = x["memory"]
        lines.append(f"  visited set and BFS tree: {(m['visited_bytes'] + m['tree_bytes']) / s.distinct:.0f}"
                     " bytes per state in memory" + ("; tree and frontier on disk (--memory)"
                                                     if m["on_disk"] else ""))
    if "reduction" in x:  # a partial-order reduced search (explorers/reductions/por.py)
        lines.append(_reduction(x["reduction"]))
    if "workers" in x:  # the BFS's levels expanded by forked processes (explorers/bfs/workers.py)
        w = x["workers"]
        lines.append(f"  workers: {_n(w['levels'])} levels expanded by {w['processes']} processes "
                     "(the others, small or holding something to report, by one)")
    return lines


def _reduction(r: dict) -> str:
    """What partial-order reduction did (``outcome.extra["reduction"]``)."""
    return "  partial-order reduction: " + (
        f"{_n(r['reduced_states'])} states expanded with a reduced set; counterexamples are "
        "shortest within the reduced graph" if r["active"] else
        "every state expanded fully (every action writes what a checked property reads), "
        "deduplicated on the model's reduction view"
        if r.get("every_action_visible") else
        "every state expanded fully (no footprints, a property reading everything, or a "
        "state constraint), deduplicated on the model's reduction view")


def _symmetry(model) -> list[str]:
    """The model's symmetry groups, when it has any."""
    sym = symmetry_note(model)
    if sym is None:
        return []
    return ["  symmetry: " + (", ".join(f"{g['name']} x{g['size']}" for g in sym["groups"])
                              + f" (group of {sym['order']} permutations); one state per "
                              "orbit, counterexamples concrete")]


def _extent(outcome: Outcome) -> list[str]:
    """How far the search went: a random explorer's walks (``outcome.extra`` "walks", "swarm"),
    or the depth bound that stopped it."""
    s, x = outcome.stats, outcome.extra
    lines = []
    if "walks" in x:  # a random explorer: what it did, and how to get the same run again
        lines.append(f"  {_n(x['walks'])} random behaviours, {_n(int(x['steps_per_second']))} steps/s, "
                     f"seed {x.get('seed', 0)}; not exhaustive")
    elif not outcome.complete and not outcome.violations and not outcome.interrupted:
        lines.append(f"  search stopped at the depth bound ({s.depth}); the state space was not exhausted")
    if "swarm" in x:
        lines.extend(_swarm(x["swarm"], outcome.edges))
    return lines


def _properties(outcome: Outcome) -> list[str]:
    """The properties checked and not, and the state graph's figures (``outcome.extra["graph"]``)."""
    x = outcome.extra
    lines = []
    if outcome.checked:
        lines.append(f"Properties checked: {', '.join(outcome.checked)}")
    if outcome.unchecked:
        why = ("the state graph is incomplete (the search stopped)" if outcome.explorer == "graph"
               else "--explorer graph checks them")
        lines.append(f"Not checked (liveness; {why}): {', '.join(outcome.unchecked)}")
    if "graph" in x:
        g = x["graph"]
        lines.append(f"  state graph: {_n(g['edges'])} edges; {_n(g['sccs'])} strongly connected "
                     f"components ({_n(g['nontrivial_sccs'])} with a cycle, largest "
                     f"{_n(g['largest_scc'])} states, {_n(g['terminal_sccs'])} terminal); diameter "
                     f"{g['diameter']}; liveness {g['liveness_seconds']:.2f} s")
    if outcome.not_applicable:
        lines.append("Not applicable in this configuration (witnesses that cannot arise): "
                     f"{', '.join(outcome.not_applicable)}")
    return lines


def _coverage(outcome: Outcome) -> list[str]:
    """Transitions and new states per action, and the state machines' edges taken."""
    lines = ["Coverage (transitions generated / new states found, per action):"]
    width = max([len(c.name) for c in outcome.coverage] + [6])
    for c in outcome.coverage:
        lines.append(f"  {c.name:<{width}}  {_n(c.fired):>12}  {_n(c.distinct):>10}")
    lines.append(f"  never enabled: {', '.join(outcome.never_enabled) if outcome.never_enabled else 'none'}")
    if outcome.edges:
        lines.append("Edges of the model's state machines taken (of their tables):")
        for e in outcome.edges:
            lines.append(f"  {e.machine}: {len(e.taken)} of {len(e.taken) + len(e.not_taken)}"
                         + ("" if not e.not_taken else "; not taken: "
                            + ", ".join(f"{a} -> {b}" for a, b in e.not_taken)))
    return lines


def _violation(v, outcome: Outcome, model, traces: dict[str, str], verbose: bool,
               width: int) -> list[str]:
    """A violation: its headline and claim, its path explained (a fair lasso or a finite
    counterexample), the explorer's detail, and the trace written with the commands to use it."""
    lines = [_violation_headline(v)]
    if v.claim:
        lines.append(f"  claim: {v.claim}")
    if v.path is not None and v.path.loop is not None:
        p = v.path
        lines.append(f"  fair lasso: {len(p)} steps, then "
                     + (f"a loop back to state {p.loop}" if p.loop_action is not None
                        else "stuttering in the last state forever")
                     + " (shortest stem to a fair loop in the state graph)")
        lines.extend(explain.lasso_steps(model, p.states, p.actions, v.property, p.loop,
                                         p.loop_action, p.trigger, width, verbose))
        lines.extend("  " + ln for ln in v.detail.splitlines())
    elif v.path is not None:
        kind = ("shortest" if outcome.explorer in ("bfs", "spark", "graph")
                else "minimized" if outcome.extra.get("minimized", True) else "unminimized")
        lines.append(f"  {kind} counterexample: {len(v.path)} steps")
        lines.extend(explain.steps(model, v.path.states, v.path.actions, v.property, v.kind,
                                   width, verbose))
    if v.detail and not (v.path is not None and v.path.loop is not None):
        lines.extend("  " + ln for ln in v.detail.splitlines()[-6:])
    lines = _fit(lines, width)   # (the steps fit already)
    if v.property in traces:   # whole, to be copied: a path is never broken
        lines.append(f"  trace written to {traces[v.property]}")
        lines.extend(explain.commands(traces[v.property], verbose, width))
    return lines

SWARM_ROWS = 12


def _swarm(sw: dict, edges) -> list[str]:
    """Coverage per walk family (explorers/walks/swarm.py): a row per set of families walks allowed
    (most walked first), or, when there are more than ``SWARM_ROWS`` sets, a row per family with
    the walks that allowed it and those that did not; each with the rules taken and the states
    of each of the model's state machines reached."""
    fams = sw["families"]
    lines = [f"  swarm walks over {len(fams)} families enabled somewhere: "
             + (", ".join(fams) or "none")
             + ("" if "found_by" not in sw else
                f"; violation found by walk {sw['found_by']['walk']} "
                f"(walk seed {sw['found_by']['walk_seed']})")]
    names = [e.machine for e in edges]

    head = ("walks, steps, rules taken, states reached"
            + "".join(f" ({n})" for n in names))
    rows = sw["by_family"]
    if len(rows) <= SWARM_ROWS:
        lines.append(f"Coverage per walk family (families on: {head}):")
        lines.extend(f"  {' + '.join(r['families_on']) or '(none)'}: {_swarm_cells(r, names)}" for r in rows)
    else:
        lines.append(f"Coverage per swarm family ({len(rows)} sets of families walked; "
                     f"on | off: {head}):")
        lines.extend(f"  {r['family']}: {_swarm_cells(r['on'], names)} | {_swarm_cells(r['off'], names)}"
                     for r in sw["per_family"])
    return lines


def _swarm_cells(r: dict, names: list[str]) -> str:
    """A swarm coverage row's figures: walks, steps, rules, states per state machine."""
    return (f"{_n(r['walks'])} walks, {_n(r['steps'])} steps, {len(r['rules'])} rules"
            + "".join(f", {len(r['states'].get(n, ()))}" for n in names)
            + (f", {r['violations']} violation" if r["violations"] else ""))


def _violation_headline(v) -> str:
    return {
        "always": f"Error: invariant {v.property} is violated.",
        "transition": f"Error: transition property {v.property} is violated.",
        "terminal": f"Error: {v.property} is violated in a state with no enabled action.",
        "sometimes": f"Error: {v.property} was never witnessed (a 'sometimes' property: the check "
                     "would pass vacuously).",
        "deadlock": "Error: deadlock reached (no action is enabled).",
        "model_error": "Error: the model raised an exception.",
        "eventually": f"Error: liveness property {v.property} is violated: a fair behaviour "
                      "never satisfies it.",
    }.get(v.kind, f"Error: {v.property} is violated.")


def as_json(outcome: Outcome, cfg, model, traces: dict[str, str]) -> str:
    s = outcome.stats
    doc: dict[str, Any] = {
        "model": outcome.model, "explorer": outcome.explorer, "config": cfg.to_dict(),
        "verdict": outcome.verdict, "exit_code": outcome.exit_code, "complete": outcome.complete,
        "stats": {"generated": s.generated, "distinct": s.distinct, "depth": s.depth,
                  "seconds": round(s.seconds, 3), "states_per_second": round(s.states_per_second),
                  "peak_memory_mb": round(s.peak_memory_mb, 1),
                  "bytes_per_state": round(s.bytes_per_state, 1),
                  "collision_probability": s.collision_probability},
        "checked": list(outcome.checked), "unchecked": list(outcome.unchecked),
        "not_applicable": list(outcome.not_applicable),
        "coverage": {c.name: {"fired": c.fired, "distinct": c.distinct} for c in outcome.coverage},
        "never_enabled": list(outcome.never_enabled),
        "edges": {e.machine: {"taken": [list(x) for x in e.taken],
                              "not_taken": [list(x) for x in e.not_taken]} for e in outcome.edges},
        "violations": [{"property": v.property, "kind": v.kind, "claim": v.claim,
                        "steps": len(v.path) if v.path is not None else None,
                        "actions": [model.format_action(a) for a in v.path.actions] if v.path else [],
                        "trace": traces.get(v.property), "detail": v.detail or None,
                        **({"loop": v.path.loop, "loop_action": None if v.path.loop_action is None
                            else model.format_action(v.path.loop_action)}
                           if v.path is not None and v.path.loop is not None else {})}
                       for v in outcome.violations],
    }
    x = outcome.extra
    if "graph" in x:
        doc["graph"] = x["graph"]
    if "reduction" in x:
        doc["reduction"] = x["reduction"]
    if "memory" in x:
        doc["memory"] = x["memory"]
    if "workers" in x:
        doc["workers"] = x["workers"]
    sym = symmetry_note(model)
    if sym is not None:
        doc["symmetry"] = sym
    if "walks" in x:  # a random explorer: the run's size, speed and seed, to repeat it
        doc["random"] = {"walks": x["walks"], "seed": x.get("seed", 0),
                         "steps_per_second": round(x["steps_per_second"]),
                         "seconds_to_violation": None if x["seconds_to_violation"] is None
                         else round(x["seconds_to_violation"], 3),
                         "found_steps": x["found_steps"]}
    if "swarm" in x:
        doc["swarm"] = x["swarm"]
    return json.dumps(doc, indent=2, sort_keys=True)
