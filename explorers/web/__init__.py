"""``kafka-mc explore``: the web state-space explorer (``session``: walking a model; ``app``:
the web application)."""
