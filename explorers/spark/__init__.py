"""The BFS distributed with Spark: the driver (``search``), what the Python workers run
(``tasks``), the run directory's files (``store``) and the workers' daemon (``daemon``)."""
