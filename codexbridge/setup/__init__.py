"""`codexbridge setup claude|codex`: register codexbridge where each agent looks for it.

    where.py     scopes (--user / --project DIR), the files each one writes, the plugin
                 shipped in this package, the installed command the agents run
    claude.py    everything written into Claude Code's settings.json: `setup claude`
                 (the plugin's entries, planned against the record) and `install-hook`
                 (the mailbox hook commands merged into a project's settings)
    codex.py     `setup codex`: the role-codex MCP table in codex's config.toml
    jsonedit.py  the JSON settings editor: adding / taking out keys, written back as a
                 minimal patch of the file's text (every other byte kept) (pure)
    tomledit.py  one marked block in config.toml, added / replaced / cut (pure)
    files.py     read, back up, write atomically (one place that keeps a file's mode),
                 restore; the backups and leftovers a last --remove deletes (never
                 through a symlink)
    ledger.py    what setup put where, so --remove takes out exactly that; a report's
                 changes carried out and recorded (the record deleted once empty)
    mailbox.py   the mailbox a plugin-run Claude session listens on (per project, per
                 session when the project's name is held by another live session):
                 decided, claimed and read back — the one reader of a claim

Whether the plugin is enabled for a project is `claude/plugin.py` (doctor and
handoff ask it; neither may reach into a front end); the /bin/sh launcher codex starts
our MCP server through is `host/codex_mcp.py` (doctor reads the command back through it).

The Claude Code plugin itself (hooks, MCP server, skill, commands) is in
`codexbridge/claude_plugin/`.
"""
