"""A module whose import fails."""

import os


def never(x: int) -> int:
    """Unreachable: the module fails below."""
    return x


VALUE = os.environ["DEVALL_TEST_VARIABLE_THAT_IS_NEVER_SET"]
