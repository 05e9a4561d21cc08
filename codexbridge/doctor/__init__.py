"""`codexbridge doctor`: what is set up, what is running, and what will get in the way.

Each file below holds one side's facts (frozen dataclasses), how they are gathered (the
I/O: run a binary, read a file, ask the app-server) and the rows that judge them:

    binaries.py     codex, Claude Code: found where, which version, `--listen`
                    schemes; whether Codex's own shell finds `codexbridge`
    codex_side.py   the app-server in force (serve's bridge.json, codex's own daemon, which
                    one talk uses, the TUI attach line), its threads, the approval
                    diverters in each CODEX_HOME, the protocol check, `--deep`
    claude_side.py  whether this Claude Code still offers what codexbridge relies on, the
                    project's hooks and settings, the plugin, mailboxes, the block chain
    records.py      the conversation's records: the state home, deliveries in flight,
                    handoff's parser canaries
    parse.py        reading versions, `--help`, config.toml / hooks.json, settings.json
    compat.py       the protocol judge: where codexbridge looks (codex/protocol/generated/
                    uses.py), the pinned schema against the installed codex's, and our
                    approval answers against its schema (pure but for reading a bundle)
    report.py       the row type and its Status, the verdict (any FAIL → exit 1), the text
    diagnose.py     every check in order; a check that raises becomes a WARN row
    offline_stack.py  `--deep`'s one real turn: a CODEX_HOME whose only model is the
                    mock, a private app-server on it
    mock_model.py   that mock: a Responses API on 127.0.0.1 that echoes the user's words
                    (the tests' scripted mock, tests/support/mock_codex.py, builds on it)

Each file doctor looks at is read by its one typed reader (bridge.json: host/paths.py
`BridgeRecord`; listeners: messages/listeners.py `Listener`; deliveries: messages/records.py
`DeliveryStore`; the app-server's answers: codex/protocol/generated/results.py); a shape only
doctor reads is a dataclass here, read by the shared `jsontypes.read_fields`.

The doctor only reads. It never changes a setting, and it never prints a hook command or
a config value it was not asked to look at (those may hold secrets). Nothing here prints:
the CLI (cli/doctor_cmd.py) renders the rows.
"""
