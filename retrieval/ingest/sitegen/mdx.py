"""MDX (Docusaurus, and any `.mdx` page): ES module lines, JSX components, `:::` admonitions.

No maintained Python parser reads MDX, so its block grammar is followed by line
(https://mdxjs.com/docs/what-is-mdx/): `import` and `export` statements at the top level of the
page vanish, brace-balanced over several lines; `{/* comments */}` vanish; a capitalised JSX
element (`<Tabs>`, `<TabItem label="Linux">`) is a component: tabs become sub-sections, an
admonition component a labelled paragraph, any other component's tags go and what it wraps stays
(one finding per component). Lower-case tags are HTML, which markdown keeps. Docusaurus's
`:::note` admonitions are read in `directives`.
"""

from __future__ import annotations

import re

from .directives import clean as read_directives
from .lines import Page, args_of, drop_heading_attrs, drop_html_comments

ESM = re.compile(r"^(?:import|export)(?:[\s{*]|$)")
MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}", re.DOTALL)
# Attribute values may hold an object or array literal one level deep: `values={[{label: 'React'}]}`.
COMPONENT = re.compile(r"<(?P<close>/)?(?P<name>[A-Z][\w.]*)(?P<attrs>(?:\"[^\"]*\"|'[^']*'|\{(?:[^{}]|\{[^{}]*\})*\}|"
                       r"[^<>\"'{}/])*)"
                       r"(?P<self>/)?>")
TAB_ITEMS = {"TabItem", "Tab", "Tabs.Tab", "Tabs.Item"}
CONTAINERS = {"Tabs", "TabGroup"}
# Docusaurus theme components that only render the site around the page (a sidebar's cards, a table
# of contents, head tags): nothing of the page's text is in them.
SITE_ONLY = {"DocCardList", "TOCInline", "Head", "DocSidebar", "BrowserOnly", "Redirect", "DocsRating"}
# An HTML element written with JSX attributes (`className="x"`, `src={useBaseUrl(...)}`, `style={{...}}`) is
# JSX syntax a reader never sees: its tag goes, an image keeps its alt text (an iframe its title), what
# it wraps stays.
ELEMENT = re.compile(r"<(?P<name>[a-z][a-z0-9]*)(?P<attrs>(?:\s+(?:[\w:-]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|"
                     r"\{(?:[^{}]|\{[^{}]*\})*\}))?|\{[^{}]*\}))+)\s*(?P<self>/)?>")
JSX_ATTRS = re.compile(r"\bclassName\s*=|=\s*\{")
CALLOUTS = {"Admonition", "Callout", "Note", "Tip", "Warning", "Caution", "Danger", "Info", "Important"}


def clean(page: Page, *, docusaurus: bool = True) -> None:
    code = page.code_lines()
    _esm(page, code)
    page.substitute(MDX_COMMENT, lambda m, _line: "", skip=code, spans=True)
    page.substitute(COMPONENT, lambda m, line: _component(page, m, line), skip=code, spans=True)
    written: set[str] = set()  # elements written with JSX attributes: their closing tags go too
    page.substitute(ELEMENT, lambda m, _line: _element(m, written), skip=code, spans=True)
    if written:
        closing = re.compile(rf"</(?:{'|'.join(sorted(written))})\s*>")
        page.substitute(closing, lambda m, _line: "", skip=code, spans=True)
    read_directives(page, docusaurus=docusaurus)
    code = page.code_lines()
    drop_html_comments(page, code)
    drop_heading_attrs(page, code)


def _esm(page: Page, code: set[int]) -> None:
    """Blank `import`/`export` statements; a statement runs on until its braces and brackets close."""
    n = page.body
    while n < len(page.lines):
        if n in code or not ESM.match(page.lines[n]):
            n += 1
            continue
        depth = 0
        while n < len(page.lines):
            line = page.lines[n]
            depth += sum(line.count(c) for c in "{[(") - sum(line.count(c) for c in "}])")
            page.lines[n] = ""
            n += 1
            if depth <= 0 and not line.rstrip().endswith((",", "=", "(", "{", "[")):
                break


def _element(match: re.Match, written: set[str]) -> str:
    if not JSX_ATTRS.search(match.group("attrs")):
        return match.group(0)  # HTML as markdown keeps it
    written.add(match.group("name"))
    _positional, attrs = args_of(match.group("attrs").replace("'", '"'))
    text = attrs.get("alt") or attrs.get("title") or ""  # an image's alt text, a video's title
    return "" if text.startswith("{") else text  # `alt={photo.name}`: a value only the page's code knows


def _component(page: Page, match: re.Match, line: int) -> str:
    name, closing = match.group("name"), bool(match.group("close"))
    if closing:
        return ""
    _positional, attrs = args_of(match.group("attrs").replace("'", '"'))
    alone = page.lines[line].strip() == match.group(0).strip() and not page.lines[line].startswith((" ", "\t"))
    if name in TAB_ITEMS:
        title = attrs.get("label") or attrs.get("title") or attrs.get("value") or ""
        if not title:
            return ""
        return page.sub_heading(line, title) if alone else f"{title}:"
    if name in CONTAINERS or name in SITE_ONLY:
        return ""
    if name in CALLOUTS:
        kind = attrs.get("type") or (name if name != "Admonition" else "note")
        label = kind.capitalize()
        title = attrs.get("title")
        return f"{label}: {title}" if title else f"{label}:"
    page.notice(f"component {name}", line, f"JSX component <{name}> is not one docsmcp knows: its tags are "
                "dropped" + ("" if match.group("self") else ", what it wraps kept"),
                "see docs/generators.md for the components docsmcp reads")
    return ""
