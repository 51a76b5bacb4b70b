"""The symbolic explorer (``checker``): bounded model checking and k-induction with z3 over a
model's symbolic transition system (``kafka_mc.model.symbolic``)."""
