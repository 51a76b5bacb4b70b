"""Model-guided testing of the real system (issue 58): verdicts judged on the behaviours a real
run conforms to (``verdict``), the model's coverage classes reached and witnessed by real runs
(``coverage``), and directed runs that drive the real system towards the classes no run has
witnessed (``explore``). Above trace validation (``kafka_mc.explorers.conformance``) and the
BFS; below the command line."""
