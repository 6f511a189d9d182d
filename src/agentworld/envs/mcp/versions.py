"""Keep library versions out of recorded MCP observations.

Python MCP servers validate arguments with pydantic, whose messages link to
``https://errors.pydantic.dev/<pydantic version>/v/<error>``: the same call would record
different ground truth on a machine with another pydantic, and replays would stop
matching after an upgrade. The version segment is replaced by ``latest`` at record time.
"""

from __future__ import annotations

import re

_PYDANTIC_ERROR_URL = re.compile(r"(https?://errors\.pydantic\.dev/)v?\d+(?:\.\d+)*(?=/)")


def unversioned(text: str) -> str:
    """``text`` with library-versioned documentation links made version-free."""
    return _PYDANTIC_ERROR_URL.sub(r"\1latest", text)
