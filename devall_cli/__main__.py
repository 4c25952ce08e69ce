"""Allow `python -m devall_cli`."""

from devall_cli.cli.app import main

main()
