"""A helper module: files starting with an underscore are not tool sources."""


def shout(word: str) -> str:
    """Upper-case a word and add an exclamation mark."""
    return word.upper() + "!"
