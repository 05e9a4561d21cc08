"""The engine: a message's life, from its creation to its end, in both directions.

One road each, which every front end (CLI, MCP, the hooks, handoff) calls:

    to_codex.py      send (a receipt now, the courier follows the turn), blocking say,
                     status — a request or notice to a Codex thread
    to_claude.py     a request or plain mail to a Claude Code session's mailbox: names
                     validated, the one push rule, the hop spent, the record
    handed.py        what a Claude session was handed: the handling marker, its requests
                     watched (cheap: the Stop hook calls it for every mail it delivers)
    answers.py       Claude's answer to a Codex request, sent back at the stop that
                     answers it
    live.py          mail pushed into the running Claude session's cross-session inbox,
                     confirmed from its transcript, or put back for the Stop hook
    courier.py       the one resident process per state home that carries every
                     delivery to its end, both ways (`python -m codexbridge.messages.courier`)

and what they share:

    records.py       the delivery records on disk, one type per road (`ToCodex`,
                     `ToClaude`) over what every message has: states, times, the
                     text, the reach; every state change of a delivery is made here
    conversations.py which conversation a request belongs to, and its hop budget
    timeline.py      one conversation as events across both agents, read from the
                     records above (`codexbridge log`)
    courier_link.py  reaching the courier: hand it ids, start it when none answers

and what every message carries (pure or stdlib: the Stop hook reads some of it):

    envelope.py      the header every message carries, the preamble both agents read
                     (who, request line); request tokens
    frame.py         the sealed frame around words handed to a model, the quoting of
                     look-alike lines in them, who may be named a sender
    routing.py       where a reply goes; where a send comes from
    listeners.py     who listens as which mailbox (`<name>.session.json`, the table a
                     reply is routed by) and the hook commands that make a session listen
    render.py        the text Claude is handed for a batch of mail; big mail as a
                     preview and a private file
    handling.py      what a Claude session is handling right now

Below it, the adapters (siblings that never import each other): `codex/` (codex's
app-server) and `inbox/` (the JSONL mailbox store); under them
`host/` (this machine; the size and hop limits: `host/limits.py`; mailbox names
and where mailboxes live: `host/mailboxes.py`). This file
imports nothing: the Stop hook imports this package on every stop.
"""
