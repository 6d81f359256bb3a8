"""Draw spmdlab's import graph as Graphviz DOT, from the structure test's own reading of
the source (imports inside functions included, dashed):

    python .ci/import_graph.py | dot -Tsvg -o imports.svg            # packages and layers
    python .ci/import_graph.py --modules | dot -Tsvg -o modules.svg  # every module

Packages are drawn in their layer's row (docs/design.md, "Packages and layers"); an
arrow points from the importer to what it imports, so every arrow points down."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.join(HERE, "..", "tests", "package")]

import test_structure as structure  # noqa: E402


def main(modules: bool) -> None:
    mods = structure.load_modules()
    edges = {name: structure.module_imports(name, tree, path.endswith("__init__.py"), set(mods))
             for name, (tree, path) in mods.items()}
    node = (lambda m: m) if modules else structure.group
    arrows: dict = {}
    for m, t, _, top in structure.internal(edges):
        a, b = node(m), node(t)
        if a != b:
            arrows[(a, b)] = arrows.get((a, b), False) or top
    print("digraph spmdlab {\n  rankdir=TB; node [shape=box, fontname=Helvetica];")
    for layer in sorted(set(structure.LAYER.values()), reverse=True):
        groups = [g for g, k in structure.LAYER.items() if k == layer]
        names = sorted({node(m) for m in mods if structure.group(m) in groups})
        label = f"layer {layer}: {' '.join(groups)}"
        print(f'  subgraph cluster_{layer} {{ label="{label}"; rank=same; '
              + " ".join(f'"{n}";' for n in names) + " }")
    for (a, b), top in sorted(arrows.items()):
        print(f'  "{a}" -> "{b}"' + ("" if top else " [style=dashed]") + ";")
    print("}")


if __name__ == "__main__":
    main("--modules" in sys.argv[1:])
