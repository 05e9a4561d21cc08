"""Handoff: moving the work between the live Claude Code session and the live Codex thread.

Each agent keeps its own history; a handoff carries only what the target has not seen
(a *delta*), labelled by who said it, plus the departing agent's note and what git shows.

Layout of the package, core first:

    messages.py       what crosses: one said message, one source's reading (pure)
    claude_source.py  a Claude Code transcript read since a watermark (pure parse + file)
    codex_source.py   a Codex thread read since a watermark (pure parse + app-server pages)
    note.py           the departing agent's note split into Decisions / Next (pure)
    work.py           git since the recorded checkpoint (runs git; the rendering is pure)
    delta.py          the bounded four-section delta and its un-truncated companion (pure)
    paths.py          where state, delta files and pending deltas live (stdlib only)
    ledger.py         the per-project state: knownBy watermarks, checkpoints, pending, history
    resume.py         the pending-delta file a SessionStart hook consumes by rename
    sessions.py       which Claude session (listener records) and whether it runs
    deliver.py        into the Codex thread (inject_items + a visible turn) or a mailbox
    received.py       what a Claude session already has from a thread (its mail, its words)
    gather.py         every source behind the target, read and built into one delta
    flow.py           settle / claim / commit around a delivery, and the Outcome
    to_codex.py, to_claude.py, status.py   what the CLI and both MCP roles call
    canary.py         doctor's parser canaries over the linked sessions

The SessionStart hook imports `resume.py` (and `paths.py`): this file imports nothing.
"""
