"""`codexbridge demo`."""

from __future__ import annotations

import sys

import click

from .output import handles_errors


@click.command()
@click.option("--tui", is_flag=True,
              help="Also open the real Codex TUI in tmux and show the bridge's turn in it; "
                   "keeps running until Ctrl-C so you can attach.")
@click.option("--keep", is_flag=True, help="Keep the app-server running after the demo turn.")
@handles_errors
def demo(tui: bool, keep: bool) -> None:
    """Run the whole Claude → Codex path offline on an embedded mock model.

    No account and no network: a mock Responses API on 127.0.0.1 stands in for the
    model, and the real pinned `codex app-server` holds the thread. A first turn stands
    in for the human, then the real `codexbridge talk say` joins the thread and streams
    Codex's reply.
    """
    from ..demo import run_demo

    sys.exit(run_demo(tui=tui, keep=keep, echo=click.echo))
