"""Text tools for the broken workflows of the corpus."""


def count_words(text: str) -> int:
    """How many words the text has."""
    return len(text.split())


def summarize(text: str, sentences: int = 2) -> str:
    """The first sentences of the text."""
    return ". ".join(text.split(". ")[:sentences])
