# lakeconnect: machine set-up, test services, tests and the demo. Logic lives in tests/services/*.sh.
.PHONY: setup services-up services-down test demo

PYTEST_ARGS ?=

setup:
	bash tests/services/setup.sh

services-up:
	bash tests/services/up.sh

services-down:
	bash tests/services/down.sh

# services-down always runs (also when up.sh or pytest fails); the exit status is pytest's.
# tests/services/pytest.sh: most tests on two workers, then the MySQL CDC tests alone.
test: setup
	@trap 'bash tests/services/down.sh' EXIT; trap 'exit 130' INT TERM; \
	bash tests/services/up.sh && bash tests/services/pytest.sh $(PYTEST_ARGS)

# The demo needs nothing from Maven: the base set-up only.
demo:
	bash tests/services/setup.sh --base
	.venv/bin/lakeconnect demo
