"""What runs on this machine: processes, binaries, paths, environments.

    private.py      the state home, private directories and atomic 0600 writes (stdlib os)
    locking.py      the cross-process file lock every mailbox and record writer shares
    paths.py        the state dir as a Path, bridge.json (BridgeRecord)
    runtime.py      where our own local sockets live (a short private directory)
    binaries.py     finding the pinned codex and claude; the supported versions and where
                    a version stands against them
    appserver.py    starting and stopping a `codex app-server` child
    serve.py        `codexbridge serve`: the supervised shared app-server
    tls_relay.py    wss:// in front of codex's loopback ws:// (`serve --tls-cert`)
    daemon.py       codex's own managed daemon: its socket, is it up, the TUI line
    envbaseline.py  the environment an app-server child may see
    procs.py        is a process still there
    loopback.py     is a host / URL this machine's loopback
    jsonfile.py     reading JSON someone else may be writing (or may have damaged)
    tomlfile.py     reading codex's config.toml (tomllib)
    text.py         text that can always be written (lone surrogates replaced)
    limits.py       how much a message may carry, how many hops (the env knobs)
    mailboxes.py    what a mailbox may be called, the default one, where mailboxes live
    clock.py        the timestamps mail and records carry (claude-codex-bridge's format)

This file imports nothing: the Stop hook reaches `private.py` through it.
"""
