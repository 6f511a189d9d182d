from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def awbench_dir() -> Path:
    return FIXTURES / "awbench"


@pytest.fixture
def sandbox_tmp(tmp_path: Path) -> Path:
    """A private temp folder that sandboxes may live under: the sandbox's unprivileged uid
    must be able to walk down to it (o+x on pytest's 0700 folders)."""
    for d in (tmp_path, *tmp_path.parents[:2]):
        d.chmod(0o711)
    return tmp_path
