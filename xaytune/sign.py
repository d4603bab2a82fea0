"""``python -m xaytune.sign <output dir> --key <ed25519 private key PEM>``: sign every
file of an output tree (a DSSE envelope, ``<output dir>/signature.dsse.json``;
:mod:`xaytune.release.signing`). ``python -m xaytune.sign --generate-key <path>`` writes a
new key pair: the private key at ``<path>`` (mode 0600), the public key at
``<path>.pub``. ``python -m xaytune.verify <output dir> --trust <path>.pub`` checks it.
``python -m xaytune.sign <output dir> --statement <file>`` writes only the statement (the
in-toto Statement of every file, outside the tree) for another signer, e.g. Sigstore.

Offline: no network, no account. One line per refusal (exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]

USAGE = (
    "usage: python -m xaytune.sign <output dir> --key <ed25519 private key PEM>\n"
    "       python -m xaytune.sign --generate-key <path>   "
    "(private key at <path>, public key at <path>.pub)\n"
    "       python -m xaytune.sign <output dir> --statement <file>   "
    "(the unsigned statement, for another signer)"
)


def _wants_help(args: list[str]) -> bool:
    """``-h``/``--help`` anywhere: the usage and this module's description go to
    stdout, exit 0 (asking for help is not a usage error)."""
    return any(arg in ("-h", "--help") for arg in args)


def _help() -> str:
    return f"{USAGE}\n\n{__doc__.strip()}"


def _parse(args: list[str]) -> tuple[str, str, str | None] | None:
    """("generate", path, None), ("sign", tree, key) or ("statement", tree, file); None
    when not a command."""
    positional: list[str] = []
    options: dict[str, str] = {}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        name, equals, value = arg.partition("=")
        if name in ("--key", "--generate-key", "--statement") and name not in options:
            if not equals:
                if not rest:
                    return None
                value = rest.pop(0)
            options[name] = value
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
    if set(options) == {"--generate-key"} and not positional:
        return "generate", options["--generate-key"], None
    if set(options) == {"--key"} and len(positional) == 1:
        return "sign", positional[0], options["--key"]
    if set(options) == {"--statement"} and len(positional) == 1:
        return "statement", positional[0], options["--statement"]
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if _wants_help(args):
        print(_help())
        return 0
    from xaytune.core.errors import XaytuneError
    from xaytune.release.signing import generate_key, load_private_key, sign_tree, write_statement

    command = _parse(args)
    if command is None or "" in command:
        print(USAGE, file=sys.stderr)
        return 2
    mode, target, key = command  # key: the key, or the statement's file
    try:
        if mode == "generate":
            private, public = generate_key(Path(target))
            print(f"private key: {private} (mode 0600; keep it secret)")
            print(f"public key: {public} (give it to whoever verifies: --trust {public})")
            return 0
        assert key is not None
        if mode == "statement":
            write_statement(Path(target), Path(key))
            print(f"the statement of every file of {target}: {key} (not signed)")
            return 0
        path = sign_tree(Path(target), load_private_key(Path(key)))
    except XaytuneError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"signed every file of {target}: {path}")
    print(f"check it with: python -m xaytune.verify {target} --trust <public key PEM>")
    return 0


if __name__ == "__main__":
    sys.exit(main())
