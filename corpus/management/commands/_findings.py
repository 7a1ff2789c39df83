def format_finding(finding: dict) -> str:
    where = f"{finding['file']}:{finding['line']}" if finding.get("line") else finding["file"]
    text = f"{where}: {finding['severity']}: {finding['message']} [{finding['code']}]"
    if finding.get("suggestion"):
        text += f"\n    fix: {finding['suggestion']}"
    return text
