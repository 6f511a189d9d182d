.PHONY: setup demo test test-fast lint

setup:
	bash scripts/setup.sh

# Install, then run the main job end to end.
demo: setup
	bash scripts/demo.sh

# Install, then run the whole test suite.
test: setup
	python3 -m pytest -q

test-fast:
	python3 -m pytest -q -m "not slow"

# Imports, pyflakes, bugbear and complexity (configured in pyproject.toml).
lint:
	python3 -m ruff check src tests benchmarks scripts examples
