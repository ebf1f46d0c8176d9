"""The SDK's re-export packages imported name by name (``sidecar/model/sdk_packages.py``, issue 29): what the
sidecar never asks for is never imported, and every name, asked for, is the object the plain import binds.

The SDK's checks run in fresh interpreters (which modules are loaded is per process); the finder's own
rules run on small packages written into the test's tmp dir.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.model.sdk_packages import ReexportFinder, read_deferred_imports, read_reexports
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO

# Every public binding of anthropic and of every package under anthropic.types and anthropic.resources,
# described by name (a class or function by where it is defined, a module by its name, anything else by its
# repr). "plain": the SDK imported as it is, each package's __init__ run; "deferred": with the finder, each
# name asked for.
BINDINGS = r"""
import importlib, json, re, sys, types
mode = sys.argv[1]
if mode == "deferred":
    import sidecar.model  # installs the finder, as the sidecar does before any import of the SDK
import anthropic

def describe(value):
    if isinstance(value, types.ModuleType):
        return "module " + value.__name__
    if isinstance(value, (type, types.FunctionType)):
        return f"{value.__module__}.{value.__qualname__}"
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))

if mode == "plain":
    names = ["anthropic"] + sorted(m for m, module in sys.modules.items()
                                   if m.startswith(("anthropic.types", "anthropic.resources"))
                                   and hasattr(module, "__path__"))
else:
    names = json.loads(sys.argv[2])
found = {}
for name in names:
    package = importlib.import_module(name)
    public = [n for n in (vars(package) if mode == "plain" else dir(package)) if not n.startswith("_")]
    found[name] = {n: describe(getattr(package, n)) for n in public
                   if not isinstance(getattr(package, n), types.ModuleType) and n != "annotations"}
    star = {}
    exec(f"from {name} import *", star)
    found[name]["*"] = sorted(n for n, v in star.items() if n not in ("__builtins__", "annotations")
                              and not isinstance(v, types.ModuleType))
print(json.dumps(found))
"""


def run(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=str(REPO), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_every_name_of_the_sdks_packages_is_the_one_the_plain_import_binds() -> None:
    plain = json.loads(run(BINDINGS, "plain"))
    assert "anthropic.types.beta" in plain and "anthropic.resources" in plain
    assert "AnthropicFoundry" in plain["anthropic"]  # a deferred import of anthropic's own __init__
    deferred = json.loads(run(BINDINGS, "deferred", json.dumps(sorted(plain))))
    assert deferred.keys() == plain.keys()
    for package, bindings in plain.items():
        assert deferred[package] == bindings, package
    assert len(plain["anthropic.types.beta"]) > 500  # the check saw the SDK's packages, not stubs of them


# After ``import anthropic`` with the finder: which of anthropic.types.beta's modules stayed unloaded, then one
# of them used (its type validates a value), and the beta client (imported only when first used) sends a
# request to the scripted model and parses the answer into its own types.
DEFERRED_THEN_USED = r"""
import asyncio, json, sys
import sidecar.model
import anthropic

beta = sys.modules["anthropic.types.beta"]
names = beta.__spec__.loader.reexports.names
unloaded = sorted(n for n, (module, _) in names.items() if f"anthropic.types.beta.{module}" not in sys.modules)
name = next(n for n in unloaded if isinstance(getattr(beta, n), type))
cls = getattr(beta, name)
module = f"anthropic.types.beta.{names[name][0]}"

async def beta_request():
    client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=sys.argv[1], max_retries=0)
    message = await client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=64,
                                                messages=[{"role": "user", "content": "hi"}])
    await client.close()
    return message

message = asyncio.run(beta_request())
defined = sys.modules[module].__dict__[names[name][1]]
print(json.dumps({"unloaded": len(unloaded), "name": name, "is_its_class": defined is cls,
                  "cached": beta.__dict__.get(name) is cls, "message_type": type(message).__name__,
                  "text": message.content[0].text}))
"""


def test_a_deferred_part_is_not_loaded_until_used_and_then_works(model_server: ScriptedModelServer) -> None:
    model_server.add_turn({"content": [{"type": "text", "text": "from the beta client"}]})
    seen = json.loads(run(DEFERRED_THEN_USED, model_server.base_url))
    assert seen["unloaded"] > 100, seen  # most of the package never loads at import
    assert seen["is_its_class"] and seen["cached"], seen  # the defining module's object, then kept there
    assert seen["message_type"] == "BetaMessage" and seen["text"] == "from the beta client"
    assert len(model_server.message_requests()) == 1


# ---- the finder's rules, on packages of the test's own -----------------------------------------------

@contextlib.contextmanager
def finding_fakesdk(root: Path, finder: ReexportFinder) -> Iterator[Path]:
    """``root`` on sys.path for ``fakesdk`` packages and ``finder`` first on sys.meta_path, all undone after."""
    sys.path.insert(0, str(root))
    sys.meta_path.insert(0, finder)
    try:
        yield root
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == "fakesdk" or m.startswith("fakesdk.")]:
            del sys.modules[name]


@pytest.fixture
def fake_packages(tmp_path: Path) -> Iterator[Path]:
    """``fakesdk`` packages, the finder's re-export rules scoped to them."""
    with finding_fakesdk(tmp_path, ReexportFinder(prefixes=("fakesdk",))) as root:
        yield root


def write_package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


HEAVY = "import sys\nsys.modules['fakesdk'].imports = getattr(sys.modules['fakesdk'], 'imports', 0) + 1\n"


def test_a_package_of_reexports_imports_a_module_when_its_name_is_first_used(fake_packages: Path) -> None:
    write_package(fake_packages, {
        "fakesdk/__init__.py": "",
        "fakesdk/types/__init__.py": '''\
            """The types."""
            from __future__ import annotations
            from .light import Light as Light
            from .heavy import Heavy as Heavy, make as make_heavy
            from .nested.deep import Deep as Deep
            ''',
        "fakesdk/types/light.py": "class Light:\n    pass\n",
        "fakesdk/types/heavy.py": HEAVY + "class Heavy:\n    pass\ndef make():\n    return Heavy()\n",
        "fakesdk/types/nested/__init__.py": "from .deep import Deep as Deep\n",
        "fakesdk/types/nested/deep.py": "class Deep:\n    pass\n",
    })
    import fakesdk
    import fakesdk.types as fake_types

    assert fake_types.__doc__ == "The types."
    assert "fakesdk.types.heavy" not in sys.modules and "fakesdk.types.light" not in sys.modules
    from fakesdk.types import Light

    assert Light.__module__ == "fakesdk.types.light" and "fakesdk.types.heavy" not in sys.modules
    assert fake_types.light is sys.modules["fakesdk.types.light"]  # the import bound the submodule, as it does
    assert isinstance(fake_types.make_heavy(), fake_types.Heavy) and getattr(fakesdk, "imports", 0) == 1
    assert fake_types.Deep is sys.modules["fakesdk.types.nested.deep"].Deep
    assert {"Light", "Heavy", "make_heavy", "Deep"} <= set(dir(fake_types))
    with pytest.raises(AttributeError, match="has no attribute 'Missing'"):
        fake_types.Missing  # noqa: B018
    with pytest.raises(ImportError):
        exec("from fakesdk.types import Missing", {})
    star: dict[str, object] = {}
    exec("from fakesdk.types import *", star)
    assert {"Light", "Heavy", "make_heavy", "Deep"} <= star.keys()
    assert getattr(fakesdk, "imports", 0) == 1  # each module ran once


def test_a_package_that_does_more_than_reexport_is_imported_as_usual(fake_packages: Path) -> None:
    write_package(fake_packages, {
        "fakesdk/__init__.py": "",
        "fakesdk/busy/__init__.py": "from .heavy import Heavy as Heavy\nHeavy.ready = True\n",
        "fakesdk/busy/heavy.py": HEAVY + "class Heavy:\n    pass\n",
    })
    import fakesdk
    import fakesdk.busy

    assert fakesdk.busy.Heavy.ready is True and fakesdk.imports == 1  # its __init__ ran, in full, at import
    assert "__getattr__" not in vars(fakesdk.busy)


@pytest.mark.parametrize("source", [
    "from .a import A\nprint('side effect')\n",  # another statement
    "from .a import *\n",  # a star import binds what only running it tells
    "from fakesdk.a import A\n",  # an absolute import
    "from ..a import A\n",  # from a parent package
    "from .a import a\n",  # the name is also the submodule's: which one is bound depends on import order
    "__all__ = names()\n",  # an __all__ that is not a literal
    "from .a import (\n",  # not Python
])
def test_only_plain_relative_reexports_are_deferred(source: str) -> None:
    assert read_reexports(source) is None


def test_reexports_are_read_in_order_with_all_and_the_docstring() -> None:
    found = read_reexports('"""Doc."""\nfrom __future__ import annotations\nfrom .a import A as A, B\n'
                           'from .b.c import C as A\n__all__ = ["A", "B"]\n')
    assert found is not None
    assert found.names == {"A": ("b.c", "C"), "B": ("a", "B")}  # the later binding of A wins, as when run
    assert found.all == ["A", "B"] and found.doc == "Doc." and found.future == ("annotations",)


# ---- named imports an __init__ makes of a module the sidecar never uses --------------------------------

# After ``import anthropic`` with the finder: the Azure AI Foundry client and the beta resources it builds at
# import (~1,100 modules) are not loaded; its name, first used, is the class the plain import binds.
FOUNDRY_DEFERRED = r"""
import json, sys
import sidecar.model
import anthropic
def beta_resources():
    return sum(m.startswith("anthropic.resources.beta.") for m in sys.modules)
before = {"foundry": "anthropic.lib.foundry" in sys.modules, "beta_resources": beta_resources()}
client_class = anthropic.AnthropicFoundry
import anthropic.lib.foundry as foundry
print(json.dumps({"before": before, "beta_resources_after": beta_resources(),
                  "loader": type(anthropic.__spec__.loader).__name__,
                  "same": client_class is foundry.AnthropicFoundry
                  and anthropic.AsyncAnthropicFoundry is foundry.AsyncAnthropicFoundry,
                  "kept": "AnthropicFoundry" in vars(anthropic), "module": anthropic.NotFoundError.__module__}))
"""


def test_anthropics_foundry_client_is_imported_only_when_first_used() -> None:
    seen = json.loads(run(FOUNDRY_DEFERRED))
    before, after = seen.pop("before"), seen.pop("beta_resources_after")
    assert not before["foundry"] and before["beta_resources"] < 10 and after > 100, (before, after)
    assert seen == {"loader": "DeferredImportsLoader", "same": True, "kept": True,
                    "module": "anthropic"}, seen  # the rest of the __init__ ran (its __module__ rewrite too)


@pytest.fixture
def fake_sdk(tmp_path: Path) -> Iterator[Path]:
    """A ``fakesdk`` package whose ``__init__``'s imports of ``.lib.cloud`` are deferred."""
    with finding_fakesdk(tmp_path, ReexportFinder(prefixes=(), imports={"fakesdk": ("lib.cloud",)})) as root:
        yield root


def test_a_deferred_import_runs_when_its_name_is_first_used(fake_sdk: Path) -> None:
    write_package(fake_sdk, {
        "fakesdk/__init__.py": '''\
            from __future__ import annotations
            from .core import Client as Client
            from .lib.cloud import Cloud as Cloud, make as make_cloud
            __all__ = ["Client"]
            Client.ready = True
            ''',
        "fakesdk/core.py": "class Client:\n    pass\n",
        "fakesdk/lib/__init__.py": "",
        "fakesdk/lib/cloud.py": HEAVY + "class Cloud:\n    pass\ndef make():\n    return Cloud()\n",
    })
    import fakesdk

    assert fakesdk.Client.ready is True  # the rest of the __init__ ran, at import
    assert "fakesdk.lib.cloud" not in sys.modules and getattr(fakesdk, "imports", 0) == 0
    assert {"Cloud", "make_cloud", "Client"} <= set(dir(fakesdk))
    from fakesdk import Cloud

    assert Cloud is sys.modules["fakesdk.lib.cloud"].Cloud and isinstance(fakesdk.make_cloud(), Cloud)
    assert fakesdk.imports == 1 and vars(fakesdk)["Cloud"] is Cloud  # ran once, then kept in the package
    # Its own __future__ import applies; the finder's module's does not leak into it.
    assert "annotations" in vars(fakesdk) and fakesdk.__spec__ is not None
    star: dict[str, object] = {}
    exec("from fakesdk import *", star)
    assert "Client" in star and "Cloud" not in star  # __all__, as written
    with pytest.raises(AttributeError, match="has no attribute 'Missing'"):
        fakesdk.Missing  # noqa: B018


def test_an_error_in_the_init_points_at_its_own_file_and_line(fake_sdk: Path) -> None:
    write_package(fake_sdk, {
        "fakesdk/__init__.py": "from .lib.cloud import Cloud as Cloud\n\nraise RuntimeError('broken sdk')\n",
        "fakesdk/lib/__init__.py": "",
        "fakesdk/lib/cloud.py": "class Cloud:\n    pass\n",
    })
    with pytest.raises(RuntimeError, match="broken sdk") as raised:
        import fakesdk  # noqa: F401
    where = raised.traceback[-1]
    assert Path(where.path) == fake_sdk / "fakesdk" / "__init__.py" and where.lineno + 1 == 3


DEFERRABLE = "from .lib.cloud import Cloud as Cloud\n"


@pytest.mark.parametrize("rest", [
    "__all__ = ['Cloud']\n",  # exported: a star import must bind it
    "Cloud.ready = True\n",  # used by the __init__ itself
    "def make():\n    return Cloud()\n",  # used inside a function of it
    "from .other import Cloud\n",  # bound again: which binding wins depends on order
    "class Cloud:\n    pass\n",
    "__all__ = []\n__all__ += ['x']\n",  # an __all__ not read off the source
    "__all__ = []\n__all__.extend(names)\n",
    "__all__ = names()\n",
    "def __getattr__(name):\n    raise AttributeError(name)\n",  # its own module hooks
    "__dir__ = list\n",
])
def test_a_deferred_import_that_could_change_what_the_init_does_is_kept(rest: str) -> None:
    assert read_deferred_imports(DEFERRABLE + rest, ("lib.cloud",)) is None


@pytest.mark.parametrize("source", [
    "from .lib.cloud import *\n",  # a star import: what it binds only running it tells
    "from .lib.other import Other as Other\n",  # not a listed module
    "from .lib import cloud\n",
    "from .lib.cloud import lib\n",  # the name is also the package's submodule
    "from .lib.cloud import (\n",  # not Python
])
def test_nothing_to_defer_is_imported_as_usual(source: str) -> None:
    assert read_deferred_imports(source, ("lib.cloud",)) is None


def test_deferred_imports_are_read_with_the_rest_of_the_init_kept() -> None:
    found = read_deferred_imports("import os\nfrom .lib.cloud import Cloud as C, make\nX = os.sep\n",
                                  ("lib.cloud",))
    assert found is not None
    assert found.names == {"C": ("lib.cloud", "Cloud"), "make": ("lib.cloud", "make")}
    assert [type(statement).__name__ for statement in found.tree.body] == ["Import", "Assign"]
