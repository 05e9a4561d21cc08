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


HAND = ('{\n'
        '    "theme":   "dark",\n'
        '    "permissions": { "allow": ["Bash(ls:*)", "Read"], "deny": [] },\n'
        '    "env": {"GREETING": "h\\u00e9llo"},\n'
        '    "model" : "opus"\n'
        '}\n')


def test_patch_splices_our_members_into_a_hand_formatted_file() -> None:
    doc = jsonedit.parse(HAND, "s.json")
    added = jsonedit.add(doc, [ON, ALLOW, ENV], "s.json")
    written = jsonedit.patch(HAND, added.doc)
    # Only our members are new: the aligned spacing, the compact arrays, the escape and
    # the key order stay; new members follow the file (4 spaces, ": ", \u escapes).
    assert written == ('{\n'
                       '    "theme":   "dark",\n'
                       '    "permissions": { "allow": ["Bash(ls:*)", "Read", "mcp__x"], '
                       '"deny": [] },\n'
                       '    "env": {"GREETING": "h\\u00e9llo", "CODEX_BRIDGE_BIN": "/bin/cb"},\n'
                       '    "model" : "opus",\n'
                       '    "enabledPlugins": {\n'
                       '        "codexbridge@codexbridge": true\n'
                       '    }\n'
                       '}\n')
    back, _ = jsonedit.remove(added.doc, added.entries, added.created)
    assert jsonedit.patch(written, back) == HAND


def test_patch_takes_a_members_comma_with_it() -> None:
    text = '{"a": 1 , "b": [1,2,3],\n "c": {"d": true}}'
    assert jsonedit.patch(text, {"b": [1, 2, 3], "c": {"d": True}}) == \
        '{"b": [1,2,3],\n "c": {"d": true}}'
    assert jsonedit.patch(text, {"a": 1, "c": {"d": True}}) == '{"a": 1 , "c": {"d": true}}'
    assert jsonedit.patch(text, {"a": 1, "b": [1, 2, 3]}) == '{"a": 1 , "b": [1,2,3]}'
    assert jsonedit.patch(text, {"a": 1, "b": [1, 3], "c": {}}) == \
        '{"a": 1 , "b": [1,3],\n "c": {}}'
    assert jsonedit.patch(text, {}) == "{}"


def test_patch_of_an_empty_file_or_object_writes_json_dumps_style() -> None:
    assert jsonedit.patch("", {"a": [1]}) == '{\n  "a": [\n    1\n  ]\n}\n'
    assert jsonedit.patch("{}", {"a": 1}) == '{\n  "a": 1\n}'
    # a file written on one line stays on one line
    assert jsonedit.patch('{"x": {}}\n', {"x": {"y": [1]}}) == '{"x": {"y": [1]}}\n'
    # an empty object taking no member back comes back as `{}` (its inner spaces are
    # not known any more: the one byte `--remove` cannot give back)
    assert jsonedit.patch(jsonedit.patch('{"x": { }}', {"x": {"y": 1}}), {"x": {}}) \
        == '{"x": {}}'


def test_patch_of_a_repeated_key_changes_the_copy_json_reads() -> None:
    text = '{"a": 1, "a": 2, "b": 3}'
    assert jsonedit.patch(text, {"a": 5, "b": 3}) == '{"a": 1, "a": 5, "b": 3}'
    assert jsonedit.patch(text, {"b": 3}) == '{"b": 3}'  # every copy goes


def test_patch_leaves_what_it_does_not_reach_unread() -> None:
    deep = "[" * 900 + "]" * 900
    text = '{"deep": ' + deep + ', "n": NaN, "s": "\\\\"}'
    new = json.loads(text)
    new["ours"] = True
    written = jsonedit.patch(text, new)
    assert written == text[:-1] + ', "ours": true}'
    # a change inside a list item edits the item, beside an insertion
    text = '[ {"k": 1} ,\n  2]'
    assert jsonedit.patch('{"l": ' + text + "}", {"l": [{"k": 1, "j": 0}, 0, 2]}) == \
        '{"l": [ {"k": 1, "j": 0} ,\n  0 ,\n  2]}'  # the list's own separator


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


def test_an_item_added_before_a_compact_list_and_taken_out_gives_the_bytes_back() -> None:
    # Found by hypothesis (tests/prop/test_jsonedit_patch.py): the small item added in
    # front was paired, on the way back, with the compact list it shares one value with,
    # and that list was written anew in another layout.
    text = '{\n  "a": [\n    [null,false,true],\n    null\n  ]\n}\n'
    added = jsonedit.patch(text, {"a": [[None], [[], None, False, True], None]})
    assert "[[],null,false,true]" in added  # the old list edited in place, its layout kept
    assert jsonedit.patch(added, json.loads(text)) == text
