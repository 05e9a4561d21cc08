"""What Claude Code runs: the hook process and the asyncRewake watcher.

Each is a short process Claude Code starts (the plugin's hooks.json, or the commands
`install-hook` writes: setup/claude.py), composing the rooms below it — the mailbox
(`inbox/`), handoff (`handoff/`) and the engine (`messages/`):

    process.py   what runs at Claude's stop (and SessionStart): registers the session
                 as its mailbox's listener, hands over mail (or a waiting handoff at
                 SessionStart), sends Claude's answers back, keeps the courier watching,
                 keeps the chain-of-blocks count (stdlib only: it runs at every stop)
    loop_guard.py  what a stop with mail decides — deliver, hold or allow — and the
                 block it prints (pure; imported only when there is mail)
    watcher.py   the asyncRewake watcher: waits beside an idle session and wakes it
                 when mail arrives
    seen.py      what Claude Code handed the hook (field names, peerProtocol), for
                 doctor's claude-compat rows

This package is imported by the hook on every Claude Code stop, so this file imports
nothing.
"""
