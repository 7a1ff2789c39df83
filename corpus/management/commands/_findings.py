REPEATED = 3  # a warning met on more pages than this is told once, with its count


def format_finding(finding: dict) -> str:
    where = f"{finding['file']}:{finding['line']}" if finding.get("line") else finding["file"]
    text = f"{where}: {finding['severity']}: {finding['message']} [{finding['code']}]"
    if finding.get("suggestion"):
        text += f"\n    fix: {finding['suggestion']}"
    return text


def finding_lines(findings: list[dict], *, every_warning: bool = False, errors: bool = True) -> list[str]:
    """Errors one by one; a warning repeated on many pages (one `strategy-default` per page of a
    folder with no manifest) as one line with its count and the first pages, unless `every_warning`."""
    lines = [format_finding(f) for f in findings if f["severity"] == "error"] if errors else []
    warnings = [f for f in findings if f["severity"] != "error"]
    by_code: dict[tuple[str, str], list[dict]] = {}
    for finding in warnings:
        by_code.setdefault((finding["code"], finding.get("kind", "")), []).append(finding)
    for (code, kind), group in by_code.items():
        if every_warning or len(group) <= REPEATED:
            lines.extend(format_finding(f) for f in group)
            continue
        files = sorted({f["file"] for f in group})
        first = group[0]
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        what = f"{code} ({kind})" if kind else code
        text = f"warning: {what} x{len(group)} on {len(files)} page(s) ({shown}): e.g. {first['message']}"
        if first.get("suggestion"):
            text += f"\n    fix: {first['suggestion']}"
        lines.append(text)
    return lines


def left_out_line(stats: dict) -> str:
    """`4 page(s) left out for errors (frontmatter-invalid 4)`, or "" when none was."""
    count = stats.get("left_out_files") or 0
    if not count:
        return ""
    reasons = ", ".join(f"{code} {n}" for code, n in (stats.get("left_out") or {}).items())
    return (f"{count} page(s) left out for errors ({reasons}); the errors above say what to fix "
            "(--strict fails the build instead)")
