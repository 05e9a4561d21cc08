"""The `mcp` SDK's own server (MCPServer, as codexbridge uses it) with one tool: what
does the SDK negotiate with the pinned Claude Code? Run behind tap.py."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"ECHO:{text}"


if __name__ == "__main__":
    server.run("stdio")
