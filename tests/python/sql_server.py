"""A SQL server written with the official MCP Python SDK, for
hardened-mcp-audit's tests (`tests/tests/audit_sql_server.rs`): three
read-only query tools over one SQLite file in a temporary directory. Every
gap here is on purpose; do not copy the first two.

- `query(sql)` refuses statements that start with a word that writes
  (INSERT, UPDATE, DELETE, DROP, CREATE, ALTER, REPLACE): `ATTACH DATABASE`
  and `VACUUM INTO`, which write files anywhere, pass;
- `select(statement)` refuses statements not starting with SELECT, then
  runs each `;`-separated part: `SELECT 1; VACUUM INTO ...` passes;
- `safe_select(sql)` (the control): one statement, SELECT only, on a
  read-only connection whose authorizer allows reads and nothing else;
- `count(sql)`: one SELECT statement on a read-only connection (no
  authorizer: a recursive query runs), in an `async` function that runs
  it on the event loop itself, so nothing else is answered while it
  runs (the SDK runs the plain functions above on worker threads: their
  controls).

    python sql_server.py        # stdio
"""

import json
import sqlite3
import tempfile
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("sql-python-sdk")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)
DB = Path(tempfile.mkdtemp(prefix="sql-server-")) / "data.db"
with sqlite3.connect(DB) as setup:
    setup.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    setup.execute("INSERT INTO t VALUES (1), (2)")

WRITES = ("insert", "update", "delete", "drop", "create", "alter", "replace")


def rows(cursor: sqlite3.Cursor) -> str:
    return json.dumps(cursor.fetchall())


@server.tool(annotations=READ_ONLY)
def query(sql: str) -> str:
    """Run a read-only SQL query."""
    if sql.strip().lower().startswith(WRITES):
        raise ValueError("only read queries")
    with sqlite3.connect(DB) as conn:
        return rows(conn.execute(sql))


@server.tool(annotations=READ_ONLY)
def select(statement: str) -> str:
    """Run SELECT statements."""
    if not statement.strip().lower().startswith("select"):
        raise ValueError("only SELECT")
    with sqlite3.connect(DB) as conn:
        out = "[]"
        for part in statement.split(";"):
            if part.strip():
                out = rows(conn.execute(part))
        return out


def reads_only(action, *_):
    allowed = (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION)
    return sqlite3.SQLITE_OK if action in allowed else sqlite3.SQLITE_DENY


@server.tool(annotations=READ_ONLY)
def safe_select(sql: str) -> str:
    """Run one SELECT statement."""
    if not sql.strip().lower().startswith("select") or ";" in sql:
        raise ValueError("one SELECT statement only")
    with sqlite3.connect(f"file:{DB}?mode=ro", uri=True) as conn:
        conn.set_authorizer(reads_only)
        return rows(conn.execute(sql))


@server.tool(annotations=READ_ONLY)
async def count(sql: str) -> str:
    """Count with one SELECT statement."""
    if not sql.strip().lower().startswith("select") or ";" in sql:
        raise ValueError("one SELECT statement only")
    with sqlite3.connect(f"file:{DB}?mode=ro", uri=True) as conn:
        return rows(conn.execute(sql))


if __name__ == "__main__":
    server.run()
