"""`codexbridge doctor`: what is set up, what is running, and what will get in the way.

    parse.py     reading versions, `--help`, config.toml / hooks.json, settings.json (pure)
    rows.py      facts (plain dicts) → check rows: OK / WARN / FAIL / INFO (pure)
    rows_daemon.py  codex's own daemon, which server is used, the TUI attach line, the
                 Claude Code plugin (pure)
    report.py    the row type, the verdict (any FAIL → exit 1) and the text layout (pure)
    gather.py    the I/O: run the binaries, read the files, ask the app-server
    diagnose.py  every check in order; a check that raises becomes a WARN row

The doctor only reads. It never changes a setting, and it never prints a hook command or
a config value it was not asked to look at (those may hold secrets).
"""
