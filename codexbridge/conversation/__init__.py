"""Conversations between the two agents: what crosses, where replies go, loop guards.

    envelope.py  the header every message carries; request tokens (pure)
    routing.py   where a reply goes; where a send comes from (pure)
    records.py   delivery records on disk: states, times, replies, TTL
    budget.py    conversations and their hop budget, on disk under a lock
    handling.py  what a Claude session is handling right now (stdlib: the hook reads it)

Both services use them: `talk/send.py` (Claude → Codex) and `inbox/service.py`
(Codex → Claude). This file imports nothing.
"""
