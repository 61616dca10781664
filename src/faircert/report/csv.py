"""CSV cells a spreadsheet shows as text, whatever the data's names and values hold."""

from __future__ import annotations

#: First characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection").
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """Text a spreadsheet shows as text: a leading formula character is escaped with a quote."""
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def safe_frame(frame):
    """A DataFrame whose text cells and column names a spreadsheet shows as text."""
    import pandas as pd

    frame = frame.rename(columns=lambda c: spreadsheet_safe(str(c)))
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column]):  # object or string columns
            frame[column] = [spreadsheet_safe(v) if isinstance(v, str) else v for v in frame[column]]
    return frame
