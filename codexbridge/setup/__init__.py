"""`codexbridge setup claude|codex`: register codexbridge where each agent looks for it.

    where.py     scopes (--user / --project DIR), the files each one writes, the plugin
                 shipped in this package, the installed command the agents run
    claude.py    what Claude Code's settings need to load the plugin (pure)
    codex.py     the role-codex MCP table for codex's config.toml (pure)
    jsonedit.py  adding / taking out keys of a JSON settings file, its style kept (pure)
    tomledit.py  one marked block in config.toml, added / replaced / cut (pure)
    ledger.py    what setup put where, so --remove takes out exactly that
    files.py     read, back up, write atomically, restore
    run.py       planning a settings file's change and committing a whole report
    steps.py     setup_claude / setup_codex end to end
    mailbox.py   the mailbox a plugin-run Claude session listens on (per project, per
                 session when the project's name is held by another live session)

Whether the plugin is enabled for a project is `host/claude_plugin.py` (doctor and
handoff ask it; neither may reach into a front end).

The Claude Code plugin itself (hooks, MCP server, skill, commands) is in
`codexbridge/claude_plugin/`.
"""
