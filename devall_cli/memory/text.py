"""ChatDev's text heuristics for memory: what of a visit is kept, how candidates are re-ranked
and scored, and how retrieved items are laid out in the prompt."""

from __future__ import annotations

import difflib
import hashlib
import re
import time
from collections.abc import Sequence

from devall_cli.memory.base import MemoryItem

MAX_CONTENT = 500  # characters of a simple-memory summary
MIN_CONTENT = 20  # shorter summaries (and sentences) are not worth keeping
_TEMPLATES = (
    re.compile(r"(?:Agent|Model) Role:.*?\n\n"),
    re.compile("(?:You are|\u4f60\u662f\u4e00\u4f4d).*?(?:,|\uff0c)"),
    re.compile("(?:User will input|\u7528\u6237\u4f1a\u8f93\u5165).*?(?:,|\uff0c)"),
    re.compile("(?:You need to|\u4f60\u9700\u8981).*?(?:,|\uff0c)"),
)
_SENTENCE_END = re.compile("[\u3002\uff01\uff1f\uff1b\n]")
HEADER = "===== Related Memories ====="
FOOTER = "===== End of Memory ====="


def extract_key_content(content: str) -> str:
    """The gist of a text: whitespace collapsed, prompt boilerplate dropped, at most 3 sentences
    of 20+ characters, at most 500 characters (ChatDev's SimpleMemory._extract_key_content)."""
    content = re.sub(r"\s+", " ", content.strip())
    if len(content) <= 100:
        return content
    for template in _TEMPLATES:
        content = template.sub("", content)
    sentences = [s.strip() for s in _SENTENCE_END.split(content)]
    kept = [s for s in sentences if len(s) >= MIN_CONTENT]
    if not kept:
        return content[:MAX_CONTENT]
    joined = "\u3002".join(kept[:3])
    if len(joined) > MAX_CONTENT:
        joined = joined[:MAX_CONTENT] + "..."
    return joined.strip()


def content_hash(text: str) -> str:
    """The short hash simple memory uses to skip a summary it already holds."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()[:8]


def semantic_similarity(query: str, content: str) -> float:
    """Word overlap, common subsequence, keywords and length, weighted 0.4/0.3/0.2/0.1."""
    query, content = query.lower(), content.lower()
    query_words, content_words = set(query.split()), set(content.split())
    union = query_words | content_words
    jaccard = len(query_words & content_words) / len(union) if query_words and content_words else 0
    longest = max(len(query), len(content))
    common = difflib.SequenceMatcher(None, query, content, autojunk=False).get_matching_blocks()
    subsequence = sum(block.size for block in common) / longest if longest else 0.0
    keywords = {w for w in query_words if len(w) >= 2}
    matched = keywords & {w for w in content_words if len(w) >= 2}
    keyword = len(matched) / len(keywords) if keywords else 0.0
    score = 0.4 * jaccard + 0.3 * subsequence + 0.2 * keyword + 0.1 * _length_factor(query, content)
    return min(score, 1.0)


def _length_factor(query: str, content: str) -> float:
    if not content:
        return 0.0
    ratio = len(content) / len(query) if query else float("inf")
    if 0.5 <= ratio <= 2.0:
        return 1.0
    if ratio < 0.5:
        return ratio / 0.5
    return max(0.1, 2.0 / ratio)


def score_memory(item: MemoryItem, query: str, now: float | None = None) -> float:
    """How a retrieved item ranks among all of a node's memories: recency and length (70 %),
    words shared with the query (30 %)."""
    now = time.time() if now is None else now
    age_hours = (now - item.timestamp) / 3600
    decay = max(0.1, 1.0 - age_hours / (24 * 30))
    size = len(item.content_summary)
    length = 0.5 if size < 20 else 0.8 if size > 200 else 1.0
    query_words = set(query.lower().split())
    content_words = set(item.content_summary.lower().split())
    relevance = len(query_words & content_words) / len(query_words) if query_words else 0.0
    return 0.7 * decay * length + 0.3 * relevance


def format_memories(found: Sequence[tuple[str, MemoryItem]]) -> str:
    """The block put into the prompt: items grouped by store, numbered, best first."""
    grouped: dict[str, list[MemoryItem]] = {}
    for store, item in found:
        grouped.setdefault(store, []).append(item)
    lines = [HEADER]
    for store, items in grouped.items():
        lines.append(f"\n--- {store} ---")
        lines.extend(f"{n}. {item.content_summary}" for n, item in enumerate(items, start=1))
    lines.append(f"\n{FOOTER}")
    return "\n".join(lines)


def embedding_text(text: str) -> str:
    """Text as it is sent for embedding: punctuation and symbols become spaces, whitespace is
    collapsed (ChatDev's EmbeddingBase._preprocess_text)."""
    text = re.sub(r"\s+", " ", text.strip())
    text = re.sub(r"[^\w\s]", " ", text)
    return re.sub(r"\s+", " ", text.strip())
