"""`python -m docsmcp_site ARGS` is the `docsmcp ARGS` command (docsmcp_site/cli.py)."""

from docsmcp_site.cli import main

main()
