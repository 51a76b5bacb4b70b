"""The web side of ``kafka-mc explore``: a Starlette application served by uvicorn.

One page (``static/index.html``, its script and style ship in the package: no CDN, no network at
run time) and a JSON API over ``kafka_mc.explorers.web.session``:

* ``GET /api/sessions``: the configurations served (the one given, and any opened from a trace);
* ``GET /api/state?s=KEY&path=0.3.1[&fp=HEX]``: the state at the end of a path (``fp``: the
  fingerprint the link was made for; a mismatch is a stale link, 409);
* ``POST /api/trace?s=KEY[&adopt=1]``: an ITF trace (the request body, at most ``max_upload``
  bytes) as a path; a trace of another configuration is a 409 unless ``adopt``;
* ``GET /api/trace``: the trace given with ``--trace`` (404 without one);
* ``GET /api/download?s=KEY&path=...``: the path as an ITF trace for ``kafka-mc replay``.

Bad input is a 4xx with ``{"error": one line}``; any other failure a 500 with one line too,
never a stack trace in the answer.
"""
from __future__ import annotations

import socket
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kafka_mc.explorers.web.session import ExploreError, Explorer, parse_path

STATIC = Path(__file__).resolve().parent / "static"
MAX_UPLOAD = 8 * 2**20


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n % 2**20 == 0 else f"{n:,} bytes"


def create_app(explorer: Explorer, max_upload: int = MAX_UPLOAD) -> Starlette:
    too_large = f"the trace is larger than the upload limit ({_size(max_upload)})"

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    def sessions(request: Request) -> Response:
        return JSONResponse({"sessions": explorer.sessions_json()})

    def state(request: Request) -> Response:
        q = request.query_params
        return JSONResponse(explorer.state(q.get("s"), parse_path(q.get("path")), q.get("fp")))

    def preloaded(request: Request) -> Response:
        if explorer.preloaded is None:
            raise ExploreError(404, "no trace was given with --trace")
        return JSONResponse(explorer.preloaded)

    async def upload(request: Request) -> Response:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_upload:
            raise ExploreError(413, too_large)
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > max_upload:
                    raise ExploreError(413, too_large)
        except ClientDisconnect:   # the client left mid-upload, or sent a body the server could
            # not parse (a malformed chunked encoding): nobody to answer; not a server error
            # (raised on, uvicorn printed it as an ASGI traceback)
            return Response(status_code=400)
        q = request.query_params
        return JSONResponse(explorer.open_trace(bytes(body), q.get("s"),
                                                adopt=q.get("adopt") in ("1", "true"),
                                                name=q.get("name")))

    def download(request: Request) -> Response:
        q = request.query_params
        name, text = explorer.download(q.get("s"), parse_path(q.get("path")))
        return Response(text, media_type="application/json",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    async def bad_input(request: Request, e: ExploreError) -> Response:
        return JSONResponse({"error": str(e), **e.extra}, status_code=e.status)

    async def failure(request: Request, e: Exception) -> Response:
        return JSONResponse({"error": f"internal error: {type(e).__name__}: "
                                      f"{' '.join(str(e).splitlines())}"}, status_code=500)

    routes = [Route("/", index), Route("/api/sessions", sessions), Route("/api/state", state),
              Route("/api/trace", preloaded, methods=["GET"]),
              Route("/api/trace", upload, methods=["POST"]),
              Route("/api/download", download),
              Mount("/static", StaticFiles(directory=STATIC), name="static")]
    return Starlette(routes=routes, exception_handlers={ExploreError: bad_input,
                                                        Exception: failure})


LOOPBACK = "127.0.0.1"


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (``port`` 0: any free port); ``OSError`` if it cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(64)
    return sock


def serve(app: Starlette, sock: socket.socket) -> None:
    """Serve until interrupted (Ctrl-C, SIGTERM)."""
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
