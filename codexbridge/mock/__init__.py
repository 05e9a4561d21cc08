"""An offline stand-in for the model: a loopback Responses API plus a CODEX_HOME that uses it.

`codexbridge demo` and the test-suite run the real codex binary against these, so
nothing here may need an account, the network beyond 127.0.0.1, or a non-stdlib import.
"""

from __future__ import annotations

from .codex_home import isolated_env, mock_env, write_codex_home
from .responses_api import MockRequest, MockResponsesServer, big_text

__all__ = [
    "MockRequest",
    "MockResponsesServer",
    "big_text",
    "isolated_env",
    "mock_env",
    "write_codex_home",
]
