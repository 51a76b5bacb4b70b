"""A real run's live read_committed consumer held against the Kafka model
(model/kafka/capabilities/fetches.py): its Fetch answers are the model's consumer steps and
states, its polls and positions what the model's consumer returned. The recorded run
(conformance_runs/kafka-4.4.0-live-consumer-aborts: `kafka-mc real run live-two-producers --set
workload.transactions_per_producer=1 --version 4.4.0 --seed 12`) has two producers aborting one
transaction each on both partitions while c0 polls: one answer returns producer 0's aborted
record below producer 1's open transaction (LSO 1, high watermark 3), the next both partitions
to their ABORT markers. It conforms; the consumer mutants of the model diverge on it, each where
it parts from Kafka; tampered, it diverges at the tampered event; and a fetch racing a marker
(the batches reaching past the LSO the answer names) conforms."""
import json
from pathlib import Path

import pytest

from kafka_mc.explorers.cli.real import read_run, recorded_run, validate_folder
from kafka_mc.explorers.conformance import validate
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.capabilities import fetches
from kafka_mc.model.kafka.capabilities.observations import norm
from kafka_mc.model.observations import observations_of

RUN = Path(__file__).parent / "conformance_runs" / "kafka-4.4.0-live-consumer-aborts"


def model_and_events(**overrides):
    release, cfg = recorded_run(RUN)
    verdict, model, _, events = validate_folder(cfg, release, RUN, **overrides)
    return verdict, model, events


def response(events, seq):
    return next(i for i, e in enumerate(events) if e.get("seq") == seq and e.get("source") ==
                "proxy" and e.get("direction") == "response")


def test_the_live_consumer_run_conforms_with_a_fetch_step_per_answer_with_batches():
    verdict, model, events = model_and_events()
    assert verdict.conforms, "\n".join(verdict.divergence.report())
    assert verdict.nodes < 2000
    fetched = [a for a in verdict.actions if a[0] == "Fetch"]
    # answers #88 (p0: offset 0) and #95 (p1: 0..3, p0: 1..3)
    assert fetched == [("Fetch", 0, 0), ("Fetch", 0, 1), ("Fetch", 0, 0)]
    last = verdict.states[-1].consumers[0]
    assert last.positions == (4, 4) and last.returned == ()    # every record read was aborted
    obs = observations_of(model, events)
    assert obs.skipped == frozenset()       # the consumer's fetches are observed, not skipped


@pytest.mark.parametrize("mutant, where, why", [
    ("consumer-ignores-aborted-index", "history #63: c0 ok position p0 = 4",
     "c0 p0 returned (offset, record) [] below position 4; the model's consumer [(0, (1, 0, 0, "
     "0)), (1, (0, 0, 0, 1))]"),
    ("lso-ignores-open-transactions", "Fetch response #88 (c0, conn 6, correlation 6) p0: "
     "offsets 0..0", "fetched up to: recorded 1, model "),
    ("abort-marker-without-index-entry", "Fetch response #88 (c0, conn 6, correlation 6) p0: "
     "offsets 0..0", "aborted transactions: recorded ((0, 0),), model ()"),
])
def test_the_consumer_mutants_diverge_where_they_part_from_kafka(mutant, where, why):
    verdict, _, _ = model_and_events(**{"model.mutant": mutant})
    assert verdict.verdict == "diverges"
    d = verdict.divergence
    assert d.label == where
    assert any(why in n.reason for n in d.near), d.report()


def test_an_lso_other_than_kafkas_diverges_at_its_answer():
    release, cfg = recorded_run(RUN)
    events = read_run(RUN)
    i = response(events, 88)
    p0 = events[i]["fields"]["responses"][0]["partitions"][0]
    assert (p0["partition_index"], p0["last_stable_offset"], p0["high_watermark"]) == (0, 1, 3)
    p0["last_stable_offset"] = 3
    model = registry.bind(cfg.with_values(**{"protocol.version": release.preset,
                                             "check.symmetry": False}))
    d = validate(model, events).divergence
    assert d.label.startswith("Fetch response #88 (c0, conn 6, correlation 6) p0: high "
                              "watermark 3, LSO 3")
    assert any("last_stable_offset: recorded 3, model" in n.reason for n in d.near)


def test_a_poll_returning_an_aborted_record_diverges_at_the_poll():
    release, cfg = recorded_run(RUN)
    events = read_run(RUN)
    i = next(i for i, e in enumerate(events) if e.get("process") == "c0" and e.get("f") == "poll"
             and e.get("type") == "ok" and e.get("time", 0) > events[response(events, 95)]["time"])
    topic = next(e["value"]["topic"] for e in events if e.get("f") == "send")
    # t0.i0.x0 (aborted) wrote p1's offset 0: the consumer returning it
    events[i]["value"] = [{"topic": topic, "partition": 1, "offset": 0, "key": "t0.i0.x0.r0",
                           "value": "t0.i0.x0.r0"}]
    model = registry.bind(cfg.with_values(**{"protocol.version": release.preset,
                                             "check.symmetry": False}))
    d = validate(model, events).divergence
    assert d.label == f"history #{events[i]['index']}: c0 ok poll"


def test_a_fetch_racing_a_marker_conforms():
    """Partition.readRecords takes the high watermark and LSO an answer carries before it reads
    the log up to the LSO of the moment: a marker appended in between makes the batches reach
    past the LSO named. Answer #95's p1 (batches 0..3, HW 4, LSO 4) named as read just before
    producer 1's ABORT (HW 3, LSO 0, producer 1's open transaction at 0) still conforms."""
    release, cfg = recorded_run(RUN)
    events = read_run(RUN)
    p1 = events[response(events, 95)]["fields"]["responses"][0]["partitions"][0]
    assert (p1["partition_index"], p1["high_watermark"], p1["last_stable_offset"]) == (1, 4, 4)
    p1["high_watermark"], p1["last_stable_offset"] = 3, 0
    model = registry.bind(cfg.with_values(**{"protocol.version": release.preset,
                                             "check.symmetry": False}))
    assert validate(model, events).conforms


def test_an_incremental_fetch_session_keeps_the_offsets_it_was_sent():
    def req(corr, epoch, parts, forgotten=()):
        return {"api": "Fetch", "direction": "request", "action": "forwarded",
                "endpoint": "broker-1/CLIENT", "conn": 4, "correlation_id": corr,
                "client_id": "c0", "fields": {
                    "session_epoch": epoch,
                    "topics": [{"name": "t", "partitions": [{"partition": k, "fetch_offset": o}
                                                           for k, o in parts]}],
                    "forgotten_topics_data": [{"name": "t", "partitions": list(forgotten)}]}}
    events = [req(1, 0, [(0, 0), (1, 0)]), req(2, 1, []), req(3, 2, [(1, 3)]),
              req(4, 3, [], forgotten=[0]), req(5, 0, [(0, 5)]),
              dict(req(6, 0, [(0, 9)]), client_id="reader-read_committed")]
    seen = fetches.scan(events, norm)
    offsets = {k[2]: v for k, v in seen.offsets.items()}
    assert offsets == {1: {("t", 0): 0, ("t", 1): 0}, 2: {("t", 0): 0, ("t", 1): 0},
                       3: {("t", 0): 0, ("t", 1): 3}, 4: {("t", 1): 3}, 5: {("t", 0): 5}}


def test_a_run_without_live_consumers_keeps_the_readers_fetches_skipped():
    folder = RUN.parent / "kafka-4.4.0-faults"
    events = [dict(e, source="proxy") for e in map(json.loads, (folder / "events.jsonl").open())]
    assert any(e.get("api") == "Fetch" for e in events)      # the end reader's
    model = registry.bind(registry.load(resolve_config_path("tiny")))
    assert observations_of(model, events).skipped == frozenset({"Fetch"})
