"""The codex app-server adapter: talking into a live thread of a codex app-server.

    transport.py  the seam under the client: a WebSocket (tests: an in-memory pair)
    client.py     AppServerClient: requests, responses, events over one transport
    endpoint.py   which app-server to talk to (--url, CODEX_BRIDGE_URL, bridge.json,
                  codex's own daemon)
    threads.py    list, find, join a thread; wait until it is idle
    turn.py       say(): one turn, followed to the end, approvals answered by policy
    history.py    a thread's turns and items, and how they read as a transcript
    follow.py, outcome.py, recover.py   following a turn another process queued,
                  how it ended, finding a lost reply
    rollout.py    what a turn cost, read back from codex's rollout (a follower that
                  joined the turn late)
    protocol/     the sans-I/O core under all of it: what arrives, what to answer,
                  the generated records and calls (its own __init__ lists them)

It knows nothing of delivery records: the engine (`messages/to_codex.py`, the courier)
drives it, and `talk read`/`steer`/`interrupt` call it directly. This file imports
nothing: `talk say` pays only for what it uses.
"""
