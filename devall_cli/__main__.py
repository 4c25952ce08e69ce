"""Allow `python -m devall_cli`."""

from devall_cli.cli.early import main

main()
