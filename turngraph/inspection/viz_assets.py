"""The graph view's JavaScript and CSS, written once per folder instead of once per page.

``neo4j-viz`` renders a page of about 4.4 MB: its whole NVL bundle (JS and CSS) inlined
around a small JSON data block. ``turngraph graph show`` keeps the data block and moves
the bundle into two files next to the page, named by their content hash
(``turngraph-viz-<hash>.js`` / ``.css``): every page in a folder shares them, a page is
its data only. Two changes make the bundle load from a ``file://`` page, where browsers
refuse ES module scripts: it runs as a classic deferred script, so its two
``import.meta.url`` (used only to locate optional layout workers, which fall back to the
main thread) become ``document.baseURI``; and the per-render container id goes back to
the template's fixed one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

CONTAINER_ID = "neo4j-viz-container"
"""The element the bundle renders into (the template's own id)."""

# The block neo4j-viz injects (the template's own comment names the tag too: skip it).
_DATA = re.compile(r'<script type="application/json" id="neo4j-viz-data">\{.*?</script>', re.S)
_MODULE = re.compile(r'<script type="module" crossorigin>(.*?)</script>\s*<style', re.S)
_STYLE = re.compile(r"<style rel=\"stylesheet\" crossorigin>(.*?)</style>", re.S)
_RENDER_ID = re.compile(r"neo4j-viz-[0-9a-f]{12}")


class VizTemplateError(RuntimeError):
    """The installed neo4j-viz renders a page this module does not know how to split."""


@dataclass(frozen=True)
class SplitPage:
    """A rendered neo4j-viz page taken apart."""

    data_block: str
    script: str
    style: str

    @property
    def digest(self) -> str:
        """Short content hash naming the asset files."""
        return hashlib.sha256((self.script + self.style).encode()).hexdigest()[:12]


def split_page(page: str) -> SplitPage:
    """The data block, the bundle (as a classic script) and the CSS of a rendered page."""
    data = _DATA.search(page)
    module = _MODULE.search(page)
    style = _STYLE.search(page)
    if data is None or module is None or style is None:
        raise VizTemplateError(
            "this neo4j-viz version renders an unknown page layout: use --self-contained"
        )
    script = _RENDER_ID.sub(CONTAINER_ID, module.group(1))
    script = script.replace("import.meta.url", "document.baseURI")
    return SplitPage(
        data_block=_RENDER_ID.sub(CONTAINER_ID, data.group(0)),
        script=script,
        style=style.group(1),
    )


def write_assets(split: SplitPage, folder: Path) -> tuple[str, str]:
    """Write the bundle's two files into ``folder`` unless they are there already; returns
    their names (relative to a page in ``folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = (f"turngraph-viz-{split.digest}.js", f"turngraph-viz-{split.digest}.css")
    for name, text in zip(names, (split.script, split.style), strict=True):
        path = folder / name
        if not path.exists():
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
    return names
