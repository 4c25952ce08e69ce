"""The workflow assembler: it loads a workflow file and asks the kind registries to parse it.

Entry points: `devall_cli.workflow.loader.load_workflow` and `validate_workflow`; `graph` parses
and checks a graph block, `includes` merges included files, `node_entry` one node entry,
`json_schema` builds `devall schema` from the kinds' shapes, `answers` reads --answers files and
`adhoc` builds the one-server workflow of `probe --url/--command`.
"""
