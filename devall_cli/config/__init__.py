"""Workflow configuration: YAML loading, `${VAR}` placeholders, typed and validated objects.

Entry points: `devall_cli.config.loader.load_workflow` and `validate_workflow`.
"""
