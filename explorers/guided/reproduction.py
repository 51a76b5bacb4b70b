"""The verdict of ``kafka-mc real reproduce``: the trace's property judged on the model's
behaviours the real run conforms to (``verdict.judge``), not on the client's anomalies alone
(issue 58 item 4). The run (``kafka_mc.realkafka.reproduce``) leaves its recording in
``OUT/conform`` (as ``real conform --run`` reads one, with the end state); it is validated
against the model of the release's preset and the trace's property judged there:

| judgement | verdict | exit |
|---|---|---|
| every conforming behaviour violates it, or some do (the report says which) | ``reproduced`` | 12 |
| none does, the run followed the trace to its end | ``not-reproduced`` | 0 |
| none does, the run left the trace (a step's awaited effect never came) | ``diverged`` | 16 |
| the run conforms to no behaviour of the model | ``diverged`` (of the model) | 16 |
| the validator's node limit reached first | ``undecided`` | 14 |

A lasso (a liveness counterexample) keeps the verdict of its stutter on the real cluster, and a
property that is not an invariant or a transition property the verdict of the client's
anomalies (``kafka_mc.realkafka.reproduce``). The behaviours judged are written beside the run:
``judged-violating.itf.json`` (the violating behaviour up to its violation: ``kafka-mc replay``
shows it) and ``judged-holding.itf.json`` (one that does not violate it).
"""
from __future__ import annotations

from pathlib import Path

from kafka_mc.explorers.conformance import MAX_NODES, write_trace
from kafka_mc.explorers.guided import runs, verdict
from kafka_mc.realkafka import reproduce as repro

VERDICTS = {"all": ("reproduced", repro.EXIT_REPRODUCED),
            "some": ("reproduced", repro.EXIT_REPRODUCED),
            "no-behaviour": ("diverged", repro.EXIT_DIVERGED),
            "undecided": ("undecided", 14)}


def judge_reproduction(result: "repro.Result", max_nodes: int | None = None, log=None
                       ) -> "verdict.Judgement | None":
    """``result`` judged on the model's behaviours its real run conforms to: its verdict, exit
    code, judgement and notes updated, report.json rewritten; the judgement (None: not judged,
    a note says why)."""
    folder = Path(result.out) / "conform"
    if (result.evidence or {}).get("lasso") is not None:
        result.notes.append("a lasso: judged by what the real cluster did once the trace's stem "
                            "was run, not on the run's behaviours")
        return None
    if not runs.is_run_folder(folder):
        result.notes.append(f"not judged on the model's behaviours: no run folder {folder}")
        return None
    release, cfg = runs.recorded_run(folder)
    events = runs.read_run(folder)
    model, model_cfg = runs.model_for(cfg, release, folder, events)
    prop = verdict.judged_property(model, result.property)
    if prop is None:
        result.notes.append(f"{result.property} is not an invariant or a transition property: "
                            "judged by the client's anomalies only")
        return None
    if log is not None:
        log(f"  judging {prop.name} on the model's behaviours the run conforms to ...")
    j = verdict.judge(model, events, prop, max_nodes or MAX_NODES)
    if j.answer == "none":
        name, code = (("diverged", repro.EXIT_DIVERGED) if result.divergence is not None
                      else ("not-reproduced", repro.EXIT_NOT_REPRODUCED))
    else:
        name, code = VERDICTS[j.answer]
    seen = [a["name"] for a in result.anomalies if a.get("property") == result.property]
    if seen and not j.violated:
        result.notes.append(f"the client saw {', '.join(seen)} ({result.property}), yet no "
                            "behaviour the run conforms to violates it: the mapping or the "
                            "anomaly check is wrong, look there")
    result.verdict, result.exit_code = name, code
    result.judgement = {**j.to_dict(), "lines": j.lines()}
    _write_behaviours(j, prop, model, model_cfg, Path(result.out))
    repro.rewrite_report(result)
    return j


def _write_behaviours(j, prop, model, model_cfg, out: Path) -> None:
    for c, name, upto in ((j.violating, "judged-violating.itf.json",
                           (j.violation or {}).get("step")),
                          (j.holding, "judged-holding.itf.json", None)):
        path = out / name
        if path.exists():
            path.unlink()
        if c is None or not c.conforms:
            continue
        write_trace(c, model, model_cfg, path, violated=prop if upto else None, upto=upto)
