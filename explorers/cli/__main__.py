"""``python -m explorers.cli``: the ``kafka-mc`` command."""
import sys

from explorers.cli import main

sys.exit(main())
