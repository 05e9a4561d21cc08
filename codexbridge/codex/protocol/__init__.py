"""Sans-I/O protocol core for the codex app-server: pure decisions on what arrives.

    envelopes.py   classifying what arrives on the wire; building what we send
    enums.py       our enums: approval policy, approval outcome, turn outcome
    approvals.py   what to answer every server request, by policy; parsing the policy
    turn.py        which events belong to one turn (buffered until its id is known)
    threads.py     which thread a person means; what a thread's status says
    schema.py      checking a message against a codex schema (jsonschema), by path
    wire.py        reading tolerantly: the one reader of generated/results.py (each
                   record lists its fields as data) and the readers it calls
    shapes.py      what a schema bundle says where codexbridge looks (the doctor's judge
                   and scripts/gen-protocol both read a bundle with it)
    generated/     from schemas/: method constants and what they carry, enums, the
                   results and notifications we read (results.py), typed calls
                   (calls.py) and what codexbridge uses, with the pinned schema there
                   (uses.py)

Nothing in this package opens a socket, a file or an event loop, or reads the
environment (tests/unit/test_layout.py checks it): `codexbridge.codex` feeds it frames
and acts on what it returns.
"""
