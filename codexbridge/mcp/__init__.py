"""The MCP stdio servers: `codexbridge mcp --role claude|codex`.

Each role is one process started by its agent (Claude Code or Codex) over stdio, on
the official `mcp` SDK. Only `codexbridge mcp` imports this package, so no other
command pays for the SDK (nor does the warm start's launcher, warm.py).

    settings.py     the environment knobs, checked at start-up (pure)
    results.py      result envelopes and the documented error codes (pure)
    artifacts.py    large outputs on disk, opaque ids, signed cursors, TTL, byte cap
    runtime.py      what the tools of one process share
    tooling.py      outcome → CallToolResult, annotations
    send.py         codex_message_send: resolve, say (codex's queue), deliver;
                    wait=false receipts, codex_delivery_status
    tools_shared.py bridge_status, bridge_output_read
    tools_claude.py codex_threads_list, codex_thread_read, codex_message_send,
                    codex_delivery_status
    tools_codex.py  claude_mailboxes_list, claude_mailbox_peek, claude_message_send
    server.py       build_server(settings) for a role
    stdio.py        serving one session on stdin/stdout (cold, or forked warm)
    http.py         `--http HOST:PORT`: the same server over streamable HTTP, behind a
                    bearer token (Codex on another machine)
    warm.py         the warm start: a stdio start is forked from a resident server that
                    has the SDK imported (the launcher runs before click)
"""
