"""The reverse channel: named JSONL mailboxes Codex (or anyone) writes and Claude Code reads.

Layout of the package, core first:

    names.py      what a mailbox may be called (pure)
    lines.py      one mail line: parse, encode, reject (pure)
    hook.py       what the Stop hook decides and prints (pure)
    install_hook.py  merging our hooks into a settings.json (pure) and writing it
    location.py   where the files of a mailbox live
    store.py      push / take-by-rename / recovery / de-dup / rejected lines
    peek.py       looking without consuming: peek, counts, names, rejected lines
    listeners.py  who listens as which name (`<name>.session.json`)
    chain.py      the Stop hook's count of consecutive blocks per session
    hook_main.py  the Stop hook process (stdlib only; runs at every Claude stop)
    watch.py      the asyncRewake watcher that wakes an idle session
    seen.py       what Claude Code handed the hook (field names, peerProtocol), for doctor
    service.py    what the CLI and the MCP role codex both call: names validated, the
                  one push rule, file errors as MailboxError

This package is imported by the Stop hook on every Claude Code stop, so this file
imports nothing.
"""
