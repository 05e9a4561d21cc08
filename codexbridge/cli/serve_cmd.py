"""`codexbridge serve`."""

from __future__ import annotations

import os

import click

from ..error_tables import exit_help
from ..errors import BinaryNotFoundError, ServeError, UsageError
from ..host.serve import DEFAULT_PORT, run_serve
from ..host.tokens import MIN_CHARS
from .command import command, echo

SERVE_EXIT_HELP = exit_help(
    UsageError, BinaryNotFoundError, ServeError,
    success="stopped (Ctrl-C, SIGTERM, SIGHUP) and the app-server exited cleanly; otherwise "
            "the app-server's own status (128+N when killed by signal N) — also when it died "
            "more often than serve restarts it",
    extra={2: "bad --cwd / --port / address, a weak CODEX_BRIDGE_TOKEN, or a serve is "
              "already running"})


@click.command(epilog=SERVE_EXIT_HELP)
@click.option("--cwd", default=None, metavar="DIR",
              help="The project Codex works in (default: $CODEX_BRIDGE_CWD, else the current "
                   "directory).")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Listen on TCP at this port instead of the private unix socket (also "
                   f"$CODEX_BRIDGE_PORT; {DEFAULT_PORT} with only --host; 0 picks a free "
                   "one). Needs a capability token: CODEX_BRIDGE_TOKEN (at least "
                   f"{MIN_CHARS} characters), else one is generated.")
@click.option("--host", default=None,
              help="Listen on TCP at this address (default 127.0.0.1 once TCP is asked for; "
                   "the token rule of --port applies).")
@click.option("--codex-arg", "codex_args", multiple=True, metavar="ARG",
              help="Extra argument for `codex app-server` (repeatable), e.g. "
                   "--codex-arg=-c --codex-arg=model=o3.")
@click.option("--tls-cert", default=None, metavar="PEM",
              help="Serve wss:// with this certificate (chain) file: codex listens on "
                   "loopback, a TLS relay on HOST:PORT (codex has no TLS listener).")
@click.option("--tls-key", default=None, metavar="PEM", help="The certificate's key.")
@command
def serve(cwd: str | None, port: int | None, host: str, codex_args: tuple[str, ...],
          tls_cert: str | None = None, tls_key: str | None = None) -> int:
    """Run the shared codex app-server that the TUI and the bridge both attach to.

    Starts `codex app-server` in DIR on a unix socket in a private (0700) directory of
    yours — nobody else on the machine can connect — with only a baseline of environment
    variables (PATH, HOME, locale, TMPDIR, CODEX_HOME, credential-free proxy settings,
    the token variables codex's config names for its MCP servers, plus names listed in
    $CODEX_BRIDGE_CHILD_ENV), writes bridge.json to the state dir ($CODEX_BRIDGE_HOME,
    default ~/.codex-bridge) so `talk` finds it, and prints the `codex --remote …` line
    to paste. Ctrl-C stops it.

    \b
    --host/--port (or --tls-cert) listen on TCP instead: codex then wants a capability
    token from every client — CODEX_BRIDGE_TOKEN (at least 16 characters), else a fresh
    one serve writes to the 0600 file bridge.json names (`talk` reads it; the printed
    line reads it with $(cat …)).

    \b
    If the app-server dies without being asked to (a crash, a SIGKILL), serve starts a
    new one on the same address and updates bridge.json, with one line on stderr each
    time — at most 3 times within 60 s; the next death ends serve with a non-zero status
    saying so. Threads survive a restart (codex keeps them on disk): a client, or a
    courier waiting for its server, resumes them on the same URL.

    \b
    You may not need it: codex's own daemon (`codex app-server daemon start`, or just
    `codex`) is found by `talk`, `mcp` and `doctor` by themselves. serve is for a
    dedicated app-server (with --tls-cert/--tls-key, wss:// for another machine).
    """
    workdir = cwd or os.environ.get("CODEX_BRIDGE_CWD") or os.getcwd()
    raw = os.environ.get("CODEX_BRIDGE_PORT")  # a TCP port asked for by the environment
    if port is None and raw:
        try:
            port = int(raw)
        except ValueError:
            raise UsageError(f"CODEX_BRIDGE_PORT={raw!r} is not a port number") from None
    if bool(tls_cert) != bool(tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    tls = (tls_cert, tls_key) if tls_cert and tls_key else None
    return run_serve(workdir, port, host, codex_args, echo=echo, tls=tls)
