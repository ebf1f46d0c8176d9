"""The SDK's re-export packages (``anthropic.types``, ``anthropic.types.beta``, ``anthropic.resources`` …)
loaded name by name, when a name is first used, instead of all at once (issue 29; docs/performance.md,
"A connection that never stalls").

The ``__init__`` of each of these packages is nothing but ``from .module import Name as Name`` lines
(``__all__`` besides, in ``resources``): ``anthropic.types.beta`` alone has ~1,000 of them, and running them
imports every module and builds every pydantic class of the package, used or not. A finder on
``sys.meta_path`` gives such a package a loader that reads those lines from its source (parsed, never run)
and gives the package a module ``__getattr__`` (PEP 562): the first use of a name runs the one
``from .module import Name`` that binds it, and keeps the value in the package. What never asks for a name
never imports its module; what does gets the same object the plain import binds.

Not ``importlib.util.LazyLoader``: a module it makes loads at its first attribute access of any kind,
``__path__`` included, and importing a package's submodule reads the package's ``__path__``. The SDK's
modules import each other that way everywhere (``from ..beta.beta_message import BetaMessage``), so every
package would load at once, as now.

A package whose ``__init__`` does anything else (another statement, a star or absolute import, a name that
is also one of its submodules' names, whose binding would depend on the order of imports) is imported as
usual: another SDK version may import more, never wrongly. No SDK file is changed, nothing of it copied.

One difference from the plain import is kept on purpose: a submodule of such a package is bound as the
package's attribute only once it is imported (``anthropic.types.message_param`` after ``import
anthropic`` alone raises AttributeError; ``import anthropic.types.message_param`` or ``from
anthropic.types.message_param import …`` work as ever). The re-exported names are what the SDK documents;
nothing in the sidecar reaches a submodule as an attribute.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # importlib.abc imports importlib.resources (~15 ms): not at startup
    from importlib.abc import Loader

# The packages (and their subpackages) taken name by name: the SDK's API types and resources.
DEFERRED_PACKAGES = ("anthropic.types", "anthropic.resources")


class Reexports:
    """What a re-export package's ``__init__`` binds."""

    __slots__ = ("all", "doc", "future", "names")

    def __init__(self, names: dict[str, tuple[str, str]], all_names: list[str] | None, doc: str | None,
                 future: tuple[str, ...]) -> None:
        # Each bound name → (the submodule, relative to the package, and the name imported from it).
        self.names = names
        # ``__all__``, when the ``__init__`` assigns it (a literal list or tuple of names).
        self.all = all_names
        self.doc = doc
        # ``from __future__ import annotations`` binds ``annotations`` in the package too.
        self.future = future


def read_reexports(source: str) -> Reexports | None:
    """The bindings of an ``__init__`` made only of relative ``from .x import Y [as Z]`` lines (a docstring,
    ``from __future__`` and an ``__all__`` literal besides), in order; None for anything else."""
    import ast  # only when an SDK package is imported (the warm-up thread), never at startup

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names: dict[str, tuple[str, str]] = {}
    submodules: set[str] = set()
    all_names: list[str] | None = None
    future: list[str] = []
    doc = ast.get_docstring(tree, clean=False)
    for index, node in enumerate(tree.body):
        if index == 0 and doc is not None:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__" and node.level == 0:
            future += [alias.asname or alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            submodules.add(node.module.partition(".")[0])  # importing it binds that name in the package
            for alias in node.names:
                if alias.name == "*":
                    return None
                names[alias.asname or alias.name] = (node.module, alias.name)
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
              and node.targets[0].id == "__all__"):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                return None
            all_names = list(value)
        else:
            return None
    if submodules & (names.keys() | set(future)):
        return None  # the name would be the submodule or the value depending on which import ran first
    return Reexports(names, all_names, doc, tuple(future))


class ReexportLoader:
    """Makes a re-export package whose names are imported on first use (module ``__getattr__``)."""

    def __init__(self, loader: Any, reexports: Reexports) -> None:
        self.loader = loader  # the path finder's own: source, resources and the rest are asked of it
        self.reexports = reexports

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a plain module

    def exec_module(self, module: ModuleType) -> None:
        reexports = self.reexports
        namespace = module.__dict__
        package = module.__name__
        if reexports.doc is not None:
            namespace["__doc__"] = reexports.doc
        if reexports.all is not None:
            namespace["__all__"] = list(reexports.all)
        for feature in reexports.future:
            namespace[feature] = getattr(__import__("__future__"), feature)

        def __getattr__(name: str) -> Any:
            where = reexports.names.get(name)
            if where is None:
                if name == "__all__":  # a star import without ``__all__`` takes every public name there is
                    for each in reexports.names:
                        getattr(module, each)
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            submodule, original = where
            # What ``from .submodule import original`` does: the import binds the submodule in the package
            # (as the plain import did), and ``original`` may itself be a submodule of it.
            source = __import__(submodule, namespace, None, (original,), 1)
            try:
                value = getattr(source, original)
            except AttributeError:
                value = sys.modules.get(f"{source.__name__}.{original}")
                if value is None:
                    raise ImportError(f"cannot import name {original!r} from {source.__name__!r}",
                                      name=source.__name__) from None
            namespace[name] = value  # the next use finds it in the package, as the plain import left it
            return value

        def __dir__() -> list[str]:
            return sorted(namespace.keys() | reexports.names.keys())

        namespace["__getattr__"] = __getattr__
        namespace["__dir__"] = __dir__

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, get_resource_reader, is_package …
        return getattr(self.loader, name)


class ReexportFinder:
    """A ``sys.meta_path`` finder for the packages under ``prefixes``: a re-export package gets a
    ``ReexportLoader``; any other module there the path finder's spec, unchanged."""

    def __init__(self, prefixes: Sequence[str] = DEFERRED_PACKAGES) -> None:
        self.prefixes = tuple(prefixes)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not any(fullname == p or fullname.startswith(p + ".") for p in self.prefixes):
            return None
        # What the path finder (next on sys.meta_path for these names) would return anyway: found once.
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if (spec is None or spec.submodule_search_locations is None
                or not isinstance(spec.loader, importlib.machinery.SourceFileLoader)):
            return spec
        try:
            source = spec.loader.get_source(fullname)
        except (ImportError, OSError, UnicodeDecodeError):
            return spec
        reexports = read_reexports(source) if source is not None else None
        if reexports is not None:
            spec.loader = cast("Loader", ReexportLoader(spec.loader, reexports))  # a loader by protocol
        return spec


def defer_sdk_packages() -> None:
    """Install the finder, once (``sidecar.model`` does, before anything imports the SDK). A package
    the SDK already imported stays as it was."""
    if not any(isinstance(finder, ReexportFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, ReexportFinder())
