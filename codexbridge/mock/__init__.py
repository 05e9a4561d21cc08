"""An offline stand-in for the model, and the whole offline stack built on it.

    responses.py   the mock Responses API codex talks to: its rules and SSE (pure), and
                   MockResponsesServer on 127.0.0.1
    messages.py    the mock Messages API Claude Code talks to: its rules and SSE (pure),
                   MockMessages on 127.0.0.1, and `peer_answer` (a Claude that answers)
    serving.py     what both servers share: a quiet threading server, a JSON handler
    codex_home.py  a CODEX_HOME whose only model is the mock, and a clean environment
    stack.py       mock + CODEX_HOME + project + a real app-server: what the tests,
                   spikes and bench/ start
    claude_env.py  the environment that keeps Claude Code offline
    world.py       README's whole set-up in a private HOME, both real TUIs in tmux:
                   scripts/demo, the journeys, bench_journey

scripts/demo and the test-suite run the real codex binary against these, so
nothing here may need an account, the network beyond 127.0.0.1, or a non-stdlib import
(stack.py starts the app-server through `codexbridge.host`). This file imports nothing.
"""
