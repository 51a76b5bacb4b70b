"""The embedded Spark session's Python daemon: pyspark's own (``pyspark.daemon``), with its
standard error, and so its workers', written to a file instead of the user's terminal.

Why: when the session stops, the JVM closes the daemon's sockets and kills the daemon and its
workers, and a worker caught mid-write prints the start of a traceback on stderr: a run that
ended well leaves ``Traceback (most recent call last):`` on the terminal (seen about once in
fifteen runs). A task that really fails reaches the driver as a ``PythonException`` carrying its
traceback, so moving the daemon's own stderr loses nothing the user needs; the file
(``KAFKA_MC_WORKER_LOG``) lives in the session's temporary directory. Standard output is the
daemon's channel to the JVM and is left alone. The file is used only for embedded (``local``) sessions
(``kafka_mc.explorers.spark.search.session``); a cluster's workers log where their cluster says.

It is also the workers' process entry, so it makes the settings a process's entry makes
(``kafka_mc.explorers.main``): OpenBLAS's threads, and the compiled builds' finder
(model/build/compiled.py), which importing kafka-mc no longer installs.
"""
from __future__ import annotations

import os


def main() -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from kafka_mc.model.build.compiled import install
    install()
    path = os.environ.get("KAFKA_MC_WORKER_LOG")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    from pyspark import daemon
    daemon.manager()


if __name__ == "__main__":
    main()
