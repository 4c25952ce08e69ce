"""The generic parse kit and the graph-level model.

YAML with positions (yaml_source, yaml_tree), the Checker and KeySpec (schema), `${VAR}`
placeholders, dotenv, Python function discovery, and the graph model (config.model). It knows no
kind: the workflow assembler (devall_cli.workflow) asks the kind registries.
"""
