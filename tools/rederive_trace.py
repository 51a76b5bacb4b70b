"""Re-derive ITF traces' states on the current model from their actions, keeping their metadata.

    .venv/bin/python tools/rederive_trace.py FILE [FILE ...]

For a golden trace after a deliberate model change that leaves its behaviour (the actions)
alone and moves only what a state holds (tests/golden/README.md): each action must still be
enabled where the trace takes it; the file is rewritten canonically and replayed.
"""
import sys

from kafka_mc.traces import trace as T
from kafka_mc.traces.replay import model_of, replay


def rederive(file: str) -> str:
    tr = T.read(file)
    model = model_of(tr)
    s = next(iter(model.init_states()))
    states, actions = [s], []
    for i, a in enumerate(tr.actions, 1):
        a = model.itf_decode_action(a)
        after = [t for b, t in model.successors(s) if b == a]
        if not after:
            raise SystemExit(f"{file}: step {i}, {model.format_action(a)}, is not enabled")
        s = after[0]
        states.append(s)
        actions.append(a)
    T.Trace.of(model, states, actions, tr.meta, tr.loop, tr.loop_action).write(file, model)
    return f"{file}: {len(actions)} steps, reproduced: {replay(T.read(file)).reproduced}"


if __name__ == "__main__":
    for f in sys.argv[1:]:
        print(rederive(f))
