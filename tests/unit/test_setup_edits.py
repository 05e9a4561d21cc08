"""The pure edits of `codexbridge setup`: JSON keys in and out (style kept), the marked
block in config.toml in and out (bytes kept)."""

from __future__ import annotations

import json
import tomllib

import pytest

from codexbridge.errors import UsageError
from codexbridge.setup import jsonedit, tomledit
from codexbridge.setup.jsonedit import Entry

ON = Entry(("enabledPlugins", "codexbridge@codexbridge"), True)
ALLOW = Entry(("permissions", "allow"), "mcp__x", in_list=True)
ENV = Entry(("env", "CODEX_BRIDGE_BIN"), "/bin/cb")


def test_add_then_remove_gives_the_document_back() -> None:
    doc = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]},
           "permissions": {"allow": ["Bash(ls:*)"]}}
    added = jsonedit.add(doc, [ON, ALLOW, ENV], "s.json")
    assert added.doc["enabledPlugins"] == {"codexbridge@codexbridge": True}
    assert added.doc["permissions"]["allow"] == ["Bash(ls:*)", "mcp__x"]
    assert added.entries == [ON, ALLOW, ENV]
    assert ("enabledPlugins",) in added.created and ("env",) in added.created
    assert ("permissions",) not in added.created  # it was there
    back, removed = jsonedit.remove(added.doc, added.entries, added.created)
    assert back == doc and removed == [ON, ALLOW, ENV]
    assert doc["hooks"]["Stop"][0]["hooks"][0]["command"] == "x"  # never mutated


def test_present_values_are_not_ours_and_a_different_value_is_refused() -> None:
    doc = {"enabledPlugins": {"codexbridge@codexbridge": True}, "permissions": {"allow": []}}
    added = jsonedit.add(doc, [ON, ALLOW], "s.json")
    assert added.entries == [ALLOW] and added.created == []
    back, _ = jsonedit.remove(added.doc, added.entries, added.created)
    assert back == doc  # the empty list the user had stays
    with pytest.raises(UsageError, match=r'already sets "env\.CODEX_BRIDGE_BIN"'):
        jsonedit.add({"env": {"CODEX_BRIDGE_BIN": "/other"}}, [ENV], "s.json")
    with pytest.raises(UsageError, match=r'"permissions" in s\.json is not a JSON object'):
        jsonedit.add({"permissions": ["x"]}, [ALLOW], "s.json")
    with pytest.raises(UsageError, match="is not a list"):
        jsonedit.add({"permissions": {"allow": "x"}}, [ALLOW], "s.json")


def test_remove_leaves_a_value_the_user_changed_since() -> None:
    doc = jsonedit.add({}, [ENV], "s").doc
    doc["env"]["CODEX_BRIDGE_BIN"] = "/mine"
    doc["env"]["OTHER"] = "1"
    back, removed = jsonedit.remove(doc, [ENV], [("env",)])
    assert removed == [] and back == doc


@pytest.mark.parametrize("text", [
    '{\n  "a": 1,\n  "b": {\n    "c": [\n      1\n    ]\n  }\n}\n',
    '{\n    "a": 1\n}',
    '{\n\t"a": {\n\t\t"b": 2\n\t}\n}\n',
])
def test_render_keeps_the_files_style(text: str) -> None:
    style = jsonedit.style_of(text)
    assert jsonedit.render(json.loads(text), style) == text


def test_parse_refuses_what_is_not_a_settings_object() -> None:
    assert jsonedit.parse("", "f") == {} and jsonedit.parse("  \n", "f") == {}
    with pytest.raises(UsageError, match="f is not valid JSON"):
        jsonedit.parse("{", "f")
    with pytest.raises(UsageError, match="does not hold a JSON object"):
        jsonedit.parse("[]", "f")


def test_entry_round_trips_through_json() -> None:
    for e in (ON, ALLOW, ENV):
        assert Entry.from_json(json.loads(json.dumps(e.as_json()))) == e
    assert ALLOW.describe() == 'permissions.allow += "mcp__x"'


TABLE = {"command": "/bin/cb", "args": ["mcp", "--role", "codex"], "tool_timeout_sec": 360,
         "default_tools_approval_mode": "writes"}
USER = '# mine\nmodel = "o3"   # spacing kept\n\n[mcp_servers.other]\ncommand = "x"\n'


def test_block_append_replace_and_cut_keep_every_other_byte() -> None:
    block = tomledit.server_block("codexbridge", TABLE, {"CODEX_BRIDGE_HOME": "/s"})
    new, sep = tomledit.merge(USER, "codexbridge", block, tomllib.loads, "c.toml")
    assert sep is True and new.startswith(USER + "\n") and new.endswith(block)
    parsed = tomllib.loads(new)["mcp_servers"]
    assert parsed["codexbridge"]["tool_timeout_sec"] == 360
    assert parsed["codexbridge"]["env"] == {"CODEX_BRIDGE_HOME": "/s"}
    assert parsed["other"] == {"command": "x"}
    again, _ = tomledit.merge(new, "codexbridge", block, tomllib.loads, "c.toml")
    assert again == new  # idempotent
    other = tomledit.server_block("codexbridge", {**TABLE, "tool_timeout_sec": 30}, {})
    replaced, _ = tomledit.merge(new, "codexbridge", other, tomllib.loads, "c.toml")
    assert replaced == USER + "\n" + other
    assert tomledit.cut(replaced, "codexbridge", separator=True) == USER
    assert tomledit.cut(USER, "codexbridge", separator=True) == USER


def test_block_in_an_empty_file_and_one_without_a_final_newline() -> None:
    block = tomledit.server_block("cb", TABLE, {})
    new, sep = tomledit.merge("", "cb", block, tomllib.loads, "c")
    assert (new, sep) == (block, False)
    assert tomledit.cut(new, "cb", separator=False) == ""
    new, sep = tomledit.merge('a = 1', "cb", block, tomllib.loads, "c")
    assert new == 'a = 1\n\n' + block and sep is True
    assert tomledit.cut(new, "cb", True) == "a = 1\n"  # the missing newline is ours too


def test_block_refusals() -> None:
    block = tomledit.server_block("codexbridge", TABLE, {})
    by_hand = USER + '\n[mcp_servers.codexbridge]\ncommand = "old"\n'
    with pytest.raises(UsageError, match="codex mcp remove codexbridge"):
        tomledit.merge(by_hand, "codexbridge", block, tomllib.loads, "c.toml")
    with pytest.raises(UsageError, match="not valid TOML"):
        tomledit.merge("a = [\n", "codexbridge", block, tomllib.loads, "c.toml")
    inline = 'mcp_servers = { other = { command = "x" } }\n'
    with pytest.raises(UsageError, match="inline table"):
        tomledit.merge(inline, "codexbridge", block, tomllib.loads, "c.toml")
    broken = USER + "\n" + tomledit.begin_marker("codexbridge") + "\n"
    with pytest.raises(UsageError, match="no end marker"):
        tomledit.cut(broken, "codexbridge", True)


def test_toml_values_and_keys() -> None:
    assert tomledit.toml_value(["a", 1, True, 2.5]) == '["a", 1, true, 2.5]'
    assert tomledit.toml_value('q"\\') == '"q\\"\\\\"'
    text = tomledit.server_block("a.b", {"x y": 1}, {})
    assert '[mcp_servers."a.b"]' in text and '"x y" = 1' in text
    with pytest.raises(TypeError):
        tomledit.toml_value({"no": "tables"})
