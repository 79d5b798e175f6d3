"""A server written the obvious way with the official MCP Python SDK, for
hardened-mcp-audit's tests: no hardening beyond the SDK's defaults, so what the audit
finds here are those defaults' gaps (argument objects open to unknown keys,
which are accepted and dropped; numbers and strings left unbounded unless
the author bounds them).

    python weak_sdk_server.py               # stdio
    python weak_sdk_server.py --http        # streamable HTTP on 127.0.0.1:<port>/mcp

Over HTTP it binds a port the kernel picks (so nothing can take it between
a choice and the bind) and prints `listening <port>` once it listens.
"""

import sys
from typing import Annotated

from pydantic import Field

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("weak-python-sdk")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)


@server.tool(annotations=READ_ONLY)
def scale(factor: float) -> float:
    """Scale a value."""
    return factor * 2


@server.tool()
def read_file(path: str) -> str:
    """Read a file (pretends to)."""
    return f"would read {len(path)} characters"


@server.tool(annotations=READ_ONLY)
def count(n: Annotated[int, Field(ge=0, le=10)]) -> int:
    """Count to n (bounded by the author, enforced by pydantic)."""
    return n


def serve_http() -> None:
    """The SDK's streamable-HTTP app on a listener bound first."""
    import asyncio
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    print(f"listening {sock.getsockname()[1]}", flush=True)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    if sys.argv[1:] == ["--http"]:
        serve_http()
    else:
        server.run()
