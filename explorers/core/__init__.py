"""The search core every explorer shares: which properties are checked where (``checking``), what a
search returns (``result``) and how it is reported (``report``), the model as every search sees
it (``adapter``: successors, fingerprint keys, paths rebuilt by replaying), progress reports
(``progress``) and the lock of a search's run directory (``run_dir``)."""
