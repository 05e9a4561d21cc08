"""An offline stand-in for the model, and the whole offline stack built on it.

    responses.py   the mock Responses API codex talks to: its rules and SSE (pure), and
                   MockResponsesServer on 127.0.0.1
    serving.py     what both servers share: a quiet threading server, a JSON handler
    codex_home.py  a CODEX_HOME whose only model is the mock, and a clean environment
    stack.py       mock + CODEX_HOME + project + a real app-server: what the tests,
                   spikes and bench/ start

The mock Messages API (Claude Code's model), its environment, the tmux driver and the
world (README's whole set-up with both real TUIs) are test harness: tests/support/.

scripts/demo and the test-suite run the real codex binary against these, so
nothing here may need an account, the network beyond 127.0.0.1, or a non-stdlib import
(stack.py starts the app-server through `codexbridge.host`). This file imports nothing.
"""
