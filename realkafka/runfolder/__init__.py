"""Run folders: the folders ``kafka-mc real`` writes a run into and reads one from.

* ``manifest``: ``kafka-mc-run.json``, written first and completed last: what marks a folder as
  kafka-mc's, what the run writes there (what a rerun replaces, and nothing else), whether it
  finished and, if not, why (``RunFolder.take``, ``complete``, ``incomplete``; runs killed
  outright found by the next command, ``sweep_killed``).
* ``reader``: the one reader of a recorded run (``read``): regular files of the folder only,
  size and depth limits, every file checked against its schema before use, an incomplete or
  changed run refused unless the part that exists is asked for.
* ``files``: one file of a folder read or written (never through a link, never blocking on a
  FIFO; written whole or not at all); ``schema``: the shapes of a run's files.

Every error is a ``FolderError``: one line, exit 2.
"""
from kafka_mc.realkafka.runfolder.files import FolderError, folder_path
from kafka_mc.realkafka.runfolder.manifest import (NAME, Interrupted, RunFailed, RunFolder,
                                                   record_outputs, usable)
from kafka_mc.realkafka.runfolder.reader import Recorded, read, read_end_state

__all__ = ["FolderError", "folder_path", "NAME", "Interrupted", "RunFailed", "RunFolder",
           "record_outputs", "usable", "Recorded", "read", "read_end_state"]
