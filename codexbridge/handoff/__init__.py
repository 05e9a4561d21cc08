"""Handoff: moving the work between the live Claude Code session and the live Codex thread.

Each agent keeps its own history; a handoff carries only what the target has not seen
(a *delta*), labelled by who said it, plus the departing agent's note and what git shows.

Layout of the package, core first:

    delta.py          what crosses (a said message, one source's reading) and the bounded
                      four-section text with its un-truncated companion (pure)
    note.py           the departing agent's note split into Decisions / Next (pure)
    claude_source.py  the Claude side: which session (listener records), its transcript
                      read since a watermark, what it already has from Codex
    codex_source.py   the Codex side: a thread read since a watermark (app-server pages)
    ledger.py         the per-project state, typed records read and written in one place
                      (Agent, Checkpoint, Pending, Past): knownBy watermarks, git
                      checkpoints, the pending record's life, history; `handoff status`
    resume.py         the pending-delta file (`Parked`) a SessionStart hook consumes by
                      rename
    flow.py           the steps around every delivery: claim, gather every source and
                      git into the delta, unclaim or commit; the Outcome
    deliver.py        into the Codex thread (inject_items + a visible turn)
    to_codex.py, to_claude.py   each direction, as the CLI and both MCP roles call it
    canary.py         doctor's parser canaries over the linked sessions

The SessionStart hook imports `resume.py` (stdlib only): this file imports nothing.
"""
