"""The Claude Code adapter: what codexbridge reads of a running Claude Code and writes
into it.

    files.py         what Claude Code writes that we read, typed: a transcript's lines,
                     a session's registry entry, an inbox receipt; what a transcript
                     says of a mail (`turn_of`: not yet / taken in / interrupted) —
                     stdlib only: the Stop hook reads transcripts
    inbox_socket.py  its cross-session inbox on the wire: the frame we write, the
                     receipts it sends back, the settings that refuse it
    plugin.py        is codexbridge's Claude Code plugin enabled for a project; what we
                     read of a Claude settings file (`ClaudeSettings`: plugins, env, hooks)

A sibling of `codex/` and `inbox/`: it knows nothing of delivery records or mailboxes;
the engine (`messages/live.py`, the handling markers, handoff) decides when to use it.
This file imports nothing: the Stop hook imports this package.
"""
