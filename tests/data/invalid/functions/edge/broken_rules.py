# -*- coding: no-such-codec -*-
"""A module Python cannot read (its coding cookie names no codec): the function it defines
cannot be found by reading it."""


def is_ready(text: str) -> bool:
    return "READY" in text
