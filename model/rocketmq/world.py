"""The state of the RocketMQ model (``spec.py`` says what each part stands for): names as
RocketMQ spells them, values as small ints so a state is a tuple of ints."""
from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

# The producer (DefaultMQProducerImpl.sendMessageInTransaction's progress)
IDLE, EXECUTING, EXECUTED, ENDED, CRASHED = range(5)
PRODUCER = ("IDLE", "EXECUTING", "EXECUTED", "ENDED", "CRASHED")
# The application's local transaction, as checkLocalTransaction reads it (IN_DOUBT: running, or
# its outcome not known to the listener yet)

class Local(IntEnum):
    NONE = 0
    IN_DOUBT = 1
    COMMITTED = 2
    ROLLED_BACK = 3


NONE, IN_DOUBT, COMMITTED, ROLLED_BACK = Local
LOCAL = tuple(x.name for x in Local)


class LocalTransactionState(IntEnum):
    """What executeLocalTransaction returns (the client's enum; 0 before it returns)."""

    COMMIT_MESSAGE = 1
    ROLLBACK_MESSAGE = 2
    UNKNOW = 3


COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW = LocalTransactionState
# The half message: not sent, waiting (no op message), done (op message written), discarded past
# transactionCheckMax into TRANS_CHECK_MAXTIME_TOPIC, or discarded and dropped (before 4.5.2)
ABSENT, PENDING, DONE, MAXTIME, DROPPED = range(5)
HALF = ("ABSENT", "PENDING", "DONE", "TRANS_CHECK_MAXTIME_TOPIC", "DROPPED")
RESOLVED = (DONE, MAXTIME, DROPPED)


class CommitOrRollback(IntEnum):
    """EndTransactionRequestHeader.commitOrRollback (MessageSysFlag.TRANSACTION_COMMIT_TYPE,
    TRANSACTION_ROLLBACK_TYPE)."""

    COMMIT = 1
    ROLLBACK = 2


COMMIT, ROLLBACK = CommitOrRollback


class World(NamedTuple):
    producer: int = IDLE
    local: int = NONE
    state: int = 0           # the LocalTransactionState executeLocalTransaction returned
    half: int = ABSENT
    check_times: int = 0     # PROPERTY_TRANSACTION_CHECK_TIMES of the half message
    op_pending: bool = False  # 5.1: op data queued for TransactionalOpBatchService
    real: int = 0            # copies of the message in its real topic
    consumed: int = 0        # copies the consumer read
    ends: tuple = ()         # EndTransaction in flight, sorted: (COMMIT|ROLLBACK, fromTransactionCheck)
    checks: int = 0          # CheckTransactionState requests in flight
    budget: tuple = ()       # faults left, in FAULTS order
    faults: int = 0          # faults taken (at most faults.total)
