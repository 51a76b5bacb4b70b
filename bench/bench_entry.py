"""A benchmark's process-wide settings: those the ``kafka-mc`` command's entry makes
(explorers/main.py), which importing kafka-mc does not: OpenBLAS's one thread and the compiled
builds' finder (model/build/compiled.py). Each benchmark script imports it before kafka-mc."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from kafka_mc.model.build.compiled import install  # noqa: E402

install()
