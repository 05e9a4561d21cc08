"""The mailbox store adapter: named JSONL mailboxes Codex (or anyone) writes and Claude
Code reads.

Layout of the package, core first:

    location.py   where each of a mailbox's files lives, and the cheap "is anything
                  there?" looks (stdlib only: the Stop hook's fast path)
    lines.py      one mail line: parse, encode, reject (pure)
    store.py      where mail is written and taken: push / take-by-rename / recovery /
                  de-dup / rejected lines
    peek.py       looking without consuming: peek, counts, names, rejected lines

What a mailbox may be called and the directory they live in are `host/mailboxes.py`;
who listens as which name is the engine's routing table (`messages/listeners.py`).
It knows nothing of delivery records: the engine's road to Claude
(`messages/to_claude.py`: the push rule, the hop, the record; `messages/live.py`: the
live push into a running session) writes and takes through it.

The processes Claude Code runs (the Stop hook and its loop guard, the watcher) are
`hooks/`; what writes the hooks into Claude's settings is `setup/claude.py`.

This package is imported by the Stop hook on every Claude Code stop, so this file
imports nothing.
"""
