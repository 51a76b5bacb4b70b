"""The Kafka transaction model: one module per Kafka component, and what assembles them.

``world`` (the state values, Kafka's names), ``network`` (messages in flight, delivery, the
network's faults), ``producer`` and ``client`` (KafkaProducer / TransactionManager / Sender),
``coordinator`` (TransactionCoordinator and its log), ``partition`` (partition leaders),
``group_coordinator``, ``consumer``; ``faults`` (the one fault table), ``versions`` (presets by
what each Kafka version changed), ``params`` (the configuration schema), ``mutants``, ``diagram``
(sequence diagrams) and ``spec`` (the rules assembled into the ProtocolSpec and registered as the
model ``kafka``). Its properties live in the top-level ``invariants`` package, which imports this
one; nothing here imports them.
"""
