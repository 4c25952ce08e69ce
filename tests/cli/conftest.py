"""Fixtures of the CLI tests."""

from tests.servers.fake_llm import fake_llm as fake_llm  # re-exported fixture
