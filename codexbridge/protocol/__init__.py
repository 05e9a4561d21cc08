"""Sans-I/O protocol core for the codex app-server: pure decisions on plain dicts.

Nothing in this package opens a socket, a file or an event loop; `codexbridge.client`
feeds it frames and acts on what it returns.
"""
