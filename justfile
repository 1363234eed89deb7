# Routine tasks of capz-rs. `just --list` shows them all.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Build output lives outside the clone so fresh clones on the same machine reuse it.
cache := env_var_or_default("XDG_CACHE_HOME", env_var("HOME") + "/.cache") / "capz-rs"
export CARGO_TARGET_DIR := env_var_or_default("CARGO_TARGET_DIR", cache / "target")
export CARGO_BUILD_JOBS := env_var_or_default("CARGO_BUILD_JOBS", "2")
# The images' binaries are built for this target by name, in `$CARGO_TARGET_DIR/<target>/release`.
image_target := arch() + "-unknown-linux-gnu"

# The steering material (reference CRDs and the compatibility checker) sits beside the clone.
crd_coverage := justfile_directory() / ".." / "shared" / "tools" / "crd-coverage"

# Run every check CI runs (each step timed); builds the pinned Go binaries the tests need first.
test:
    #!/usr/bin/env bash
    set -euo pipefail
    for step in fmt-check lint kube-bins capi-bins unit e2e kit-steady-state fuzz crd-compat sdk-test sandbox-smoke; do
        start=$SECONDS
        "{{just_executable()}}" --justfile "{{justfile()}}" "$step"
        echo "<== $step: $((SECONDS - start)) s"
    done

# Check formatting.
fmt-check:
    cargo fmt --all --check
    @unformatted=$(gofmt -l e2e/workload); [ -z "$unformatted" ] || { echo "gofmt would change: $unformatted" >&2; exit 1; }

# Format the code.
fmt:
    cargo fmt --all
    gofmt -w e2e/workload

# Lint every target, warnings are errors; no module imports one that imports it back, and no two
# controllers hold the same code.
lint: module-cycles clones
    cargo clippy --workspace --all-targets --locked -- -D warnings
    cd e2e/workload && go vet ./...
    cargo clippy --locked -p capz-kit --features otlp --all-targets -- -D warnings

# List the modules of a crate that import each other, in shared/, controllers/ and webhooks/
# (exits non-zero while there are any).
module-cycles:
    python3 .ci/module_cycles.py shared controllers webhooks

# List runs of six or more code lines that two controller crates both hold (exits non-zero while
# there are any): shared code belongs in the kit, shared test code in the harness.
clones:
    python3 .ci/clones.py --min-lines 6 controllers/*/

# Run the unit and integration tests (the workload cluster simulator's Go tests among them).
unit:
    cargo test --workspace --locked --exclude capz-e2e
    cd e2e/workload && go test ./...
    cargo test --locked -p capz-kit --features otlp --test otlp

# Run the end-to-end tests: clusterctl installs Cluster API and capz-rs (run from the container
# images built first) beside a real API server, and clusters converge on the ARM emulator. A run
# of the whole suite then holds capz-rs's RBAC to what its ServiceAccounts did (`just rbac-audit`).
e2e *args: images workload-bins
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --locked --bins
    # The audit logs go to a temporary directory, or to CAPZ_AUDIT_DIR (an empty one) to keep them.
    audit=""
    if [ -z "{{args}}" ]; then
        if [ -z "${CAPZ_AUDIT_DIR:-}" ]; then
            CAPZ_AUDIT_DIR=$(mktemp -d)
            trap 'rm -rf "$CAPZ_AUDIT_DIR"' EXIT
        fi
        export CAPZ_AUDIT_DIR
        audit=$CAPZ_AUDIT_DIR
    fi
    export CAPZ_HARNESS_RUNTIME="${CAPZ_HARNESS_RUNTIME:-runc}"
    if [ -n "$audit" ]; then
        # The whole suite: its test files two at a time (CAPZ_E2E_JOBS), each on planes of its own.
        python3 e2e/suite/run_tests.py
        "{{just_executable()}}" --justfile "{{justfile()}}" rbac-audit "$audit"
    else
        cargo test --locked -p capz-e2e {{args}}
    fi

# Compare the RBAC of `deploy/all` with what capz-rs's ServiceAccounts did in the API server audit
# logs of DIR (end-to-end runs with CAPZ_AUDIT_DIR=DIR): fails on a grant never used or a request
# refused, and prints the table of both.
rbac-audit dir:
    #!/usr/bin/env bash
    set -euo pipefail
    bins=$("{{just_executable()}}" --justfile "{{justfile()}}" kube-bins)
    components=$(mktemp)
    trap 'rm -f "$components"' EXIT
    "$bins/kubectl" kustomize deploy/all > "$components"
    python3 .ci/rbac_audit.py "$components" "{{dir}}"

# Fuzz the ARM emulator's request handling from a fresh seed for ARM_EMULATOR_FUZZ_SECONDS (default 60).
fuzz:
    ARM_EMULATOR_FUZZ_SECONDS="${ARM_EMULATOR_FUZZ_SECONDS:-60}" cargo test --locked -p arm-emulator --test fuzz -- --nocapture

# Serve the ARM emulator (prints its base URL), e.g. `just emulator --listen 127.0.0.1:9000`.
emulator *args:
    cargo run --locked --quiet -p arm-emulator --bin arm-emulator -- {{args}}

# Drive the ARM emulator with the official Azure SDK for Python (pytest arguments pass through).
sdk-test *args:
    #!/usr/bin/env bash
    set -euo pipefail
    suite=e2e/arm-emulator/sdk-test
    # One venv per version of the pins, kept between runs so warm runs install nothing.
    venv="{{cache}}/python-sdk-$(sha256sum "$suite/requirements.txt" | cut -c1-12)"
    if [ ! -f "$venv/.installed" ]; then
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$suite/requirements.txt"
        touch "$venv/.installed"
    fi
    cargo build --locked --quiet -p arm-emulator --bin arm-emulator
    work=$(mktemp -d)
    emulator=""
    stop() {
        if [ -n "$emulator" ]; then kill "$emulator" 2>/dev/null || true; wait "$emulator" 2>/dev/null || true; fi
        rm -rf "$work"
    }
    trap stop EXIT
    # Two items a page so every list follows nextLink; operations end at once and are polled
    # without waiting.
    printf 'pageSize: 2\noperationLatency: 0ms\nretryAfterSeconds: 0\n' > "$work/config.yaml"
    # The proxy that answers for Azure's own host names, for clients left unconfigured.
    proxy_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$CARGO_TARGET_DIR/debug/arm-emulator" --listen 127.0.0.1:0 --ca-file "$work/ca.pem" \
        --config "$work/config.yaml" --proxy-listen "127.0.0.1:$proxy_port" > "$work/url" 2> "$work/emulator.log" &
    emulator=$!
    for _ in $(seq 300); do
        if [ -s "$work/url" ] || ! kill -0 "$emulator" 2>/dev/null; then break; fi
        sleep 0.1
    done
    if [ ! -s "$work/url" ]; then
        echo "sdk-test: the emulator did not start:" >&2
        cat "$work/emulator.log" >&2
        exit 1
    fi
    ARM_EMULATOR_URL=$(head -n 1 "$work/url") ARM_EMULATOR_CA="$work/ca.pem" \
        ARM_EMULATOR_PROXY="http://127.0.0.1:$proxy_port" PYTHONDONTWRITEBYTECODE=1 \
        "$venv/bin/python" -m pytest "$suite" {{args}}

# Benchmark the ARM emulator over HTTP (not a test), e.g. `just bench-emulator --seconds 5 --tls`.
bench-emulator *args:
    cargo bench --locked -p arm-emulator --bench throughput -- {{args}}

# Benchmark the reconcile kit (no-op reconciles per second and RSS), e.g. `just bench-kit --objects 1000`.
bench-kit *args: kube-bins
    cargo bench --locked -p capz-kit --bench noop -- {{args}}

# Benchmark admission reviews in-process (p50/p99 latency), e.g. `just bench-webhooks --reviews 100000`.
bench-webhooks *args:
    cargo bench --locked -p capz-webhooks --bench admission -- {{args}}

# Benchmark a cluster of Ready machines end to end (ARM calls per machine and per resync, time to
# Ready, controllers' peak RSS), e.g. `just bench-e2e --machines 100 --sync-period 20` (`--private`
# for the private flavor's layout).
bench-e2e *args: kube-bins capi-bins workload-bins
    cargo build --locked --release --bins
    cargo bench --locked -p capz-e2e --bench convergence -- {{args}}

# Many clusters on one plane within Azure's default request limits: `--clusters` clusters of
# `--machines` machines with bootstrap Secrets (defaults 100 and 10, the controllers' own sync period
# of 10 minutes), signing in as `--principals` service principals in turn (default 1; e.g.
# `just bench-scale --clusters 10 --machines 10 --principals 10 --sync-period 60`); prints the
# time to every AzureCluster and AzureMachine Ready, ARM calls per machine and per sync period, the
# 429s met and whether any client came back before its Retry-After, and each process's peak RSS and
# CPU time. With `--capz`, the plane runs CAPZ and ASO instead (built by `just peer-bins`); with
# `--stand-in`, no provider runs and the bench marks every object ready itself, which measures what
# Cluster API and the API server take on this machine without one.
bench-scale *args: kube-bins capi-bins workload-bins images
    #!/usr/bin/env bash
    set -euo pipefail
    case " {{args}} " in
        *" --capz "*) "{{just_executable()}}" --justfile "{{justfile()}}" peer-bins >/dev/null ;;
    esac
    cargo bench --locked -p capz-e2e --bench scale -- {{args}}

# What MachinePools cost capz-vmss: one cluster of the `machinepool` flavor with booted instances
# (e.g. `just bench-pools --pools 20 --instances 50`); prints ARM calls per pool per sync period,
# the time and calls of a scale-out, and each capz-rs process's peak RSS.
bench-pools *args: kube-bins capi-bins workload-bins images
    cargo bench --locked -p capz-e2e --bench pools -- {{args}}

# What AKS managed clusters cost capz-aks: `--clusters` clusters of the `aks` flavor with a third
# pool, on an emulator with no latency (e.g. `just bench-aks --clusters 50 --sync-period 60`);
# prints its ARM calls from the apply to Ready and per sync period in the steady state, the time to
# Ready, and each capz-rs process's peak RSS.
bench-aks *args: kube-bins capi-bins workload-bins (images "capz-aks" "capz-webhooks")
    cargo bench --locked -p capz-e2e --bench aks -- {{args}}

# capz-rs and CAPZ (v1.26.0, with the Azure Service Operator it drives) side by side: the same
# cluster of `--machines` machines applied to a plane running each, on emulators of their own, one
# after the other (e.g. `just bench-peer --machines 10`); prints the medians of `--runs` runs and
# their ratios: times to Ready, ARM and Kubernetes API calls, steady-state reads and writes, and
# every process's peak RSS and CPU seconds. `just peer-bins` builds CAPZ and ASO first.
bench-peer *args: kube-bins capi-bins workload-bins peer-bins
    cargo build --locked --release --bins
    # Both sides as plain processes: CAPZ and ASO have no images here.
    CAPZ_HARNESS_RUNTIME=process cargo bench --locked -p capz-e2e --bench peer -- {{args}}

# What simulating workload clusters costs: clusters of VMs that boot, made through the emulator
# without Cluster API (e.g. `just bench-workloads --clusters 100 --nodes 10`, the defaults); prints
# the time until every Node registered and the peak RSS of the emulator and the simulator.
bench-workloads *args: workload-bins
    cargo bench --locked -p capz-e2e --bench workloads -- {{args}}

# Regenerate deploy/components/webhooks/webhook-configurations.yaml from the webhook server's route table.
webhook-manifests: kube-bins
    CAPZ_WRITE_MANIFESTS=1 cargo test --locked -p capz-webhooks --test deploy

# Regenerate docs/support.md (which spec fields capz-rs acts on) from the support matrix in shared/rules.
support-matrix:
    CAPZ_WRITE_SUPPORT_MATRIX=1 cargo test --locked -p capz-rules --test support the_docs_table

# Serve the admission webhooks locally, e.g. `just webhooks --cert-dir DIR --kubeconfig FILE`.
webhooks *args:
    cargo run --locked --quiet -p capz-webhooks -- {{args}}

# The kit's benchmark as a check, unoptimised and smaller: a steady state that writes fails it.
kit-steady-state:
    cargo bench --locked --profile dev -p capz-kit --bench noop -- --objects 300 --passes 2

# Build the pinned kube-apiserver, kubectl and etcd for tests (once per version); print their directory.
kube-bins:
    #!/usr/bin/env bash
    set -euo pipefail
    # The envtest convention: binaries someone provides are used as they are.
    if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
        if [ -x "$KUBEBUILDER_ASSETS/kube-apiserver" ] && [ -x "$KUBEBUILDER_ASSETS/etcd" ]; then
            echo "kube-bins: using KUBEBUILDER_ASSETS" >&2
            echo "$KUBEBUILDER_ASSETS"
            exit 0
        fi
        echo "kube-bins: KUBEBUILDER_ASSETS has no kube-apiserver or etcd; building them" >&2
    fi
    kube=$(cd e2e/kube && go list -m -f '{{{{.Version}}' k8s.io/kubernetes)
    etcd=$(cd e2e/etcd && go list -m -f '{{{{.Version}}' go.etcd.io/etcd/server/v3)
    # Keyed by both pins, so a pin change builds anew and every clone on the machine shares a build.
    out="{{cache}}/kube-bins/$kube-etcd-$etcd"
    if [ -x "$out/kube-apiserver" ] && [ -x "$out/kube-controller-manager" ] && [ -x "$out/kubectl" ] \
        && [ -x "$out/etcd" ]; then
        echo "$out"
        exit 0
    fi
    echo "kube-bins: building kube-apiserver, kube-controller-manager and kubectl $kube, etcd $etcd" >&2
    # Module source has no git tree, so the stamps Kubernetes' own build reads from git are given
    # here; without them /version says v0.0.0-master. The module proxy does not tell the release
    # commit, so that one stays empty.
    major=${kube#v}
    major=${major%%.*}
    minor=${kube#v*.}
    minor=${minor%%.*}
    date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $pkg.gitVersion=$kube -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
        ldflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
    done
    mkdir -p "$out"
    # Built beside the target and moved in one file at a time, so an interrupted build never
    # leaves a binary that looks finished.
    tmp=$(mktemp -d "$out.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    export CGO_ENABLED=0
    (cd e2e/kube && go build -trimpath -ldflags="$ldflags" -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)
    # etcd stamps its own version in source; its git SHA is unknown here too.
    (cd e2e/etcd && go build -trimpath -ldflags="-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
    mv -f "$tmp/kube-apiserver" "$tmp/kube-controller-manager" "$tmp/kubectl" "$tmp/etcd" "$out/"
    echo "$out"

# Build the pinned Cluster API managers and clusterctl for tests (once per version); print their directory.
capi-bins:
    #!/usr/bin/env bash
    set -euo pipefail
    version=$(cd e2e/capi && go list -m -f '{{{{.Version}}' sigs.k8s.io/cluster-api)
    out="{{cache}}/capi-bins/$version"
    bins=(cluster-api-manager kubeadm-bootstrap-manager kubeadm-control-plane-manager clusterctl)
    missing=0
    for bin in "${bins[@]}"; do
        [ -x "$out/$bin" ] || missing=1
    done
    if [ "$missing" = 0 ]; then
        echo "$out"
        exit 0
    fi
    echo "capi-bins: building Cluster API $version" >&2
    # The stamps Cluster API's release build reads from git, given here since module source has
    # none: `clusterctl version`, its upgrade notice and the managers' User-Agent use them. The
    # module proxy does not tell the release commit, so that one stays empty.
    major=${version#v}
    major=${major%%.*}
    minor=${version#v*.}
    minor=${minor%%.*}
    date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    pkg=sigs.k8s.io/cluster-api/version
    ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
    mkdir -p "$out"
    # Built beside the target and moved in one file at a time, so an interrupted build never
    # leaves a binary that looks finished.
    tmp=$(mktemp -d "$out.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    export CGO_ENABLED=0
    cd e2e/capi
    # fieldsv1string as in the release images of the managers: managed fields held as interned
    # strings, same API and wire format. The released clusterctl is built without it; it gets it
    # here too, so it reuses the managers' compiled packages (seconds instead of two minutes).
    build() {
        local start=$SECONDS
        go build -trimpath -tags=fieldsv1string -ldflags="$ldflags" -o "$tmp/$1" "$2"
        echo "capi-bins: $1 ($((SECONDS - start)) s)" >&2
    }
    build cluster-api-manager sigs.k8s.io/cluster-api/core
    build kubeadm-bootstrap-manager sigs.k8s.io/cluster-api/bootstrap/kubeadm
    build kubeadm-control-plane-manager sigs.k8s.io/cluster-api/controlplane/kubeadm
    build clusterctl sigs.k8s.io/cluster-api/cmd/clusterctl
    for bin in "${bins[@]}"; do
        mv -f "$tmp/$bin" "$out/"
    done
    echo "$out"

# Build the pinned CAPZ manager and ASO controller and generate the ASO CRDs CAPZ uses, for
# benchmarks beside capz-rs (once per version; not used by the tests); print their directory.
peer-bins:
    #!/usr/bin/env bash
    set -euo pipefail
    capz=$(cd e2e/peer/capz && go list -m -f '{{{{.Version}}' sigs.k8s.io/cluster-api-provider-azure)
    aso=$(cd e2e/peer/aso && go list -m -f '{{{{.Version}}' github.com/Azure/azure-service-operator/v2)
    out="{{cache}}/peer-bins/$capz-$aso"
    # The kinds CAPZ's release has ASO serve (its --crd-pattern in config/aso), as <group>_<plural>.
    wanted=(containerservice.azure.com_fleetsmembers containerservice.azure.com_maintenanceconfigurations
        containerservice.azure.com_managedclusters containerservice.azure.com_managedclustersagentpools
        kubernetesconfiguration.azure.com_extensions network.azure.com_bastionhosts
        network.azure.com_natgateways network.azure.com_privateendpoints network.azure.com_virtualnetworks
        network.azure.com_virtualnetworkssubnets resources.azure.com_resourcegroups)
    groups=(containerservice kubernetesconfiguration network resources)
    if [ -x "$out/capz-manager" ] && [ -x "$out/aso-controller" ] && [ -d "$out/crds" ] && [ -f "$out/webhooks.yaml" ]; then
        echo "$out"
        exit 0
    fi
    echo "peer-bins: building CAPZ $capz and ASO $aso (what $out lacks)" >&2
    # CAPZ's release build stamps these from git (hack/version.sh); gitVersion goes into its ARM
    # User-Agent. The module proxy does not tell the release commit, so that one stays empty.
    major=${capz#v}
    major=${major%%.*}
    minor=${capz#v*.}
    minor=${minor%%.*}
    pkg=sigs.k8s.io/cluster-api-provider-azure/version
    capz_ldflags="-s -w -X $pkg.gitVersion=$capz -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    capz_ldflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    # ASO's one stamp, which its ARM User-Agent carries.
    aso_ldflags="-s -w -X github.com/Azure/azure-service-operator/v2/internal/version.BuildVersion=$aso"
    mkdir -p "$out"
    # Built and generated beside the target and moved in at the end, so an interrupted run never
    # leaves a directory that looks finished.
    tmp=$(mktemp -d "$out.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    export CGO_ENABLED=0
    # Each step in a subshell of its own, in the module it builds from.
    step() {
        local start=$SECONDS
        "$@"
        echo "peer-bins: $1 ($((SECONDS - start)) s)" >&2
    }
    controller-gen() (
        cd e2e/peer/aso
        go build -trimpath -ldflags="-s -w" -o "$tmp/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen
    )
    # ASO's module has its API types but not its generated CRDs: generate them as ASO's build does
    # (the options of its Taskfile), over the whole of each group CAPZ uses, since a CRD gets one
    # version per package of its group that defines the kind, the storage version included.
    crds() (
        cd e2e/peer/aso
        local group paths=()
        for group in "${groups[@]}"; do
            paths+=("paths=github.com/Azure/azure-service-operator/v2/api/$group/...")
        done
        "$tmp/controller-gen" crd:crdVersions=v1,allowDangerousTypes=true "${paths[@]}" \
            output:crd:artifacts:config="$tmp/generated"
        mkdir "$tmp/crds"
        local crd
        for crd in "${wanted[@]}"; do
            if [ ! -f "$tmp/generated/$crd.yaml" ]; then
                echo "peer-bins: controller-gen wrote no $crd.yaml" >&2
                exit 1
            fi
            # The labels ASO's release adds: ASO only manages CRDs with its name label, and
            # compares the version label with its own to decide whether to update one.
            awk -v aso="$aso" 'NR == 1 && /^---$/ { next } { print } /^metadata:$/ && !done {
                print "  labels:"; print "    app.kubernetes.io/name: azure-service-operator"
                print "    app.kubernetes.io/version: " aso; done = 1 }' \
                "$tmp/generated/$crd.yaml" > "$tmp/crds/$crd.yaml"
        done
    )
    # ASO's admission webhooks, from the markers on its types, as ASO's build writes them; the
    # harness keeps those of the kinds it installs.
    webhooks() (
        cd e2e/peer/aso
        local group paths=()
        for group in "${groups[@]}"; do
            paths+=("paths=github.com/Azure/azure-service-operator/v2/api/$group/.../webhook")
        done
        "$tmp/controller-gen" webhook "${paths[@]}" output:webhook:artifacts:config="$tmp/webhook"
        mv "$tmp/webhook/manifests.yaml" "$tmp/webhooks.yaml"
    )
    # No build tags: CAPZ's and ASO's release images are built without any.
    capz-manager() (
        cd e2e/peer/capz
        go build -trimpath -ldflags="$capz_ldflags" -o "$tmp/capz-manager" sigs.k8s.io/cluster-api-provider-azure
    )
    aso-controller() (
        cd e2e/peer/aso
        go build -trimpath -ldflags="$aso_ldflags" -o "$tmp/aso-controller" \
            github.com/Azure/azure-service-operator/v2/cmd/controller
    )
    # Only what the directory lacks is built; each piece moves in when it is whole.
    if [ -x "$out/controller-gen" ]; then
        cp "$out/controller-gen" "$tmp/controller-gen"
    else
        step controller-gen
        mv -f "$tmp/controller-gen" "$out/"
        cp "$out/controller-gen" "$tmp/controller-gen"
    fi
    if [ ! -d "$out/crds" ]; then
        step crds
        mv "$tmp/crds" "$out/crds"
    fi
    if [ ! -f "$out/webhooks.yaml" ]; then
        step webhooks
        mv "$tmp/webhooks.yaml" "$out/"
    fi
    for binary in capz-manager aso-controller; do
        if [ ! -x "$out/$binary" ]; then
            step "$binary"
            mv -f "$tmp/$binary" "$out/"
        fi
    done
    echo "$out"

# Build the workload cluster simulator (what boots on the emulator's machines, e2e/workload) into
# the cache, reusing the Go build cache of `capi-bins`; print the binary's path.
workload-bins:
    #!/usr/bin/env bash
    set -euo pipefail
    out="{{cache}}/workload-bins"
    mkdir -p "$out"
    # Built beside the binary and moved over it, so a running simulator keeps its file.
    (cd e2e/workload && CGO_ENABLED=0 go build -trimpath -tags=fieldsv1string -ldflags='-s -w' \
        -o "$out/workload-simulator.new" .)
    mv "$out/workload-simulator.new" "$out/workload-simulator"
    echo "$out/workload-simulator"

# Print where the pinned Cluster API source is (its CRDs and webhook manifests), downloading it if needed.
capi-source:
    #!/usr/bin/env bash
    set -euo pipefail
    cd e2e/capi
    # -json is the only form of `go mod download` that tells the directory; the pin comes from go.mod.
    go mod download -json sigs.k8s.io/cluster-api | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'
# Start the sandbox (kube-apiserver; Cluster API and capz-rs installed by clusterctl and running; the
# ARM emulator); print how to use it.
up *args:
    #!/usr/bin/env bash
    set -euo pipefail
    "{{just_executable()}}" --justfile "{{justfile()}}" kube-bins > /dev/null
    "{{just_executable()}}" --justfile "{{justfile()}}" capi-bins > /dev/null
    "{{just_executable()}}" --justfile "{{justfile()}}" workload-bins > /dev/null
    cargo build --locked --quiet --bins
    # The controllers run from their images, as they ship.
    "{{just_executable()}}" --justfile "{{justfile()}}" images > /dev/null
    "$CARGO_TARGET_DIR/debug/capz-sandbox" up {{args}}

# Start the sandbox if it is not running, create a cluster of the default flavor with clusterctl
# and kubectl, and follow it until it converges (`just demo --name other` for another name).
demo *args:
    "{{just_executable()}}" --justfile "{{justfile()}}" up {{args}}
    "$CARGO_TARGET_DIR/debug/capz-sandbox" demo {{args}}

# Stop the sandbox and every process it started.
down *args:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x "$CARGO_TARGET_DIR/debug/capz-sandbox" ]; then echo "The sandbox is not running."; exit 0; fi
    "$CARGO_TARGET_DIR/debug/capz-sandbox" down {{args}}

# Show what the sandbox runs, with each process's log.
status *args:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x "$CARGO_TARGET_DIR/debug/capz-sandbox" ]; then echo "The sandbox is not running."; exit 0; fi
    "$CARGO_TARGET_DIR/debug/capz-sandbox" status {{args}}

# Bring the sandbox up on spare ports, use it as a person would with kubectl and clusterctl, bring it down.
sandbox-smoke:
    #!/usr/bin/env bash
    set -euo pipefail
    dir=$(mktemp -d)
    ports=$(python3 -c 'import socket; s=[socket.socket() for _ in range(3)]; [x.bind(("127.0.0.1", 0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
    read -r port emulator_port proxy_port <<< "$ports"
    args=(--dir "$dir/sandbox" --port "$port" --emulator-port "$emulator_port" --proxy-port "$proxy_port")
    sandbox="$CARGO_TARGET_DIR/debug/capz-sandbox"
    trap '"$sandbox" down --dir "$dir/sandbox" > /dev/null; rm -rf "$dir"' EXIT
    "{{just_executable()}}" --justfile "{{justfile()}}" up "${args[@]}" > "$dir/up.txt"
    # grep reads to the end: quitting at the first match would break the pipe under the sandbox.
    "$sandbox" up "${args[@]}" | grep "already runs" > /dev/null
    export KUBECONFIG="$dir/sandbox/kubeconfig" CLUSTERCTL_DISABLE_VERSIONCHECK=true
    export PATH="$("{{just_executable()}}" --justfile "{{justfile()}}" kube-bins):$("{{just_executable()}}" --justfile "{{justfile()}}" capi-bins):$PATH"
    # Exactly our CRDs, Cluster API's, clusterctl's inventory and the cert-manager API clusterctl
    # expects (at the version this clusterctl installs), all established.
    capi=$("{{just_executable()}}" --justfile "{{justfile()}}" capi-source)
    cert_manager=$(sed -n 's/^\s*CertManagerDefaultVersion\s*=\s*"\(.*\)"/\1/p' "$capi/cmd/clusterctl/client/config/cert_manager_client.go")
    cert_manager=$(cd e2e/capi && go mod download -json "github.com/cert-manager/cert-manager@$cert_manager" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    expected=$(find deploy/crds "$capi"/{core,bootstrap/kubeadm,controlplane/kubeadm}/config/crd/bases "$cert_manager/deploy/crds" \
        "$capi/cmd/clusterctl/config/crd/bases/clusterctl.cluster.x-k8s.io_providers.yaml" -name '*.yaml' ! -name kustomization.yaml -printf '%f\n' | sed 's/^\([^_]*\)_\(.*\)\.yaml$/\2.\1/' | sort)
    crds=$(kubectl get crds -o name | sed 's|.*/||' | sort)
    diff <(echo "$expected") <(echo "$crds") || { echo "sandbox-smoke: the CRDs differ from the expected set" >&2; exit 1; }
    kubectl wait --for condition=Established crd --all --timeout 30s > /dev/null
    # clusterctl init recorded Cluster API's three providers and capz-rs in its inventory.
    providers=$(kubectl get providers -A -o jsonpath='{range .items[*]}{.type}/{.providerName}{"\n"}{end}' | sort | tr '\n' ' ')
    [ "$providers" = "BootstrapProvider/kubeadm ControlPlaneProvider/kubeadm CoreProvider/cluster-api InfrastructureProvider/azure " ] \
        || { echo "sandbox-smoke: the provider inventory is '$providers'" >&2; exit 1; }
    # The walkthrough of the README: a default-flavor cluster converges on the emulator.
    "$sandbox" demo "${args[@]}" > "$dir/demo.txt" || { cat "$dir/demo.txt"; exit 1; }
    grep -q "^Cluster demo converged" "$dir/demo.txt" || { cat "$dir/demo.txt"; exit 1; }
    # The workload cluster's three nodes, Ready, as kubectl printed them through the proxy.
    [ "$(grep -c ' Ready ' "$dir/demo.txt")" -ge 3 ] || { cat "$dir/demo.txt"; exit 1; }
    kubectl wait azurecluster/demo --for jsonpath='{.metadata.ownerReferences[0].kind}'=Cluster --timeout 30s > /dev/null
    clusterctl describe cluster demo | grep "AzureCluster/demo\|AzureCluster default/demo" > /dev/null
    pids=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["pid"], *[p["pid"] for p in s["processes"]])' "$dir/sandbox/sandbox.json")
    "$sandbox" down --dir "$dir/sandbox"
    for pid in $pids; do
        if [ -d "/proc/$pid" ] && ! grep -q '^State:.*zombie' "/proc/$pid/status"; then
            echo "sandbox-smoke: process $pid outlived just down" >&2; exit 1
        fi
    done
    echo "sandbox-smoke: up, CRDs, owner reference, clusterctl describe, the inventory, the demo cluster (Available, its nodes read through its kubeconfig) and down all work"

# Build, lint and test one controller (network, loadbalancer, privatedns, bastion, compute, vmss, aks, identity or webhooks) on
# its own, as each job of the CI matrix does: its crate's format, lints and tests (its integration
# tests against a real API server among them), then its end-to-end case, for which clusterctl
# installs only the controllers `e2e/suite/controllers.txt` lists for it, run from their images.
ci-controller name: kube-bins capi-bins workload-bins image-tools
    #!/usr/bin/env bash
    set -euo pipefail
    needs=$(awk -v name="{{name}}" '$1 == name { $1 = ""; print }' e2e/suite/controllers.txt)
    if [ -z "$needs" ]; then
        echo "ci-controller: no controller '{{name}}'; e2e/suite/controllers.txt lists $(awk '!/^#/ { printf "%s ", $1 }' e2e/suite/controllers.txt)" >&2
        exit 2
    fi
    crate=capz-{{name}}
    step() {
        local start=$SECONDS
        "$@"
        echo "<== ci-controller {{name}}: $* ($((SECONDS - start)) s)"
    }
    step cargo fmt --check -p "$crate"
    step cargo clippy --locked -p "$crate" --all-targets -- -D warnings
    step cargo test --locked -p "$crate"
    step "{{just_executable()}}" --justfile "{{justfile()}}" images $(printf 'capz-%s ' $needs)
    CAPZ_HARNESS_RUNTIME=runc step cargo test --locked -p capz-e2e --test controllers -- "{{name}}::"

# Build the container images of the controllers, the webhooks and the ARM emulator (all, or those
# named) from the release binaries, into the target directory's `images/`: an OCI layout and a
# loadable archive each. Prints each image's reference, digest and archive.
images *names: image-tools
    #!/usr/bin/env bash
    set -euo pipefail
    names=({{names}})
    [ "${#names[@]}" != 0 ] || names=(capz-network capz-loadbalancer capz-privatedns capz-bastion capz-compute capz-vmss capz-aks capz-identity capz-webhooks arm-emulator)
    # Position-dependent executables: with no relocations to apply at start, the pages that hold
    # addresses stay shared with the file instead of being copied into each process. Naming the
    # target keeps the flag off build scripts and proc-macros, which are loaded as shared objects.
    RUSTFLAGS="-C relocation-model=static" cargo build --locked --release --target "{{image_target}}" \
        $(printf -- '--bin %s ' "${names[@]}")
    python3 images/build.py --bin-dir "$CARGO_TARGET_DIR/{{image_target}}/release" \
        --cache "{{cache}}/debs" --out "$CARGO_TARGET_DIR/images" {{names}}

# Install Debian's skopeo, umoci and runc (the tests read and run the images with them), and
# apt's package lists the images' base is looked up in, when missing. Needs root or sudo.
image-tools:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    for tool in skopeo umoci runc; do
        command -v "$tool" > /dev/null 2>&1 || missing+=("$tool")
    done
    sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    if ! (cd /tmp && apt-get download --print-uris libc6 > /dev/null 2>&1); then
        "${sudo[@]}" apt-get update -qq
    fi
    if [ "${#missing[@]}" != 0 ]; then
        echo "image-tools: installing ${missing[*]}" >&2
        if ! "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null 2>&1; then
            "${sudo[@]}" apt-get update -qq
            "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null
        fi
    fi

# Write release VERSION (such as v0.2.0) into the clusterctl repository OUT: the components with
# every image pinned by tag and digest, metadata.yaml, the flavors, the image archives and their
# checksums, and a clusterctl.yaml naming the repository (images/release.py says how it is laid out).
release version out=(CARGO_TARGET_DIR / "dist"): images
    #!/usr/bin/env bash
    set -euo pipefail
    bins=$("{{just_executable()}}" --justfile "{{justfile()}}" kube-bins)
    python3 images/release.py --version "{{version}}" --kubectl "$bins/kubectl" --deploy deploy \
        --images "$CARGO_TARGET_DIR/images" --out "{{out}}"

# Regenerate deploy/crds from the API types.
crds:
    cargo run --locked --quiet -p capz-api --bin crdgen -- deploy/crds

# Refresh the facts the API tests hold CAPZ to (the fields its CRDs require) from a directory of
# CAPZ's CRD files, e.g. `just capz-facts ../capz/config/crd/bases`. Needs Python with PyYAML.
capz-facts dir:
    python3 .ci/capz_required.py "{{dir}}" > shared/api/tests/fixtures/capz/required.txt

# Compare deploy/crds with CAPZ's schemas: every field, type, enum and validation keyword.
crd-compat:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x "{{crd_coverage}}" ]; then
        echo "crd-compat: the CAPZ reference checker is not next to this clone (../shared/tools); skipped"
        exit 0
    fi
    "{{crd_coverage}}" --min 100 --min-validation 100 deploy/crds | tail -2
