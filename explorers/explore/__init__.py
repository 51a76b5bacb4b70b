"""``kafka-mc explore``: the web state-space explorer (``session``: the walking; ``app``: the web)."""
