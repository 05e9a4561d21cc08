"""Conversations between the two agents: what crosses, where replies go, loop guards.

    envelope.py      the header every message carries, the preamble both agents read
                     (who, request line); request tokens (pure)
    frame.py         the sealed frame around words handed to a model, the quoting of
                     look-alike lines in them, who may be named a sender (pure, stdlib)
    routing.py       where a reply goes; where a send comes from (pure)
    limits.py        how much a message may carry, how many hops (the env knobs)
    handling.py      what a Claude session is handling right now (stdlib: the hook reads it)

The vocabulary under the engine (`messages/`) and the adapters (`talk/`, `inbox/`); it
knows nothing of records or their life. This file imports nothing.
"""
