"""A recording, fault-injecting proxy between Kafka's clients and brokers (and between brokers).

One ``Proxy`` runs an asyncio loop in a daemon thread. ``route(endpoint, upstream)`` listens on
127.0.0.1 (a free port) for one advertised listener of one broker (``"broker-1/CLIENT"``,
``"broker-1/INTERNAL"``); every client connection accepted there gets its own connection to the
broker's real listener. Frames are read whole (``int32`` size + payload), decoded
(``kafka_mc.realkafka.wire``), recorded, and forwarded as the original bytes: the proxy never re-encodes.

Ordering. Kafka brokers read one request per connection at a time and answer in order
(``SocketServer.Processor`` mutes a channel until its response is sent), and the Java client
matches answers to its in-flight requests in order (``InFlightRequests.completeNext``; a
correlation id out of order is an ``IllegalStateException`` and a disconnect). So a held request
holds every later request on its connection ("queued" in the log), and a held response every
later response on its connection; frames of other connections pass.

Faults (``Fault``), aimed by API, direction, endpoint (a name or an ``fnmatch`` pattern), the
n-th match (``occurrence``, 1-based) and how many matches from there on (``count``; None: all),
and/or a predicate on the decoded event (``where``):

- ``HOLD``: keep the frame; ``release(fault)`` sends it later, or ``delay`` seconds after it
  arrived. A held request whose client has closed its connection meanwhile still goes to the
  broker on the proxy's old upstream connection, which is kept open for it; the broker's answer
  is dropped (no one to give it to). A held response whose client is gone is dropped.
- ``DROP``: the frame is not forwarded and both sides of its connection are closed: the sender
  sees the connection fail and retries (a request loss, or a response loss: the broker handled
  the request, its answer is lost with the connection).
- ``DUPLICATE`` (requests): the first copy is held until the sender gives up on it (its
  ``request.timeout.ms`` closes the connection; ``NetworkClient.handleTimedOutRequests``) and
  retries on a new connection, which passes; then (``delay`` seconds after the close, 0 by
  default, or at ``release(fault)``) the held copy is delivered to the broker on the old
  upstream connection and the broker's answer to it dropped: the copy is handled, its answer is
  lost with the connection. Released while the client still waits, it is a plain delay.

Event log: one dict per event, kept in memory (``events()``) and appended to ``events_path`` as
JSON lines, flushed per event::

    {"seq": 12, "time": <monotonic ns since the proxy started>, "endpoint": "broker-1/CLIENT",
     "conn": 3, "direction": "request" | "response" | "connection",
     "api": "EndTxn", "api_key": 26, "version": 4, "correlation_id": 7, "client_id": "producer-1",
     "size": 45, "fields": {...the decoded body...}, "errors": [{"path", "code", "name"}],
     "fault": null | {"kind": "hold", "id": "hold-1"},
     "action": "forwarded" | "held" | "queued" | "released" | "duplicated-copy" | "dropped"}

``held`` frames are kept by a fault, ``queued`` ones wait behind a held frame of their
connection; when either is finally sent a second event says so (``released``, or
``duplicated-copy`` for a duplicate's held copy reaching the broker after its client left), with
``held_seq`` naming the first event. Produce and Fetch v13+ name topics by id; the proxy writes
the topic's ``name`` beside each ``topic_id`` when a Metadata answer it carried told it. ``dropped`` carries a ``reason`` when no fault dropped it
("client closed", "broker closed", "connection closed"). A body that fails to decode carries
``decode_error`` and is forwarded all the same. Connection events (direction "connection"):
action "opened", "closed" with ``by`` ("client", "broker", "proxy"), "refused" (the broker's
listener did not accept).
"""
from __future__ import annotations

import asyncio
import collections
import fnmatch
import itertools
import json
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kafka_mc.realkafka import wire

HOLD, DROP, DUPLICATE = "hold", "drop", "duplicate"
KINDS = (HOLD, DROP, DUPLICATE)
MAX_FRAME = 200 * 1024 * 1024        # socket.request.max.bytes is 100 MiB by default
ORPHAN_LINGER_S = 30.0               # an orphaned upstream waits this long for its answers


@dataclass(eq=False)
class Fault:
    """One network fault to apply to matching frames (see the module docstring)."""
    kind: str
    api: str | int | None = None          # "EndTxn" or 26; None: any
    direction: str = "request"            # "request" | "response"
    endpoint: str | None = None           # "broker-1/INTERNAL", a pattern "broker-*/CLIENT"; None: any
    occurrence: int = 1                   # the first match it applies to (1-based)
    count: int | None = 1                 # how many matches it applies to; None: every one
    where: Callable[[dict], bool] | None = None   # a predicate on the decoded event
    delay: float | None = None            # HOLD: released after; DUPLICATE: after the close
    id: str = ""                          # given by add_fault when empty
    matches: int = field(default=0, compare=False)          # matching frames seen
    applied: list[int] = field(default_factory=list)        # seqs of the events it took

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"fault kind {self.kind!r} is not one of {KINDS}")
        if self.direction not in ("request", "response"):
            raise ValueError(f"fault direction {self.direction!r} is not request or response")
        if self.kind == DUPLICATE and self.direction != "request":
            raise ValueError("only a request can be duplicated")
        if isinstance(self.api, str) and self.api not in wire.API_KEYS:
            raise ValueError(f"unknown Kafka API {self.api!r}")
        if self.occurrence < 1 or (self.count is not None and self.count < 1):
            raise ValueError("occurrence and count are at least 1")

    @property
    def api_key(self) -> int | None:
        return wire.API_KEYS[self.api] if isinstance(self.api, str) else self.api

    @property
    def done(self) -> bool:
        return self.count is not None and len(self.applied) >= self.count

    def aims_at(self, event: dict) -> bool:
        if event["direction"] != self.direction:
            return False
        if self.api is not None and event.get("api_key") != self.api_key:
            return False
        if self.endpoint is not None and not fnmatch.fnmatchcase(event["endpoint"],
                                                                 self.endpoint):
            return False
        if self.where is not None:
            try:
                return bool(self.where(event))
            except Exception:
                return False
        return True

    def tag(self) -> dict:
        return {"kind": self.kind, "id": self.id}


def fault_for(nf) -> Fault:
    """The proxy fault for a run plan's ``kafka_mc.realkafka.plan.NetworkFault`` (kind delay | duplicate |
    drop-request | drop-response, api, occurrence, hold_ms)."""
    if nf.kind == "delay":
        return Fault(HOLD, nf.api, "request", occurrence=nf.occurrence,
                     delay=max(nf.hold_ms, 0) / 1000.0)
    if nf.kind == "duplicate":
        return Fault(DUPLICATE, nf.api, "request", occurrence=nf.occurrence)
    if nf.kind in ("drop-request", "drop-response"):
        return Fault(DROP, nf.api, nf.kind.split("-")[1], occurrence=nf.occurrence)
    raise ValueError(f"unknown network fault kind {nf.kind!r}")


class Held:
    """A frame kept by a fault (or queued behind one) on one connection and direction."""
    __slots__ = ("data", "event", "fault", "held", "conn", "direction")

    def __init__(self, data: bytes, event: dict, fault: Fault | None, conn: "_Conn",
                 direction: str):
        self.data, self.event, self.fault = data, event, fault
        self.held = fault is not None
        self.conn, self.direction = conn, direction

    def __repr__(self):
        e = self.event
        return (f"Held(seq={e['seq']}, {e['endpoint']}#{e['conn']} {e['direction']} {e['api']} "
                f"corr={e['correlation_id']}, fault={self.fault.id if self.fault else None})")


class _Route:
    def __init__(self, endpoint: str, upstream: tuple[str, int]):
        self.endpoint, self.upstream = endpoint, upstream
        self.server: asyncio.base_events.Server | None = None
        self.port = 0


class _Conn:
    def __init__(self, number: int, endpoint: str):
        self.number, self.endpoint = number, endpoint
        self.client_w: asyncio.StreamWriter | None = None
        self.up_w: asyncio.StreamWriter | None = None
        self.client_open = True
        self.up_open = False
        self.pending: dict[int, tuple[int, int, str | None]] = {}   # corr -> api, version, client
        self.queues = {"request": collections.deque(), "response": collections.deque()}
        self.copies: dict[int, Fault] = {}          # corr of a duplicate's delivered copy
        self.orphan = False                         # client gone, held requests still to send
        self.tasks: list[asyncio.Task] = []
        self.linger: asyncio.TimerHandle | None = None


class Proxy:
    """The recording, fault-injecting proxy (a context manager; ``close()`` always stops its
    servers, connections and thread)."""

    def __init__(self, events_path: Path | str | None = None):
        self._t0 = time.monotonic_ns()
        self._events: list[dict] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._conn_numbers = itertools.count(1)
        self._fault_numbers = itertools.count(1)
        self._faults: list[Fault] = []
        self._routes: dict[str, _Route] = {}
        self._conns: set[_Conn] = set()
        self._subscribers: list[Callable[[dict], None]] = []
        self._file = open(events_path, "ab", buffering=0) if events_path else None
        self.write_error: OSError | None = None    # the event log could not be written
        self._tasks: set[asyncio.Task] = set()     # every task of a connection, to end them all
        self._writers: set = set()                 # and every socket's writer, to close them all
        self._topic_names: dict[str, str] = {}     # topic id -> name, from Metadata answers
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="kafka-proxy", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ thread plumbing
    def _run(self):
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    def _call(self, fn, *args, timeout: float = 30.0):
        """Run ``fn(*args)`` on the loop (a coroutine function or a plain one) and return its
        result; called from the loop's own thread, runs it directly (plain functions only)."""
        if self._closed:
            raise RuntimeError("the proxy is closed")
        if threading.current_thread() is self._thread:
            if asyncio.iscoroutinefunction(fn):
                raise RuntimeError("cannot wait for a coroutine on the proxy's own thread")
            return fn(*args)

        async def run():
            r = fn(*args)
            return await r if asyncio.iscoroutine(r) else r
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def __enter__(self) -> "Proxy":
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ public API
    @property
    def origin_ns(self) -> int:
        """``time.monotonic_ns()`` when the proxy started: an event's ``time`` counts from it
        (give it to ``kafka_mc.realkafka.client.Driver(origin_ns=...)`` for one time line)."""
        return self._t0

    def route(self, endpoint: str, upstream: tuple[str, int], port: int = 0) -> int:
        """Listen on 127.0.0.1:``port`` (0: a free one) for ``endpoint`` and forward each
        connection to ``upstream``; the port listened on. Routing an endpoint again changes its
        upstream and keeps its port."""
        return self._call(self._route, endpoint, tuple(upstream), port)

    async def _route(self, endpoint, upstream, port):
        r = self._routes.get(endpoint)
        if r is not None:
            r.upstream = upstream
            return r.port
        r = _Route(endpoint, upstream)
        r.server = await asyncio.start_server(
            lambda rd, wr: self._accept(r, rd, wr), "127.0.0.1", port)
        r.port = r.server.sockets[0].getsockname()[1]
        self._routes[endpoint] = r
        return r.port

    def set_upstream(self, endpoint: str, upstream: tuple[str, int]) -> None:
        """New connections to ``endpoint`` go to ``upstream`` (a broker restarted on new ports);
        existing ones stay as they are."""
        def do():
            self._routes[endpoint].upstream = tuple(upstream)
        self._call(do)

    def port(self, endpoint: str) -> int:
        return self._routes[endpoint].port

    def endpoints(self) -> dict[str, tuple[int, tuple[str, int]]]:
        """endpoint -> (proxy port, upstream)."""
        return {e: (r.port, r.upstream) for e, r in self._routes.items()}

    def add_fault(self, fault: Fault) -> Fault:
        """Arm ``fault`` (it applies to frames arriving from now on); returns it, its ``id``
        given when empty."""
        def do():
            if not fault.id:
                fault.id = f"{fault.kind}-{next(self._fault_numbers)}"
            self._faults.append(fault)
            return fault
        return self._call(do)

    def remove_fault(self, fault: Fault) -> None:
        """Disarm ``fault`` (frames it holds stay held until released)."""
        def do():
            if fault in self._faults:
                self._faults.remove(fault)
        self._call(do)

    def faults(self) -> list[Fault]:
        return list(self._faults)

    def held(self) -> list[Held]:
        """Every frame held by a fault now (not the ones merely queued behind them)."""
        def do():
            return [h for c in self._conns for q in c.queues.values() for h in q if h.held]
        return self._call(do)

    def drop(self, held: Held) -> None:
        """Drop a held frame and close its connection (as a lost request or response: the sender
        sees the connection fail and retries on a new one)."""
        self._call(self._shut, held.conn, "proxy")

    def release(self, what: "Fault | Held | str | None" = None) -> int:
        """Send the frames held by a fault (a ``Fault`` or its id), one held frame, or (None)
        every held frame; the number released. A released frame behind another frame still held
        on its connection and direction goes only when that one does (connection order)."""
        return self._call(self._release, what)

    def disconnect(self, endpoint: str | None = None) -> int:
        """Close every connection (both sides) of ``endpoint`` (None: all): a network cut.
        The number of connections closed."""
        def do():
            conns = [c for c in self._conns if endpoint is None or c.endpoint == endpoint]
            for c in conns:
                self._shut(c, "proxy")
            return len(conns)
        return self._call(do)

    def events(self) -> list[dict]:
        """Every event so far (the dicts themselves: do not change them)."""
        with self._cond:
            return list(self._events)

    def subscribe(self, callback: Callable[[dict], None]) -> None:
        """Call ``callback(event)`` on the proxy's thread for every event from now on (it must
        be quick and must not wait on the proxy; its exceptions are ignored)."""
        self._subscribers.append(callback)

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float = 30.0) -> dict:
        """The first event (past or future, each tried once, in order) ``predicate`` accepts;
        ``TimeoutError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        i = 0
        while True:
            with self._cond:
                batch = self._events[i:]
                if not batch:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError(f"no proxy event matched within {timeout} s")
                    self._cond.wait(min(left, 1.0))
                    batch = self._events[i:]
            i += len(batch)
            for e in batch:
                if predicate(e):
                    return e
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no proxy event matched within {timeout} s")

    def close(self) -> None:
        """Stop every server and connection, the loop and its thread; close the event file.
        Safe to call twice."""
        if self._closed:
            return
        if threading.current_thread() is self._thread:
            raise RuntimeError("Proxy.close() from the proxy's own thread (a subscriber?)")
        try:
            if self._loop.is_running():
                fut = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
                try:
                    fut.result(10)
                except Exception:
                    pass
        finally:
            self._closed = True
            if self._loop.is_running():
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            if self._file:
                self._file.close()
                self._file = None

    async def _shutdown(self):
        for r in self._routes.values():
            if r.server:
                r.server.close()
        conns = list(self._conns)
        # every connection's tasks, those of connections already closed too (a task left
        # pending when the loop closes is "destroyed but pending" at exit)
        tasks = [t for t in {*self._tasks, *(t for c in conns for t in c.tasks)}
                 if t is not asyncio.current_task()]
        for c in conns:
            self._shut(c, "proxy")
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # a transport's socket is closed on a later turn of the loop: let those turns run
        # before the loop stops, or the sockets would stay open (and their peers waiting)
        # (and every connection's: one closed before is off the list, its socket may be too)
        writers = {w for c in conns for w in (c.client_w, c.up_w) if w is not None}
        writers |= self._writers
        for w in writers:
            if not w.is_closing():
                w.close()
        try:
            await asyncio.wait_for(asyncio.gather(*(w.wait_closed() for w in writers),
                                                  return_exceptions=True), 5)
        except (asyncio.TimeoutError, Exception):
            pass
        for w in writers:               # whatever has not closed by now is cut
            w.transport.abort()
        await asyncio.sleep(0.05)      # the close callbacks of cancelled connects
        for r in self._routes.values():
            if r.server:
                try:
                    await asyncio.wait_for(r.server.wait_closed(), 2)
                except Exception:
                    pass

    # ------------------------------------------------------------------ events
    def _log(self, event: dict) -> dict:
        event["seq"] = next(self._seq)
        event["time"] = time.monotonic_ns() - self._t0
        line = (json.dumps(event, separators=(",", ":")) + "\n").encode()
        with self._cond:            # the file and the list in the same order
            if self._file:
                self._append(line)
            self._events.append(event)
            self._cond.notify_all()
        for cb in list(self._subscribers):
            try:
                cb(event)
            except Exception:
                pass
        return event

    def _append(self, line: bytes) -> None:
        """One line of the event log; when it cannot be written (a full disk), the file is cut
        back to its last whole line and closed, the error kept (``write_error``: the run then
        fails, saying so), and the proxy goes on forwarding (the events stay in memory)."""
        good = self._file.tell()
        try:
            view = memoryview(line)
            while view:                 # an unbuffered write may take part of the line
                view = view[self._file.write(view):]
        except OSError as e:
            self.write_error = e
            try:
                self._file.truncate(good)
            except OSError:
                pass
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None

    def _conn_event(self, c: _Conn, action: str, **extra) -> None:
        self._log({"seq": None, "time": None, "endpoint": c.endpoint, "conn": c.number,
                   "direction": "connection", "api": None, "action": action, **extra})

    def _again(self, first: dict, action: str, fault: Fault | None, **extra) -> None:
        """A second event for a frame already recorded (released, duplicated-copy, dropped)."""
        e = dict(first, fault=fault.tag() if fault else None, action=action,
                 held_seq=first["seq"], **extra)
        self._log(e)

    # ------------------------------------------------------------------ connections
    async def _accept(self, route: _Route, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter):
        c = _Conn(next(self._conn_numbers), route.endpoint)
        c.client_w = writer
        self._writers.add(writer)
        c.tasks = [asyncio.current_task()]
        self._track(c.tasks[0])
        self._conns.add(c)
        upstream = route.upstream
        try:
            up_r, up_w = await asyncio.wait_for(asyncio.open_connection(*upstream), 10)
        except (OSError, asyncio.TimeoutError) as e:
            self._conn_event(c, "refused", upstream=list(upstream), reason=str(e)[:200])
            c.client_open = False
            writer.close()
            self._conns.discard(c)
            return
        c.up_w, c.up_open = up_w, True
        self._writers.add(up_w)
        if not c.client_open:             # closed (by close() or disconnect()) meanwhile
            up_w.close()
            c.up_open = False
            self._conns.discard(c)
            return
        self._conn_event(c, "opened", upstream=list(upstream),
                         client=list(writer.get_extra_info("peername") or ()))
        up_task = asyncio.ensure_future(self._pump(c, "response", up_r))
        c.tasks.append(up_task)
        self._track(up_task)
        try:
            await self._pump(c, "request", reader)
            await up_task
        finally:
            if not c.client_open and not c.up_open:
                self._conns.discard(c)

    def _track(self, task: asyncio.Task) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _pump(self, c: _Conn, direction: str, reader: asyncio.StreamReader):
        """Read whole frames from one side until it closes."""
        dst = (lambda: c.up_w) if direction == "request" else (lambda: c.client_w)
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                if size < 0 or size > MAX_FRAME:
                    raise ValueError(f"frame of {size} bytes")
                payload = await reader.readexactly(size)
                self._on_frame(c, direction, head + payload, payload)
                w = dst()
                if w is not None and not w.is_closing():
                    try:
                        await w.drain()
                    except (ConnectionError, OSError):
                        pass
        except (asyncio.IncompleteReadError, ConnectionError, OSError, ValueError):
            pass
        finally:
            if direction == "request":
                self._client_gone(c)
            else:
                self._broker_gone(c)

    def _client_gone(self, c: _Conn):
        if not c.client_open:
            return
        c.client_open = False
        self._conn_event(c, "closed", by="client")
        for h in list(c.queues["response"]):
            self._again(h.event, "dropped", h.fault, reason="client closed")
        c.queues["response"].clear()
        if c.queues["request"] and c.up_open:
            # held requests still go to the broker on this upstream connection
            c.orphan = True
            for h in c.queues["request"]:
                if h.held and h.fault is not None and h.fault.kind == DUPLICATE:
                    self._loop.call_later(h.fault.delay or 0.0, self._release_one, h)
        else:
            self._close_up(c)

    def _broker_gone(self, c: _Conn):
        if not c.up_open:
            return
        c.up_open = False
        self._conn_event(c, "closed", by="broker")
        for h in list(c.queues["request"]):
            self._again(h.event, "dropped", h.fault, reason="broker closed")
        c.queues["request"].clear()
        if c.linger:
            c.linger.cancel()
        if not c.queues["response"]:
            self._close_client(c)

    def _close_up(self, c: _Conn, by: str | None = None):
        if c.linger:
            c.linger.cancel()
            c.linger = None
        if c.up_open:
            c.up_open = False
            if by:
                self._conn_event(c, "closed", by=by, side="broker")
        if c.up_w is not None and not c.up_w.is_closing():
            c.up_w.close()
        if not c.client_open:
            self._conns.discard(c)

    def _close_client(self, c: _Conn, by: str | None = None):
        if c.client_open:
            c.client_open = False
            if by:
                self._conn_event(c, "closed", by=by, side="client")
        if c.client_w is not None and not c.client_w.is_closing():
            c.client_w.close()
        if not c.up_open:
            self._conns.discard(c)

    def _shut(self, c: _Conn, by: str):
        """Close both sides now; whatever waits on the connection is dropped."""
        for q in c.queues.values():
            for h in list(q):
                self._again(h.event, "dropped", h.fault, reason="connection closed")
            q.clear()
        was = c.up_w is not None and (c.client_open or c.up_open)
        c.client_open = False
        if c.up_open and c.linger:
            c.linger.cancel()
        c.up_open = False
        if was:
            self._conn_event(c, "closed", by=by)
        for w in (c.client_w, c.up_w):
            if w is not None and not w.is_closing():
                w.close()
        self._conns.discard(c)

    # ------------------------------------------------------------------ frames
    def _on_frame(self, c: _Conn, direction: str, data: bytes, payload: bytes):
        if direction == "request":
            d = wire.decode_request(payload)
            if d.get("correlation_id") is not None and d.get("api_key") is not None:
                c.pending[d["correlation_id"]] = (d["api_key"], d["version"], d.get("client_id"))
        else:
            try:
                corr = wire.correlation_id_of(payload)
            except struct.error:
                corr = None
            api_key, version, client_id = c.pending.pop(corr, (None, None, None))
            d = wire.decode_response(payload, api_key, version)
            d["client_id"] = client_id
        if d.get("api_key") in (0, 1, 3) and d.get("fields"):
            self._topic_ids(d)
        event = {"seq": None, "time": None, "endpoint": c.endpoint, "conn": c.number,
                 "direction": direction, "api": d.get("api"), "api_key": d.get("api_key"),
                 "version": d.get("version"), "correlation_id": d.get("correlation_id"),
                 "client_id": d.get("client_id"), "size": len(payload),
                 "fields": d.get("fields", {}), "errors": d.get("errors", []),
                 "fault": None, "action": None}
        if "decode_error" in d:
            event["decode_error"] = d["decode_error"]

        fault = self._match(event)
        q = c.queues[direction]
        dst_open = c.up_open if direction == "request" else c.client_open
        copy_fault = c.copies.pop(event["correlation_id"], None) if direction == "response" \
            else None
        if fault is not None:
            event["fault"] = fault.tag()
        elif copy_fault is not None:
            event["fault"] = copy_fault.tag()

        if fault is not None and fault.kind == DROP:
            event["action"] = "dropped"
            self._log(event)
            fault.applied.append(event["seq"])
            self._shut(c, "proxy")
            return
        if not dst_open:
            event["action"] = "dropped"
            event["reason"] = "client closed" if direction == "response" else "broker closed"
            self._log(event)
            if copy_fault is None and fault is not None:
                fault.applied.append(event["seq"])
            self._after_answer(c)
            return
        if fault is not None:          # HOLD or DUPLICATE
            event["action"] = "held"
            self._log(event)
            fault.applied.append(event["seq"])
            h = Held(data, event, fault, c, direction)
            q.append(h)
            if fault.kind == HOLD and fault.delay is not None:
                self._loop.call_later(fault.delay, self._release_one, h)
            return
        if q:
            event["action"] = "queued"
            self._log(event)
            q.append(Held(data, event, None, c, direction))
            return
        event["action"] = "forwarded"
        self._log(event)
        self._write(c, direction, data)

    def _topic_ids(self, d: dict) -> None:
        """Produce v13+ and Fetch v13+ name a topic by its id only: learn ids from Metadata
        answers and write the topic's ``name`` beside each ``topic_id`` (when known)."""
        fields = d["fields"]
        if d["api_key"] == 3:
            for t in fields.get("topics") or ():
                if isinstance(t, dict) and t.get("name") and t.get("topic_id"):
                    self._topic_names[t["topic_id"]] = t["name"]
            return
        for value in fields.values():
            if isinstance(value, list):
                for t in value:
                    if isinstance(t, dict) and "topic_id" in t and "name" not in t:
                        name = self._topic_names.get(t["topic_id"])
                        if name is not None:
                            t["name"] = name

    def _match(self, event: dict) -> Fault | None:
        chosen = None
        for f in list(self._faults):
            if f.done or not f.aims_at(event):
                continue
            f.matches += 1
            if chosen is None and f.matches >= f.occurrence:
                chosen = f
        return chosen

    def _write(self, c: _Conn, direction: str, data: bytes) -> bool:
        w = c.up_w if direction == "request" else c.client_w
        if w is None or w.is_closing():
            return False
        try:
            w.write(data)
        except (ConnectionError, OSError, RuntimeError):
            return False
        return True

    def _after_answer(self, c: _Conn):
        """An orphaned upstream closes once its held requests are sent and answered."""
        if c.orphan and not c.client_open and c.up_open and not c.queues["request"] \
                and not c.pending:
            self._close_up(c, by="proxy")

    def _release(self, what) -> int:
        if isinstance(what, Held):
            return self._release_one(what)
        if isinstance(what, str):
            matching = [f for f in self._faults if f.id == what]
            if not matching:
                raise KeyError(f"no fault {what!r}")
            what = matching[0]
        n = 0
        for c in list(self._conns):
            for q in c.queues.values():
                for h in list(q):
                    if h.held and (what is None or h.fault is what):
                        n += self._release_one(h)
        return n

    def _release_one(self, h: Held) -> int:
        if not h.held:
            return 0
        q = h.conn.queues[h.direction]
        if h not in q:
            return 0
        h.held = False
        self._flush(h.conn, h.direction)
        return 1

    def _flush(self, c: _Conn, direction: str):
        q = c.queues[direction]
        while q and not q[0].held:
            h = q.popleft()
            dst_open = c.up_open if direction == "request" else c.client_open
            if not dst_open or not self._write(c, direction, h.data):
                self._again(h.event, "dropped", h.fault,
                            reason="broker closed" if direction == "request" else "client closed")
                continue
            if direction == "request" and not c.client_open:
                # the client left: this copy's answer has no one to go to and will be dropped
                if h.fault is not None:
                    c.copies[h.event["correlation_id"]] = h.fault
                action = "duplicated-copy" if h.fault is not None and \
                    h.fault.kind == DUPLICATE else "released"
                self._again(h.event, action, h.fault)
                if c.linger is None:
                    c.linger = self._loop.call_later(ORPHAN_LINGER_S, self._close_up, c, "proxy")
            else:
                self._again(h.event, "released", h.fault)
        if not q:
            if direction == "response" and not c.up_open:
                self._close_client(c)
            if direction == "request":
                self._after_answer(c)
