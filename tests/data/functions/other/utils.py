"""Same file name as basic/utils.py, different functions: modules must not clash."""


def add(a: str, b: str) -> str:
    """Concatenate two strings."""
    return a + b
