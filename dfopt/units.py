"""Units as dfopt prints them: bytes with IEC prefixes (1 KiB = 1024 bytes).

>>> format_bytes(512), format_bytes(1536), format_bytes(3 * 2**20), format_bytes(2**40)
('512 B', '1.50 KiB', '3.00 MiB', '1.00 TiB')
"""

from __future__ import annotations

_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def format_bytes(n: float) -> str:
    """``n`` bytes with the largest IEC unit it reaches (two decimals), or in bytes below 1 KiB."""
    n = float(n)
    for unit, size in _UNITS:
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:g} B"
