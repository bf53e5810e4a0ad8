# lin-operator. `make run` runs the operator against a local control plane it
# starts itself (or against CLUSTER_KUBECONFIG); `make test` runs every test
# but the reliability scenarios and the fuzzer, which `make test-chaos` runs.

SHELL := /bin/bash
GO ?= go
BIN := bin/lin-operator
# The one build command of the operator binary; the Dockerfile uses the same.
GO_BUILD := CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w"
# A kubeconfig of a cluster to run against instead of the local one.
CLUSTER_KUBECONFIG ?=
# `make run NODE=real` runs against a cluster with one real node (containerd,
# kubelet; Linux and root) instead of the kwok one.
NODE ?=
# Extra flags for the operator in `make run`, e.g. RUN_ARGS="-v=4 --workers 8".
RUN_ARGS ?=
# Where `make run` and `make cluster-up` keep the local control plane.
STATE_DIR := .state/cluster
# `make image` builds the operator's OCI image for IMAGE_PLATFORMS with no
# container engine (cmd/image): into the OCI image layout bin/image, or, when
# IMAGE names one (registry/repository:tag), pushed there with the
# credentials of `docker login`. VERSION and REVISION become its labels.
IMAGE ?=
IMAGE_PLATFORMS := linux/amd64 linux/arm64
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
# `make docker-image` builds the Dockerfile instead, tagged DOCKER_IMAGE, with
# CONTAINER_TOOL (docker or podman).
DOCKER_IMAGE ?= lin-operator:latest
CONTAINER_TOOL ?= docker

.PHONY: all build image docker-image tools test test-unit verify generate run cluster-up cluster-down clean clean-tools

all: build

## build: the operator binary in bin/.
build:
	$(GO_BUILD) -o $(BIN) ./cmd/operator

## image: the operator's OCI image for IMAGE_PLATFORMS, each binary built
## with GO_BUILD, in bin/image or pushed to $(IMAGE); no Docker needed.
image:
	@for p in $(IMAGE_PLATFORMS); do \
		echo "go build for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO_BUILD) -o bin/$$p/lin-operator ./cmd/operator || exit 1; \
	done
	$(GO) run ./cmd/image $(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=bin/$(p)/lin-operator) \
		-version "$(VERSION)" -revision "$(REVISION)" $(if $(IMAGE),-image "$(IMAGE)",-out bin/image)

## docker-image: the image from the Dockerfile, tagged $(DOCKER_IMAGE), for those with Docker or Podman.
docker-image:
	$(CONTAINER_TOOL) build -t $(DOCKER_IMAGE) .

## plugin: the kubectl plugin kubectl-lin for linux and darwin on amd64 and
## arm64, as the tar.gz archives that krew installs, and their krew manifest
## (plugins/lin.yaml filled in), into bin/plugin; VERSION must be a
## release's, vX.Y.Z.
.PHONY: plugin
plugin:
	$(GO) run ./hack/pluginrelease -version "$(VERSION)" -out bin/plugin

## tools: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
## kwok, helm and the real node's kubelet, kube-proxy, containerd and CoreDNS,
## built once into the cache folder (see hack/build-tools.sh).
tools:
	@hack/build-tools.sh >/dev/null

## node-deps: what the real node takes from Debian (runc, the CNI plugins,
## iptables, conntrack), installed when missing; needs root. Without root
## the real-node tests skip, except under CI=true.
.PHONY: node-deps
node-deps:
	@hack/install-node-deps.sh || [ "$${CI:-}" != true ]

# client-go's cache mutation detector (a change to an object in an informer's
# cache panics) and watch-list consistency detector (an informer whose
# streamed list differs from a LIST at the same resourceVersion panics), on
# in every test; test/harness turns them on in the operators it starts too.
test test-unit test-chaos: export KUBE_CACHE_MUTATION_DETECTOR := true
test test-unit test-chaos: export KUBE_WATCHLIST_INCONSISTENCY_DETECTOR := true

## test: every test but test-chaos's; the integration tests run a real control plane, and
## test/node and test/apps a real node (containerd, kubelet; Linux and root,
## else they skip saying why, except under CI=true). test/apps runs alone,
## after the others: its clients time every write to etcd and shardapp, and
## other test packages on the same cores would slow the applications. It
## runs with -v: each scenario prints its figures.
test: tools node-deps
	LIN_TOOLS_BIN="$$(hack/build-tools.sh 2>/dev/null)" $(GO) test -count=1 -timeout 60m $$($(GO) list ./... | grep -vx 'lin.dev/lin-operator/test/apps')
	LIN_TOOLS_BIN="$$(hack/build-tools.sh 2>/dev/null)" $(GO) test -count=1 -timeout 30m -v ./test/apps

## test-unit: the tests that need no control plane, wherever they are.
test-unit:
	$(GO) test -count=1 ./pkg/... ./cmd/... ./test/harness/ ./examples/...

## test-chaos: the reliability scenarios of test/chaos (kube-apiserver restarts,
## etcd compaction, SIGKILL of the operator, concurrent writers, each under a
## guard of the PVCs), then the fuzzer of test/fuzz for $(FUZZTIME); about 6
## minutes. Its bad-input table already ran in `make test`. Minimizing each
## new input would take most of a short fuzz run, since every input costs
## requests to the API server, so it is off: a failure shows the input found.
FUZZTIME ?= 60s
.PHONY: test-chaos
test-chaos: tools
	LIN_TOOLS_BIN="$$(hack/build-tools.sh 2>/dev/null)" $(GO) test -count=1 -timeout 30m -tags chaos -skip '^TestBadInstallations$$' ./test/chaos/
	LIN_TOOLS_BIN="$$(hack/build-tools.sh 2>/dev/null)" $(GO) test -count=1 -timeout 10m -run '^$$' \
		-fuzz FuzzRenderedChildrenAreAccepted -fuzztime $(FUZZTIME) -fuzzminimizetime 0 ./test/fuzz/

## bench: measures the operator and its controller-runtime peer
## (cmd/bench/peer) against a local control plane (etcd with fsync) next to a
## plain client writing the same objects, at N = 100 and 1000 Installations
## of one shard and 1000 of four (3 rounds at N=1000), and
## writes docs/benchmarks.md (with docs/benchmarks-notes.md), docs/benchmarks.json
## and the plots beside them, with the top of the operator's CPU profile at
## N=1000 (the profile itself stays in .state/bench); under 30 minutes.
## BENCH_ARGS="-runs 50:1 -rounds 1" for a quick one, "-large" to add
## N=5000 and 10000 (about 35 minutes more), "-render" to write the Markdown
## again from the JSON.
BENCH_PROFILE := .state/bench/operator.cpu.pprof
.PHONY: bench
bench: tools
	@mkdir -p $(dir $(BENCH_PROFILE))
	LIN_TOOLS_BIN="$$(hack/build-tools.sh 2>/dev/null)" $(GO) run ./cmd/bench -cpuprofile $(BENCH_PROFILE) $(BENCH_ARGS)

## verify: generated code up to date, gofmt, go vet (of the benchmark's
## controller-runtime peer too, a module of its own), tidy modules.
verify:
	hack/verify-codegen.sh
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	$(GO) vet ./...
	cd cmd/bench/peer && $(GO) vet ./...
	hack/verify-tidy.sh

## generate: regenerate deepcopy, clientset, listers, informers, apply configurations and CRDs.
generate:
	hack/update-codegen.sh

## run: the operator in the foreground against the local control plane (started
## when needed, stopped on exit unless `make cluster-up` started it) or CLUSTER_KUBECONFIG;
## with NODE=real, against a cluster with one real node (hack/node-shell.sh reaches it).
run: build
	@CLUSTER_KUBECONFIG="$(CLUSTER_KUBECONFIG)" STATE_DIR="$(STATE_DIR)" NODE="$(NODE)" hack/run.sh $(BIN) $(RUN_ARGS)

## cluster-up: start (or reuse) the local control plane and keep it running.
cluster-up: tools
	LIN_TOOLS_BIN="$$(hack/build-tools.sh 2>/dev/null)" $(GO) run ./hack/localcluster up --dir $(STATE_DIR)

## cluster-down: stop the local control plane and remove its state.
cluster-down:
	$(GO) run ./hack/localcluster down --dir $(STATE_DIR)

clean:
	rm -rf bin

## clean-tools: remove the cached control-plane binaries (rebuilt on the next make test).
clean-tools:
	rm -rf "$${XDG_CACHE_HOME:-$$HOME/.cache}/lin-operator"
