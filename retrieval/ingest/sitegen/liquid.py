"""Jekyll: Liquid tags and output, kramdown attribute lists.

Jekyll runs Liquid over the whole page before markdown, code blocks included (except inside
`{% raw %}`), so tags are read everywhere: `{% highlight x %}` becomes a code fence, a link tag
its target, control flow (`if`, `for`, `capture`...) and output (`{{ site.title }}`) vanish, as their
values live in the site's configuration and data files. Kramdown's `{: .class}` lines vanish.
"""

from __future__ import annotations

import re

from .includes import include
from .lines import Page, drop_heading_attrs, drop_html_comments

TAG = re.compile(r"\{%-?\s*(?P<name>\w+)(?P<args>.*?)-?%\}", re.DOTALL)
OUTPUT = re.compile(r"\{\{-?.*?-?\}\}", re.DOTALL)
IAL = re.compile(r"^[ \t]*\{:[^}]*\}[ \t]*$")
INLINE_IAL = re.compile(r"\{:[^}\n]*\}")
CONTROL = {"if", "elsif", "else", "endif", "unless", "endunless", "for", "endfor", "case", "when", "endcase",
           "capture", "endcapture", "assign", "increment", "decrement", "comment", "endcomment", "cycle",
           "tablerow", "endtablerow", "break", "continue", "seo", "feed_meta", "endraw"}
RAW = re.compile(r"\{%-?\s*raw\s*-?%\}(?P<body>.*?)\{%-?\s*endraw\s*-?%\}", re.DOTALL)
INCLUDES = {"include", "include_relative"}


def clean(page: Page) -> None:
    code = page.code_lines()
    raw: set[int] = set()
    text = "\n".join(page.lines[page.body:])
    for match in RAW.finditer(text):
        first = page.body + text.count("\n", 0, match.start())
        raw.update(range(first, first + match.group(0).count("\n") + 1))
    page.substitute(re.compile(r"\{%-?\s*(?:raw|endraw)\s*-?%\}"), lambda m, _line: "")
    page.substitute(TAG, lambda m, line: _tag(page, m, line), skip=raw)
    page.substitute(OUTPUT, lambda m, _line: "", skip=raw | code)
    for n in range(page.body, len(page.lines)):
        if n not in code and "{:" in page.lines[n]:
            page.lines[n] = "" if IAL.match(page.lines[n]) else INLINE_IAL.sub("", page.lines[n]).rstrip()
    drop_html_comments(page, code)
    drop_heading_attrs(page, code)


def _tag(page: Page, match: re.Match, line: int) -> str:
    name, args = match.group("name"), match.group("args").strip()
    if name == "highlight":
        return "```" + (args.split()[0] if args else "")
    if name == "endhighlight":
        return "```"
    if name in ("link", "post_url"):
        return args.split()[0] if args else ""
    if name in INCLUDES:
        return include(page, args.split()[0] if args else "", line, f"liquid {name}", f"{{% {name} %}}")
    if name not in CONTROL:
        page.notice(f"liquid tag {name}", line, f"Liquid tag {{% {name} %}} is not one docsmcp knows: it is dropped",
                    "see docs/generators.md for the tags docsmcp reads")
    return ""
