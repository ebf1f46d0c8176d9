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

The same finder takes out of ``anthropic/__init__`` the named imports of modules the sidecar never uses
(``DEFERRED_IMPORTS``: the Azure AI Foundry client, which builds every beta resource at import): the
``__init__`` is parsed, those ``from .lib.foundry import A as A`` statements left out, the rest compiled
under the file's own name and run as it is; a module ``__getattr__`` imports the module when one of its
names is first used. This is done only when nothing else in the ``__init__`` could notice; where it might (a
name it uses, binds again or lists in ``__all__``, an ``__all__`` not written as a literal, hooks of its own)
the ``__init__`` runs unchanged.

One difference from the plain import is kept on purpose: a submodule of such a package is bound as the
package's attribute only once it is imported (``anthropic.types.message_param`` after ``import
anthropic`` alone raises AttributeError; ``import anthropic.types.message_param`` or ``from
anthropic.types.message_param import …`` work as ever). The re-exported names are what the SDK documents;
nothing in the sidecar reaches a submodule as an attribute.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # importlib.abc imports importlib.resources (~15 ms): not at startup
    import ast
    from importlib.abc import Loader

# The packages (and their subpackages) taken name by name: the SDK's API types and resources.
DEFERRED_PACKAGES = ("anthropic.types", "anthropic.resources")
# Packages whose ``__init__`` imports, by name, a module the sidecar never uses: package → those modules
# (relative). ``anthropic.lib.foundry`` (the Azure AI Foundry client, not in ``anthropic.__all__``) builds
# the beta resources at import: ~1,100 modules and ~0.45 s of CPU of ``import anthropic``.
DEFERRED_IMPORTS: dict[str, tuple[str, ...]] = {"anthropic": ("lib.foundry",)}


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
        elif isinstance(node, ast.Assign) and _assigns_all(node):
            all_names = _literal_names(node.value)
            if all_names is None:
                return None
        else:
            return None
    if submodules & (names.keys() | set(future)):
        return None  # the name would be the submodule or the value depending on which import ran first
    return Reexports(names, all_names, doc, tuple(future))


def import_binding(namespace: dict[str, Any], name: str, submodule: str, original: str) -> Any:
    """What ``from .submodule import original as name`` does in the package whose namespace this is, run
    when ``name`` is first used: the import binds the submodule in the package (as the plain import did),
    ``original`` may itself be a submodule of it, and the value is kept in the package, as the plain import
    left it, so the next use finds it there."""
    source = __import__(submodule, namespace, None, (original,), 1)
    try:
        value = getattr(source, original)
    except AttributeError:
        value = sys.modules.get(f"{source.__name__}.{original}")
        if value is None:
            raise ImportError(f"cannot import name {original!r} from {source.__name__!r}",
                              name=source.__name__) from None
    namespace[name] = value
    return value


def _assigns_all(node: ast.Assign) -> bool:
    """``__all__ = …``, the one target."""
    import ast

    return len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "__all__"


def _literal_names(value: ast.expr) -> list[str] | None:
    """The names of an ``__all__`` written as a literal list or tuple of strings; None for anything else."""
    import ast

    try:
        names = ast.literal_eval(value)
    except ValueError:
        return None
    if not isinstance(names, (list, tuple)) or not all(isinstance(v, str) for v in names):
        return None
    return list(names)


class FirstUseLoader:
    """What both loaders share: the path finder's own loader behind them (source, resources and the rest are
    asked of it), a plain module, and the module ``__getattr__``/``__dir__`` that import a deferred name on
    its first use."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a plain module

    @staticmethod
    def bind_on_first_use(module: ModuleType, names: dict[str, tuple[str, str]],
                          missing: Callable[[str], None] | None = None) -> None:
        """``module``'s hooks: a name of ``names`` (→ its submodule and the name there) is imported when first
        used; ``missing`` sees any other name asked for before the AttributeError."""
        namespace = module.__dict__
        package = module.__name__

        def __getattr__(name: str) -> Any:
            where = names.get(name)
            if where is None:
                if missing is not None:
                    missing(name)
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            return import_binding(namespace, name, *where)

        def __dir__() -> list[str]:
            return sorted(namespace.keys() | names.keys())

        namespace["__getattr__"] = __getattr__
        namespace["__dir__"] = __dir__

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, get_resource_reader, is_package …
        return getattr(self.loader, name)


class ReexportLoader(FirstUseLoader):
    """Makes a re-export package whose names are imported on first use (module ``__getattr__``)."""

    def __init__(self, loader: Any, reexports: Reexports) -> None:
        super().__init__(loader)
        self.reexports = reexports

    def exec_module(self, module: ModuleType) -> None:
        reexports = self.reexports
        namespace = module.__dict__
        if reexports.doc is not None:
            namespace["__doc__"] = reexports.doc
        if reexports.all is not None:
            namespace["__all__"] = list(reexports.all)
        for feature in reexports.future:
            namespace[feature] = getattr(__import__("__future__"), feature)

        def missing(name: str) -> None:
            if name == "__all__":  # a star import without ``__all__`` takes every public name there is
                for each in reexports.names:
                    getattr(module, each)

        self.bind_on_first_use(module, reexports.names, missing)


class DeferredImports:
    """A package ``__init__`` without the named imports it makes of modules the sidecar never uses."""

    __slots__ = ("names", "tree")

    def __init__(self, tree: ast.Module, names: dict[str, tuple[str, str]]) -> None:
        self.tree = tree  # the ``__init__`` as parsed, those statements taken out
        self.names = names  # each name they bound → (the submodule, relative, and the name imported from it)


def read_deferred_imports(source: str, submodules: Sequence[str]) -> DeferredImports | None:
    """The ``__init__`` without its top-level ``from .submodule import Name as Name`` statements (explicit
    names, ``submodule`` one of ``submodules``); None (import it as it is) when there is none, or when taking
    one out could change what the ``__init__`` does: a deferred name the ``__init__`` uses, binds again or
    lists in ``__all__``, an ``__all__`` that is not a plain literal, or an ``__getattr__``/``__dir__`` of its
    own."""
    import ast  # the warm-up thread, when the SDK is imported

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names: dict[str, tuple[str, str]] = {}
    kept: list[ast.stmt] = []
    exported: set[str] = set()
    literal_all: set[int] = set()  # the ``__all__`` names that are a top-level literal assignment's target
    for statement in tree.body:
        if (isinstance(statement, ast.ImportFrom) and statement.level == 1 and statement.module
                and statement.module in submodules and all(alias.name != "*" for alias in statement.names)):
            for alias in statement.names:
                names[alias.asname or alias.name] = (statement.module, alias.name)
            continue
        kept.append(statement)
        if isinstance(statement, ast.Assign) and _assigns_all(statement):
            listed = _literal_names(statement.value)
            if listed is None:
                return None
            exported |= set(listed)
            literal_all.add(id(statement.targets[0]))
    if not names or names.keys() & exported:
        return None
    if names.keys() & {module.partition(".")[0] for module, _ in names.values()}:
        return None  # the name would be the submodule or the value depending on which import ran first
    tree.body = kept
    special = {"__getattr__", "__dir__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id in names or node.id in special:
                return None  # the rest of the __init__ uses or binds a deferred name, or has its own hooks
            if node.id == "__all__" and isinstance(node.ctx, ast.Store) and id(node) not in literal_all:
                return None  # ``__all__ += …`` or another binding: what it exports is not read off the source
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "__all__":
            return None  # ``__all__.extend(…)``
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in names or node.name in special:
                return None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name).partition(".")[0] in names.keys() | special for alias in node.names):
                return None
    return DeferredImports(tree, names)


class DeferredImportsLoader(FirstUseLoader):
    """Runs a package's ``__init__`` without its deferred named imports; a deferred name, first used,
    imports its module then (module ``__getattr__``)."""

    def __init__(self, loader: Any, deferred: DeferredImports) -> None:
        super().__init__(loader)
        self.deferred = deferred

    def exec_module(self, module: ModuleType) -> None:
        # Before the __init__ runs: a module it imports may import a deferred name from the package.
        self.bind_on_first_use(module, self.deferred.names)
        # The original file name keeps tracebacks' lines; dont_inherit: this module's own __future__ imports
        # must not apply to the SDK's code.
        origin = module.__spec__.origin if module.__spec__ is not None else None
        code = compile(self.deferred.tree, origin or "<unknown>", "exec", dont_inherit=True)
        exec(code, module.__dict__)  # the SDK's own __init__, as the path finder found it


class ReexportFinder:
    """A ``sys.meta_path`` finder for the packages under ``prefixes`` and those in ``imports``: a re-export
    package gets a ``ReexportLoader``, a package with deferrable imports a ``DeferredImportsLoader``; any
    other module there the path finder's spec, unchanged."""

    def __init__(self, prefixes: Sequence[str] = DEFERRED_PACKAGES,
                 imports: dict[str, tuple[str, ...]] | None = None) -> None:
        self.prefixes = tuple(prefixes)
        self.imports = DEFERRED_IMPORTS if imports is None else imports

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        deferred_modules = self.imports.get(fullname)
        if deferred_modules is None and not any(fullname == p or fullname.startswith(p + ".")
                                                for p in self.prefixes):
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
        if source is None:
            return spec
        if deferred_modules is not None:
            deferred = read_deferred_imports(source, deferred_modules)
            if deferred is not None:
                spec.loader = cast("Loader", DeferredImportsLoader(spec.loader, deferred))
            return spec
        reexports = read_reexports(source)
        if reexports is not None:
            spec.loader = cast("Loader", ReexportLoader(spec.loader, reexports))  # a loader by protocol
        return spec


def defer_sdk_packages() -> None:
    """Install the finder, once (``sidecar.model`` does, before anything imports the SDK). A package
    the SDK already imported stays as it was."""
    if not any(isinstance(finder, ReexportFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, ReexportFinder())
