"""The ``sidecar`` command: serve (LSP or ACP), chat, demo, login/logout, check-command."""

from __future__ import annotations

import argparse
import asyncio
import sys


def cmd_serve(args: argparse.Namespace) -> int:
    from sidecar.secrets import capture_secrets

    capture_secrets()  # first: the key leaves the environment before anything can start a child
    from sidecar.app import build_core
    from sidecar.logs import setup_logging

    setup_logging("serve")
    core = build_core()
    if args.acp or args.transport == "acp":
        from sidecar.server.acp_stdio import serve_acp_stdio

        asyncio.run(serve_acp_stdio(core))
    else:
        from sidecar.server.lsp import serve_lsp_stdio

        serve_lsp_stdio(core)
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    from sidecar.secrets import capture_secrets

    capture_secrets()  # the terminal client is the sidecar's parent: its environ must not show the key
    from sidecar.client.chat import run_chat

    return run_chat(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from sidecar.secrets import capture_secrets

    capture_secrets()
    from sidecar.client.chat import run_demo

    return run_demo(args)


def cmd_login(args: argparse.Namespace) -> int:
    """Save an API key in the OS keychain (``keyring``), where the agent finds it when the environment
    has none: read without echo from a terminal, or one line from stdin (``… | sidecar login``)."""
    import getpass

    from sidecar.model.credentials import KeychainError, save_key

    try:
        key = getpass.getpass("Anthropic API key (input hidden): ") if sys.stdin.isatty() else sys.stdin.readline()
    except (EOFError, KeyboardInterrupt):
        key = ""
    key = key.strip()
    if not key or any(c.isspace() for c in key):
        print("sidecar login: no key given (one line, no spaces); nothing saved.", file=sys.stderr)
        return 2
    try:
        backend = save_key(key)
    except KeychainError as exc:
        print(f"sidecar login: {exc}", file=sys.stderr)
        return 1
    print(f"Saved the API key in the OS keychain ({backend}). The agent uses it when ANTHROPIC_API_KEY is not set;"
          " `sidecar logout` removes it.")
    return 0


def cmd_logout(args: argparse.Namespace) -> int:
    from sidecar.model.credentials import KeychainError, delete_key

    try:
        removed = delete_key()
    except KeychainError as exc:
        print(f"sidecar logout: {exc}", file=sys.stderr)
        return 1
    print("Removed the API key from the OS keychain." if removed else "No API key was saved in the OS keychain.")
    return 0


def cmd_check_command(argv: list[str]) -> int:
    from sidecar.tools.bash.check_command import main as check_main

    return check_main(argv)


def build_parser() -> argparse.ArgumentParser:
    from sidecar import DISTRIBUTION, version

    parser = argparse.ArgumentParser(prog="sidecar", description="An editor coding agent (LSP/ACP sidecar).")
    parser.add_argument("--version", action="version", version=f"{DISTRIBUTION} {version()}",
                        help="print the distribution name and version (sidecar-agent X.Y.Z) and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the agent on stdio (LSP framing by default, --acp for ACP)")
    serve.add_argument("--transport", choices=["lsp", "acp"], default="lsp")
    serve.add_argument("--acp", action="store_true", help="same as --transport acp")
    serve.set_defaults(func=cmd_serve)

    for name, func, help_text in (("chat", cmd_chat, "chat with the agent in the terminal"),
                                  ("demo", cmd_demo, "a scripted session on the fixture workspace, offline")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--cwd", default=None, help="workspace directory (default: current directory)")
        p.add_argument("--yes", action="store_true",
                       help="answer every permission request with 'allow once' (never a trust question)")
        p.add_argument("--trust", action="store_true",
                       help="trust the workspace and its .mcp.json servers for this session without asking")
        p.add_argument("--mode", default=None, help="initial permission mode")
        if name == "chat":
            p.add_argument("--demo", action="store_true", help="use the bundled scripted model (offline)")
            p.add_argument("-c", "--continue", dest="continue_", action="store_true",
                           help="resume the most recent session in this folder")
            p.add_argument("-r", "--resume", nargs="?", const="", default=None, metavar="ID",
                           help="resume session ID, or pick one of this folder's sessions")
        else:
            p.add_argument("--offline", action="store_true", help="use the scripted model even with a key")
        p.add_argument("prompt", nargs="?", default=None, help="send this prompt and exit when the turn ends")
        p.set_defaults(func=func)

    login = sub.add_parser("login", help="save an Anthropic API key in the OS keychain (read without echo, or "
                           "one line from stdin)")
    login.set_defaults(func=cmd_login)
    logout = sub.add_parser("logout", help="remove the key `sidecar login` saved")
    logout.set_defaults(func=cmd_logout)

    # check-command parses its own flags (it is also used as a filter: `-` reads commands from stdin).
    sub.add_parser("check-command", help="explain a shell command's class and permission decision",
                   add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "check-command":
        return cmd_check_command(argv[1:])
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result
