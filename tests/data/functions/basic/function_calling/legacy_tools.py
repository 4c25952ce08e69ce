"""A module in the ChatDev-style `function_calling/` sub-folder."""


def legacy_echo(text: str) -> str:
    """Echo the text back."""
    return text
