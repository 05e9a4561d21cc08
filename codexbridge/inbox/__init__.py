"""The reverse channel: named JSONL mailboxes Codex (or anyone) writes and Claude Code reads.

Layout of the package, core first:

    names.py      what a mailbox may be called (pure)
    lines.py      one mail line: parse, encode, reject (pure)
    clock.py      the timestamps mail and records carry (pure)
    hook.py       what a stop decides and prints (pure)
    install_hook.py  merging our hooks into a settings.json (pure) and writing it
    location.py   where the files of a mailbox live
    store.py      push / take-by-rename / recovery / de-dup / rejected lines
    spill.py      big mail reaches Claude as a preview and a private file
    peek.py       looking without consuming: peek, counts, names, rejected lines
    probe.py      is there anything to deliver? (cheap: before any heavy import)
    listeners.py  who listens as which name (`<name>.session.json`)
    chain.py      the Stop hook's count of consecutive blocks per session
    live.py       live delivery into a running session's cross-session inbox
    live_rules.py what live delivery may send when (pure)
    replies.py    a request put in front of Claude is noted as handled; at its stop,
                  Claude's answer goes back as a reply delivery
    service.py    what the CLI and the MCP role codex both call: names validated, the
                  one push rule, file errors as MailboxError

The processes Claude Code runs (the hook, the watcher) are `hooks/`.

This package is imported by the Stop hook on every Claude Code stop, so this file
imports nothing.
"""
