"""A server written the obvious way with the official MCP Python SDK, for
hardened-mcp-audit's tests: no hardening beyond the SDK's defaults, so what the audit
finds here are those defaults' gaps (argument objects open to unknown keys,
which are accepted and dropped; numbers and strings left unbounded unless
the author bounds them).

    python weak_sdk_server.py               # stdio
    python weak_sdk_server.py --http PORT   # streamable HTTP on 127.0.0.1:PORT/mcp
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


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
