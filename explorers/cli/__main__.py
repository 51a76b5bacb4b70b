"""``python -m kafka_mc.explorers.cli``: the ``kafka-mc`` command (through its entry, ``kafka_mc.explorers.main``)."""
import sys

from kafka_mc.explorers.main import main

sys.exit(main())
