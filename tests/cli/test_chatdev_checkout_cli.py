"""ChatDev's function modules run unchanged from a ChatDev checkout, and fail to validate outside.

tests/data/chatdev_checkout has ChatDev's layout with small modules of our own that use what
ChatDev's `functions/function_calling/file.py` uses: `from entity.messages import ...`, `from
utils.attachments import AttachmentStore` (with a `function_calling/utils.py` beside that must
not shadow the package), a `_context` dict read with `.get()` whose `attachment_store` must be
the checkout's own class, and files written under the run's `code_workspace`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.helpers import invoke
from tests.servers.fake_llm import FakeLLM

CHECKOUT = Path(__file__).resolve().parents[1] / "data" / "chatdev_checkout"
FLOW = "yaml_instance/files_flow.yaml"


def copy_checkout(tmp_path: Path) -> Path:
    root = tmp_path / "ChatDev"
    shutil.copytree(CHECKOUT, root)
    return root


def variables(llm: FakeLLM) -> list[str]:
    return ["--var", f"BASE_URL={llm.base_url}", "--var", "API_KEY=sk-test"]


def tool_messages(request_body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request_body["messages"] if m["role"] == "tool"]


def test_a_chatdev_function_module_runs_from_its_checkout(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    root = copy_checkout(tmp_path)
    fake_llm.enqueue(
        FakeLLM.tool_call_reply(
            [("save_file", {"path": "game/snake.py", "content": "print('snake')\n"})]
        ),
        FakeLLM.tool_call_reply([("load_file", {"path": "game/snake.py"})]),
        FakeLLM.tool_call_reply([("shout", {"text": "done"})]),
        "The game is in game/snake.py.",
    )
    out = tmp_path / "run"
    code, _, err = invoke(
        "run", str(root / FLOW), "--task", "a snake game", "--out", str(out), *variables(fake_llm)
    )
    assert code == 0, err
    written = out / "code_workspace" / "game" / "snake.py"
    assert written.read_text() == "print('snake')\n"
    last = fake_llm.requests[-1].body
    saved, loaded, shouted = tool_messages(last)
    # A dict result reaches the model as ChatDev hands it over: indented JSON.
    assert saved == json.dumps({"path": "game/snake.py", "size": 15}, indent=2)
    # A MessageBlock with an attachment: the file, saved among the run's attachments.
    assert loaded == "[file saved: attachments/load_file_file_1.py (text/x-python, 15 bytes)]"
    assert shouted == "DONE"  # function_calling/utils.py is a function module, not the package
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "ok"
    assert len(result["attachments"]) == 1 and result["attachments"][0]["size"] == 15
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    failed = [e for e in events if e["kind"] == "tool.result" and e.get("is_error")]
    assert failed == []


def test_param_meta_descriptions_reach_the_tool_list(tmp_path: Path) -> None:
    root = copy_checkout(tmp_path)
    code, out, err = invoke(
        "tools", "list", str(root / FLOW), "--json", "--var", "BASE_URL=http://127.0.0.1:9/v1",
        "--var", "API_KEY=x",
    )  # fmt: skip
    assert code == 0, err
    (save,) = [tool for tool in json.loads(out) if tool["name"] == "save_file"]
    assert save["input_schema"]["properties"]["mode"] == {
        "type": "string",
        "description": "How to write",
        "enum": ["overwrite", "append"],
        "default": "overwrite",
    }


def test_outside_a_checkout_its_imports_are_a_located_validate_error(tmp_path: Path) -> None:
    root = copy_checkout(tmp_path)
    shutil.rmtree(root / "entity")  # no longer a checkout: ChatDev's packages are not beside it
    code, _, err = invoke(
        "validate", str(root / FLOW), "--var", "BASE_URL=http://127.0.0.1:9/v1",
        "--var", "API_KEY=x",
    )  # fmt: skip
    assert code == 3
    assert f"{FLOW.rpartition('/')[2]}:" in err and "tools[0].name" in err
    assert "functions/function_calling/files.py:9: imports 'entity.messages'" in err
    assert "one of ChatDev's packages" in err
    assert "Traceback" not in err


def test_a_missing_third_party_package_is_a_validate_error_with_an_install_hint(
    tmp_path: Path,
) -> None:
    root = copy_checkout(tmp_path)
    module = root / "functions" / "function_calling" / "utils.py"
    module.write_text("import yaml_shadow_nowhere\nimport PIL\n" + module.read_text())
    code, _, err = invoke(
        "validate", str(root / FLOW), "--var", "BASE_URL=http://127.0.0.1:9/v1",
        "--var", "API_KEY=x",
    )  # fmt: skip
    assert code == 3
    assert "utils.py:1: imports 'yaml_shadow_nowhere', which is not installed" in err
    assert "(pip install yaml_shadow_nowhere)" in err
