from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def awbench_dir() -> Path:
    return FIXTURES / "awbench"
