"""Conversations between the two agents: what crosses, where replies go, loop guards.

    envelope.py      the header every message carries, the preamble both agents read
                     (who, request line); request tokens (pure)
    frame.py         the sealed frame around words handed to a model, the quoting of
                     look-alike lines in them, who may be named a sender (pure, stdlib)
    routing.py       where a reply goes; where a send comes from (pure)
    limits.py        how much a message may carry, how many hops (the env knobs)
    records.py       delivery records on disk: states, times, replies, TTL; Claude's
                     answer to a Codex request, recorded as a delivery
    budget.py        which conversation a request belongs to, and its hop budget on disk
    handling.py      what a Claude session is handling right now (stdlib: the hook reads it)
    courier_link.py  reaching the courier that carries every delivery (stdlib)

Both services use them: `talk/deliveries.py` (Claude → Codex) and `inbox/service.py`
(Codex → Claude). This file imports nothing.
"""
