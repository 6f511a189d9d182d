.PHONY: setup demo test test-fast

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
