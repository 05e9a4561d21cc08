"""Settings files a person wrote: Claude's settings.json, codex's config.toml and
hooks.json, and setup's own ledger.

`setup` edits the first two: whatever they hold, it either refuses with a UsageError that
names the file (nothing changed) or makes an edit that `--remove` takes back exactly.
`doctor` only reads them: whatever they hold, it reports, never raises.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from codexbridge.doctor import claude_side, codex_side, parse
from codexbridge.errors import UsageError
from codexbridge.host.tomlfile import load_toml
from codexbridge.setup import claude, jsonedit, ledger, tomledit

from .strategies import deep_json, json_values, junk_bytes, junk_text, nasty_text

# --- Claude's settings.json ----------------------------------------------------------

ENTRIES = (claude.user_entries("/opt/market", "/usr/bin/codexbridge")
           + claude.scope_entries())
our_keys = st.sampled_from(["env", "enabledPlugins", "permissions", "allow",
                            "extraKnownMarketplaces", claude.PLUGIN_ID, claude.MARKETPLACE,
                            claude.BIN_ENV, "hooks"])
settings_values: st.SearchStrategy[Any] = st.recursive(
    json_values, lambda inner: st.dictionaries(our_keys | st.text(max_size=5), inner,
                                               max_size=4)
    | st.lists(inner | st.sampled_from([e.value for e in ENTRIES if e.in_list]),
               max_size=3), max_leaves=12)
settings_docs = st.dictionaries(our_keys | st.text(max_size=5), settings_values, max_size=5)


@given(junk_text | deep_json() | st.builds(json.dumps, settings_docs))
@example("[" * 5000 + "]" * 5000)  # was: RecursionError
def test_settings_json_is_an_object_or_a_usage_error(text: str) -> None:
    try:
        doc = jsonedit.parse(text, "settings.json")
    except UsageError as exc:
        assert "settings.json" in str(exc) and "nothing was changed" in str(exc)
        return
    assert isinstance(doc, dict)


@given(settings_docs, st.sampled_from([None, 2, 4, "\t"]), st.booleans())
def test_setup_edit_is_taken_back_exactly(doc: dict[str, Any], indent: int | str | None,
                                          newline: bool) -> None:
    text = json.dumps(doc, indent=indent) + ("\n" if newline else "")
    parsed = jsonedit.parse(text, "settings.json")
    assert parsed == doc
    try:
        added = jsonedit.add(parsed, ENTRIES, "settings.json")
    except UsageError as exc:
        assert "nothing was changed" in str(exc)
        return
    # The written file reads back as what was planned, and taking our entries out
    # again gives the file's bytes back (its layout was never re-rendered).
    written = jsonedit.patch(text, added.doc)
    assert jsonedit.parse(written, "settings.json") == added.doc
    assert written.endswith("\n") == (newline or not text.strip())
    back, removed = jsonedit.remove(added.doc, added.entries, added.created)
    assert back == doc
    assert removed == added.entries
    if text.strip():
        assert jsonedit.patch(written, back) == text


# --- codex's config.toml ----------------------------------------------------------------

keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1,
               max_size=6) | st.sampled_from(["mcp_servers", "codexbridge", "profile"])
scalars = (st.booleans() | st.integers(-2**63, 2**63 - 1) | nasty_text
           | st.floats(allow_nan=False, allow_infinity=False))
toml_values = scalars | st.lists(scalars, max_size=3)
tables = st.dictionaries(keys, toml_values, max_size=3)


def _clash(config: tuple[Any, ...]) -> bool:
    """The drawn config defines one key twice (a value and a table of the same name):
    no writer can make that a valid file. Decided from the draw, not from the text."""
    top, named = config[0], config[1]
    headers = {n.split(".")[0] if n == "mcp_servers.other" else n for n in named}
    nested = "mcp_servers.other" in named and "other" in named.get("mcp_servers", {})
    return bool(set(top) & headers) or nested


configs = st.tuples(st.dictionaries(keys, toml_values, max_size=3),
                    st.dictionaries(keys | st.just("mcp_servers.other"), tables, max_size=3),
                    st.sampled_from(["", "# a comment\n", "\n\n"]),
                    st.booleans()).filter(lambda c: not _clash(c))
# Every string a str can hold in a file: all code points, controls included, but no lone
# surrogates (no UTF-8 text holds one).
any_text = st.text(st.characters(exclude_categories=["Cs"]))


@given(any_text)
@example("\x7f")  # was: written as is (JSON's escaping), which TOML forbids
@example("\x00\x1f\t\n\r\b\f\"\\\u2028\ufeff\U0001f600")
def test_toml_literals_read_back_as_the_string(text: str) -> None:
    import tomllib

    assert tomllib.loads(f"k = {tomledit.toml_value(text)}")["k"] == text
    assert tomllib.loads(f"{tomledit._key(text)} = 1") == {text: 1}


def _toml(top: dict[str, Any], named: dict[str, dict[str, Any]], comment: str,
          final_newline: bool) -> str:
    """A hand-written-looking config.toml (its tables in the order given)."""
    lines = [comment.rstrip("\n")] if comment else []
    lines += [f"{tomledit._key(k)} = {tomledit.toml_value(v)}" for k, v in top.items()]
    for name, table in named.items():
        header = ".".join(tomledit._key(p) for p in name.split(".")) \
            if name == "mcp_servers.other" else tomledit._key(name)
        lines += ["", f"[{header}]"]
        lines += [f"{tomledit._key(k)} = {tomledit.toml_value(v)}" for k, v in table.items()]
    text = "\n".join(lines)
    return text + "\n" if final_newline and text else text


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


BLOCK = tomledit.server_block("codexbridge", {"command": "codexbridge", "args": ["mcp"],
                                              "tool_timeout_sec": 3600},
                              {"CODEX_BRIDGE_MAILBOX": "proj-1a2b3c"})


@given(configs)
@example(({"mcp_servers": 1}, {}, "", False))  # was: TypeError, not a UsageError
def test_config_toml_edit_is_taken_back_exactly(config: tuple[Any, ...]) -> None:
    text = _toml(*config)
    before = load_toml(text)  # drawn without a clash: the writer must make it valid
    try:
        new, separator = tomledit.merge(text, "codexbridge", BLOCK, load_toml,
                                        "config.toml")
    except UsageError as exc:
        assert "config.toml" in str(exc) and "nothing was changed" in str(exc)
        return
    after = load_toml(new)
    assert after["mcp_servers"]["codexbridge"]["tool_timeout_sec"] == 3600
    # Every key the user had is still there with its value.
    for key, value in before.items():
        if key != "mcp_servers":
            assert _same(after[key], value) or isinstance(value, dict)
    # Merging again changes nothing; removing gives back the user's text.
    assert tomledit.merge(new, "codexbridge", BLOCK, load_toml, "config.toml")[0] == new
    cut = tomledit.cut(new, "codexbridge", separator)
    assert cut == (text if not text or text.endswith("\n") else text + "\n")


@given(junk_text | st.builds(lambda t, d: t + "\na = " + "[" * d + "]" * d,
                             junk_text, st.integers(1, 3000)))
@example("a = " + "[" * 3000 + "]" * 3000)  # was: RecursionError out of tomllib
def test_any_config_text_is_merged_or_refused(text: str) -> None:
    try:
        new, _ = tomledit.merge(text, "codexbridge", BLOCK, load_toml, "config.toml")
    except UsageError as exc:
        assert "config.toml" in str(exc)
        return
    assert "codexbridge" in load_toml(new)["mcp_servers"]


# --- doctor reads them all, and never raises --------------------------------------------

@given(json_values | settings_docs)
def test_parsed_settings_give_facts(data: Any) -> None:
    facts = parse.claude_settings_facts(data)
    assert isinstance(facts.hooks, tuple) and isinstance(facts.env, dict)
    assert isinstance(parse.hooks_json_facts(data)[0], int)
    if isinstance(data, dict):
        policy = parse.codex_config_facts(data).approval_policy
        assert policy is None or isinstance(policy, str)


@given(junk_bytes | st.builds(str.encode, deep_json()), junk_bytes,
       junk_bytes | st.builds(lambda d: json.dumps(d).encode(), settings_docs))
@example(b"a = " + b"[" * 3000 + b"]" * 3000, b"[" * 5000 + b"]" * 5000, b"\xff")
def test_doctor_reports_any_file(config: bytes, hooks: bytes, settings: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "codex", Path(tmp) / "project"
        (project / ".claude").mkdir(parents=True)
        home.mkdir()
        (home / "config.toml").write_bytes(config)
        (home / "hooks.json").write_bytes(hooks)
        (project / ".claude" / "settings.json").write_bytes(settings)
        layer = codex_side.codex_home_layer(home, ["test"])
        for error in (layer.config.error, layer.hooks_json.error):
            assert error is None or isinstance(error, str)
        json.dumps([c.as_dict() for c in codex_side.diverter_rows([layer])])
        saved = os.environ.get("CLAUDE_CONFIG_DIR")
        os.environ["CLAUDE_CONFIG_DIR"] = str(Path(tmp) / "claude-user")
        try:
            facts = claude_side.project(project)
        finally:
            if saved is None:
                os.environ.pop("CLAUDE_CONFIG_DIR", None)
            else:
                os.environ["CLAUDE_CONFIG_DIR"] = saved
        json.dumps([c.as_dict() for c in claude_side.project_rows(facts, {})])


# --- setup's ledger ---------------------------------------------------------------------

record_fields = st.fixed_dictionaries(
    {}, optional={"kind": json_values, "existed": json_values, "written": json_values,
                  "original_backup": json_values, "created_dirs": json_values,
                  "scopes": json_values})


@given(junk_bytes | st.builds(lambda f: json.dumps({"version": 1, "files": f}).encode(),
                              st.dictionaries(st.text(max_size=5), record_fields,
                                              max_size=2) | json_values))
@example(json.dumps({"files": {"/x": {"kind": "json", "existed": True, "written": "d",
                                      "original_backup": 3}}}).encode())  # was: open(3)
@example(b"\x80")  # was: UnicodeDecodeError
def test_setup_ledger_loads_or_says_damaged(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "setup.json")
        with open(path, "wb") as fh:
            fh.write(raw)
        try:
            book = ledger.load(path)
        except UsageError as exc:
            assert path in str(exc)
            return
        for record in book.files.values():
            assert record.original_backup is None or isinstance(record.original_backup, str)
            assert all(isinstance(v, dict) for v in record.scopes.values())
