"""The official Python SDK's client (PyPI package `mcp`) against a demo server over stdio:
a tool call whose frame is longer than the server's frame cap (1 MiB) gets its error, with
its id, instead of waiting for an answer that never comes; the session goes on.

    python3 tests/interop/stdio_oversized.py SERVER [ARGS...]

Exits 0 when every check passed; prints what failed otherwise. Run by the Rust test
`tests/tests/python_client.rs`.
"""

import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

# Hang protection only: the answer comes at once; a client that waits this long for it
# is the failure this script checks for.
PATIENCE = 60.0


async def main(command: str, args: list[str]) -> None:
    server = StdioServerParameters(command=command, args=args)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=PATIENCE) as session:
            await session.initialize()
            small = await session.call_tool("echo", {"text": "before"})
            assert not small.is_error, small
            big = "x" * (1 << 20)
            try:
                result = await session.call_tool("echo", {"text": big})
            except MCPError as e:
                code = e.error.code
                assert code == -32600, f"expected -32600, got {code}: {e.error.message}"
                assert "frame longer than" in e.error.message, e.error.message
                print(f"over the cap: {code} {e.error.message}")
            else:
                raise AssertionError(f"a frame over the cap was served: {str(result)[:200]}")
            after = await session.call_tool("echo", {"text": "after"})
            assert not after.is_error, after
            text = after.content[0].text
            assert "after" in text, text
            print("the session goes on:", text)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:])
