"""``python -m kafka_mc``: the ``kafka-mc`` command (through its entry, ``explorers.main``)."""
import sys

from explorers.main import main

sys.exit(main())
