# Partition-tolerance suite (jepsen-style-tests/). The top Makefile
# includes this file; every target needs root and a built bin/kudurru.
#
#   make jepsen              every scenario (about 15 minutes)
#   make jepsen-quick        one partition, one kill-restart, one cold start (< 4 minutes; CI)
#   make jepsen-unit         the checkers' unit tests (no root)
#   make jepsen-repro-NAME   the reproduction of a bug the suite found
#
# Knobs (environment): KUDURRU_JEPSEN_SET, KUDURRU_JEPSEN_SEED,
# KUDURRU_JEPSEN_KEEP=1, KUDURRU_JEPSEN_CONVERGENCE, KUDURRU_JEPSEN_HOLD,
# KUDURRU_JEPSEN_OUT; see docs/PARTITIONS.md.

JEPSEN_DIR     := jepsen-style-tests
comma          := ,
empty          :=
space          := $(empty) $(empty)
JEPSEN_TIMEOUT ?= 40m
# $(call jepsen_run,SET,TIMEOUT[,ENV]): run the scenarios of SET (all, quick,
# or names) from inside the suite's own module, with extra ENV assignments.
jepsen_run = cd $(JEPSEN_DIR) && KUDURRU_JEPSEN=1 KUDURRU_BIN=$(abspath $(BIN)) KUDURRU_JEPSEN_SET='$(1)' $(3) \
	$(GO) test -count=1 -v -run '^TestScenarios$$' -timeout $(2) .

.PHONY: jepsen jepsen-quick jepsen-unit jepsen-root jepsen-repro-serial-after-crash jepsen-repro-cas-after-election

jepsen-root:
	@if [ "$$(id -u)" != 0 ]; then \
	  echo "jepsen: the partition suite needs root (network namespaces, veth, iptables): run sudo make $(MAKECMDGOALS)" >&2; exit 1; fi

jepsen: jepsen-root deps build ## partition suite: every scenario in network namespaces (root, minutes)
	$(call jepsen_run,$(or $(KUDURRU_JEPSEN_SET),all),$(JEPSEN_TIMEOUT))

jepsen-quick: jepsen-root deps build ## partition suite, short set for CI: a partition, a kill-restart, a cold start (root)
	$(call jepsen_run,quick,10m)

jepsen-unit: ## the partition suite's checker unit tests (no root)
	cd $(JEPSEN_DIR) && $(GO) test -count=1 ./...

# Reproduction targets: one per bug the suite found. Each runs the smallest
# scenario set that shows it and keeps every artifact; it fails while the
# bug is there.

# I2: a node restarted after SIGKILL serves its debounced local.db copy,
# whose SOA serial is lower than the one it served before the crash.
jepsen-repro-serial-after-crash: jepsen-root build ## repro: SOA serial goes down after SIGKILL + restart (I2)
	$(call jepsen_run,kill-restart$(comma)cold-start,10m,KUDURRU_JEPSEN_KEEP=1)

# linearizable: a compare-and-set answered 409 precondition_failed although
# its expected value was the current one. A newly elected leader prechecked
# writes against a View that lacked writes the previous leader had
# acknowledged: its commit index lagged too, so applied == commit did not
# show it as stale. It takes a race: the node started alone lacks the
# last acknowledged write, wins the election when the others return, and
# gets a compare-and-set on that key before its barrier. Before the fix it
# showed in one cold-start run of eleven, so the target runs cold-start ten
# times (about 5 minutes) and may still pass by luck.
jepsen-repro-cas-after-election: jepsen-root build ## repro: false 409 on a CAS right after an election (linearizable)
	$(call jepsen_run,$(subst $(space),$(comma),$(strip $(foreach i,1 2 3 4 5 6 7 8 9 10,cold-start))),30m,KUDURRU_JEPSEN_KEEP=1)
