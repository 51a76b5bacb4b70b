"""``python -m explorers.cli``: the ``kafka-mc`` command (through its entry, ``explorers.main``)."""
import sys

from explorers.main import main

sys.exit(main())
