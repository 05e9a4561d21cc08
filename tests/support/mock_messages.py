"""The mock Messages API for the real Claude Code lives in the package now
(`codexbridge/mock/messages.py`), so the bench uses it too
without importing the tests; the tests import it from here as before."""

from codexbridge.mock.messages import (
    FEEDBACK_MARK,
    MockMessages,
    OnRequest,
    RecordedRequest,
    Reply,
    Responder,
    Text,
    ToolUse,
    conversation,
    default_reply,
    feedback_of,
    parse_call_tool,
    sse_events,
)

__all__ = ["FEEDBACK_MARK", "MockMessages", "OnRequest", "RecordedRequest", "Reply",
           "Responder", "Text", "ToolUse", "conversation", "default_reply", "feedback_of",
           "parse_call_tool", "sse_events"]
