"""The MCP stdio servers: `codexbridge mcp --role claude|codex`.

Each role is one process started by its agent (Claude Code or Codex) over stdio, on
the official `mcp` SDK. Only `codexbridge mcp` imports this package, so no other
command pays for the SDK (nor does a quick start, startup_cache.py, until it must).

The tools, by the prefix of their names:

    codex_tools.py   codex_* (role claude, talking into a live Codex thread):
                     codex_threads_list, codex_thread_read, codex_message_send
                     (resolve, say through codex's queue, deliver; wait=false receipts),
                     codex_delivery_status
    claude_tools.py  claude_* (role codex, leaving mail for Claude Code):
                     claude_mailboxes_list, claude_mailbox_peek, claude_message_send
    bridge_tools.py  bridge_* (every role): bridge_status, bridge_output_read,
                     bridge_handoff (in the role's direction)
    tasks.py         codex_message_send (wait=true) as an MCP task, to a client that takes
                     one (Claude Code's interactive session): tasks/get, tasks/cancel

What a tool body gets, and what it gives back:

    settings.py      the environment knobs, checked at start-up (pure)
    runtime.py       what a tool body gets: settings, the app-server connection, the
                     mailbox directory, the artifact store, the calling Codex thread
    results.py       Outcome → CallToolResult, the result envelopes and error codes
    artifacts.py     large outputs on disk, opaque ids, signed cursors, TTL, byte cap

Serving:

    server.py        build_server(settings): each role's catalogue (tools, in order, with
                     their annotations), instructions, the structured SDK errors
    stdio.py         serving one session on stdin/stdout (cold, or handed over)
    http.py          `--http HOST:PORT`: the same server over streamable HTTP, behind a
                     bearer token (Codex on another machine)
    startup_cache.py the quick start: a stdio start's `initialize` and `tools/list`
                     answered from a record, the SDK imported behind them (before click)
"""
