# Routine tasks of capz-rs. `just --list` shows them all.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Build output lives outside the clone so fresh clones on the same machine reuse it.
cache := env_var_or_default("XDG_CACHE_HOME", env_var("HOME") + "/.cache") / "capz-rs"
export CARGO_TARGET_DIR := env_var_or_default("CARGO_TARGET_DIR", cache / "target")
export CARGO_BUILD_JOBS := env_var_or_default("CARGO_BUILD_JOBS", "2")

# The steering material (reference CRDs and the compatibility checker) sits beside the clone.
crd_coverage := justfile_directory() / ".." / "shared" / "tools" / "crd-coverage"

# Run every check CI runs: formatting, lints, tests, CRD compatibility (each step timed).
test:
    #!/usr/bin/env bash
    set -euo pipefail
    for step in fmt-check lint unit crd-compat; do
        start=$SECONDS
        "{{just_executable()}}" --justfile "{{justfile()}}" "$step"
        echo "<== $step: $((SECONDS - start)) s"
    done

# Check formatting.
fmt-check:
    cargo fmt --all --check

# Format the code.
fmt:
    cargo fmt --all

# Lint every target, warnings are errors.
lint:
    cargo clippy --workspace --all-targets --locked -- -D warnings

# Run the unit and integration tests.
unit:
    cargo test --workspace --locked

# Serve the ARM emulator (prints its base URL), e.g. `just emulator --listen 127.0.0.1:9000`.
emulator *args:
    cargo run --locked --quiet -p arm-emulator --bin arm-emulator -- {{args}}

# Benchmark the ARM emulator over HTTP (not a test), e.g. `just bench-emulator --seconds 5 --tls`.
bench-emulator *args:
    cargo bench --locked -p arm-emulator --bench throughput -- {{args}}

# Regenerate deploy/crds from the API types.
crds:
    cargo run --locked --quiet -p capz-api --bin crdgen -- deploy/crds

# Compare deploy/crds with CAPZ's schemas: every field, type, enum and validation keyword.
crd-compat:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x "{{crd_coverage}}" ]; then
        echo "crd-compat: the CAPZ reference checker is not next to this clone (../shared/tools); skipped"
        exit 0
    fi
    "{{crd_coverage}}" --min 100 --min-validation 100 deploy/crds | tail -2
