"""What a run of a two-phase commit system's nodes logs, as observations of the TwoPhase model
(``kafka_mc.model.toys.twophase``; the validator's toy, ``kafka_mc.explorers.conformance``).

Each node writes its own log, one stream per node (``{"node": "db-2", "event": "prepare"}``);
the logs are merged in any order, so only each node's own order counts:

| event (node) | model |
|---|---|
| ``prepare`` (a resource manager) | ``RMPrepare(rm)`` |
| ``choose-abort`` | ``RMChooseToAbort(rm)`` |
| ``rcv-commit`` / ``rcv-abort`` | ``RMRcvCommitMsg(rm)`` / ``RMRcvAbortMsg(rm)`` |
| ``state`` with ``value`` working/prepared/committed/aborted | the RM's ``rmState`` there (no step) |
| ``commit`` / ``abort`` (node ``TM``) | ``TMCommit`` / ``TMAbort`` |
| ``end`` with ``states`` (name -> working/prepared/...: what each RM showed once the run was over) | each RM's ``rmState`` at the run's end (after every other event) |

Silent: ``TMRcvPrepared`` (the TM does not log what it receives). Resource managers are named
as the system names them; they are numbered r1..rN in the order of their names (``rename``).
Any other event (a heartbeat) is not observed.
"""
from __future__ import annotations

from kafka_mc.model.observations import Observations, differs, end, state, step

TM = "TM"
RM_EVENTS = {"prepare": "RMPrepare", "choose-abort": "RMChooseToAbort",
             "rcv-commit": "RMRcvCommitMsg", "rcv-abort": "RMRcvAbortMsg"}
TM_EVENTS = {"commit": "TMCommit", "abort": "TMAbort"}
SILENT = frozenset({"TMRcvPrepared"})


def rename(events) -> dict[str, int]:
    """Resource-manager names -> the model's numbers 1..N, in the order of the names."""
    names = sorted({e.get("node") for e in events if e.get("node") not in (None, TM)})
    return {n: i for i, n in enumerate(names, start=1)}


def observations(model, events) -> Observations:
    """The mapping of ``TwoPhase.observations`` (an RM's state read as its trace form, the
    ``rmState`` variable of ``itf_encode``)."""
    rms = rename(e for e in events if e.get("event") != "end")

    def rm_state(r, want):
        return lambda s: differs({f"rmState[r{r}]": want},
                                 {f"rmState[r{r}]": model.itf_encode(s)["rmState"][f"r{r}"]})

    def observe(e):
        node, what = e.get("node"), e.get("event")
        if what == "end":
            return [end(f"end: {name} {want}", rm_state(rms[name], want))
                    for name, want in sorted((e.get("states") or {}).items()) if name in rms]
        label = f"{node}: {what}" + (f" {e['value']}" if "value" in e else "")
        if node == TM:
            name = TM_EVENTS.get(what)
            return None if name is None else step(label, (name,), lambda s, a, t: None)
        r = rms.get(node)
        if r is None:
            return None
        if what == "state":
            return state(label, rm_state(r, e.get("value")))
        name = RM_EVENTS.get(what)
        if name is None:
            return None
        return step(label, (name,), lambda s, a, t: differs({"rm": r}, {"rm": a[1]}))

    return Observations(observe=observe, stream=lambda e: e.get("node") or "(end)",
                        silent=lambda name: name in SILENT,
                        unseen="the TM's receipt of Prepared messages (TMRcvPrepared)")

