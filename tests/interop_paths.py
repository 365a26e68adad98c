"""Where the other projects' interop captures are (shared/interop/README.md): ``shared/interop``
beside this repository's checkout, as .ci/run has it (CI clones the repository into some folder X
and puts shared/ beside it: X/../shared/interop), or the folder the environment variable
``UET_INTEROP_DIR`` names (the one holding roce/ and xdp2/). The one definition every test that
reads them uses; those tests skip, saying where they looked, when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
INTEROP = Path(os.environ.get("UET_INTEROP_DIR") or REPO.parent / "shared" / "interop")
ABSENT = (f"the interop captures are not at {INTEROP} (shared/interop beside the checkout, "
          "or the folder UET_INTEROP_DIR names)")

needs_interop = pytest.mark.skipif(not INTEROP.is_dir(), reason=ABSENT)


def interop_file(*parts: str) -> Path:
    """``INTEROP / parts``; the calling test skips, saying so, when the file is absent."""
    path = INTEROP.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"{path} is absent: {ABSENT}")
    return path
