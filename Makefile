# Every target is a thin wrapper over scripts/; the scripts are what CI and the README use.
.PHONY: demo test setup lint bench clean

demo:
	scripts/demo.sh

test:
	scripts/test.sh

setup:
	scripts/setup.sh

lint: setup
	.venv/bin/ruff check .

bench:
	scripts/bench.sh

clean:
	rm -rf .venv .setup-stamp build dist out *.egg-info .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
