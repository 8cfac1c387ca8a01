"""Splits a file of SQL into its statements, for ``segment-lake sql -f``."""
from __future__ import annotations


def sql_statements(text: str) -> list[str]:
    """The statements of ``text``, each ended by ';' outside quotes and comments, stripped; empty ones dropped."""
    statements, current, quote, index = [], [], None, 0
    while index < len(text):
        char = text[index]
        if quote:
            current.append(char)
            if char == "\\" and quote != "`" and index + 1 < len(text):
                current.append(text[index + 1])
                index += 1
            elif char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
            current.append(char)
        elif text.startswith(("--", "/*"), index):  # a comment: to the end of its line, or past its */
            line_comment = text.startswith("--", index)
            end = text.find("\n" if line_comment else "*/", index + 2)
            index = len(text) if end < 0 else end + (0 if line_comment else 2)
            continue
        elif char == ";":
            statements.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        index += 1
    statements.append("".join(current).strip())
    return [statement for statement in statements if statement]
