"""State-space reductions: partial-order reduction (``por``: stubborn sets, the reduction view and
its self-check) and the self-check of a model's declared symmetries (``symmetry_check``; the
canonicalisation itself is the model contract's, ``kafka_mc.model.canonical``)."""
