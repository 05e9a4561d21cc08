"""The mailbox store adapter: named JSONL mailboxes Codex (or anyone) writes and Claude
Code reads.

Layout of the package, core first:

    location.py   a mailbox: what it may be called, where each of its files lives, and
                  the cheap "is anything there?" looks (stdlib only: the Stop hook's
                  fast path)
    clock.py      the timestamps mail and records carry (pure)
    lines.py      one mail line: parse, encode, reject (pure)
    store.py      where mail is written and taken: push / take-by-rename / recovery /
                  de-dup / rejected lines
    peek.py       looking without consuming: peek, counts, names, rejected lines
    listeners.py  the hook commands that make a session listen (built and recognised),
                  and who listens as which name (`<name>.session.json`)

It knows nothing of delivery records: the engine's road to Claude
(`messages/to_claude.py`: the push rule, the hop, the record; `messages/live.py`: the
live push into a running session) writes and takes through it.

The processes Claude Code runs (the Stop hook and its loop guard, the watcher) are
`hooks/`; what writes the hooks into Claude's settings is `setup/claude.py`.

This package is imported by the Stop hook on every Claude Code stop, so this file
imports nothing.
"""
