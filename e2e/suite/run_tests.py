#!/usr/bin/env python3
"""Runs the end-to-end test files of capz-e2e a few at a time instead of one after the other.

Each test file starts its own management plane and spends much of its time waiting on
controllers' timers, so two files side by side take little longer than the longer of them. The
test binaries are built by `cargo test --no-run`, then run with the environment cargo would give
them, the slowest first; each one's output is printed whole when it ends, so logs do not
interleave. Exits non-zero when any file fails.

Usage: run_tests.py [--jobs N] [-- ARGS FOR EVERY TEST BINARY]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PACKAGE = "capz-e2e"
SUITE = Path(__file__).resolve().parent

# The files that take longest, in that order (seconds on two cores, one at a time: resilience
# 376, controllers 307, lifecycle 255, machines 116, release 109); the others follow by name.
SLOWEST_FIRST = ["resilience", "controllers", "lifecycle", "machines", "release"]


def build() -> list[tuple[str, str]]:
    """Builds the suite's test binaries; returns (test file, executable) for each."""
    command = ["cargo", "test", "--locked", "-p", PACKAGE, "--no-run", "--message-format=json-render-diagnostics"]
    output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    binaries = []
    for line in output.splitlines():
        message = json.loads(line)
        target = message.get("target", {})
        if (
            message.get("reason") == "compiler-artifact"
            and message.get("executable")
            and message.get("profile", {}).get("test")
            and "test" in target.get("kind", [])
        ):
            binaries.append((target["name"], message["executable"]))
    if not binaries:
        sys.exit(f"run_tests.py: cargo built no test files of {PACKAGE}")

    def order(entry: tuple[str, str]) -> tuple[int, str]:
        name = entry[0]
        rank = SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)
        return (rank, name)

    return sorted(binaries, key=order)


def run(name: str, executable: str, args: list[str], log: Path) -> tuple[str, int, float]:
    """Runs one test binary as cargo test would, its output into `log`."""
    env = dict(os.environ, CARGO_MANIFEST_DIR=str(SUITE), CARGO_PKG_NAME=PACKAGE)
    started = time.monotonic()
    with log.open("w") as out:
        code = subprocess.run([executable, *args], cwd=SUITE, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    elapsed = time.monotonic() - started
    # Printed whole, one file at a time.
    print(f"\n==== tests/{name}: {'ok' if code == 0 else f'FAILED (exit {code})'} in {elapsed:.0f} s", flush=True)
    sys.stdout.write(log.read_text(errors="replace"))
    sys.stdout.flush()
    return name, code, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("CAPZ_E2E_JOBS", "2")))
    parser.add_argument("args", nargs="*", help="arguments for every test binary (after --)")
    options = parser.parse_args()
    binaries = build()
    print(f"run_tests.py: {len(binaries)} test files, {options.jobs} at a time: {', '.join(n for n, _ in binaries)}", flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as logs, ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        futures = [
            pool.submit(run, name, executable, options.args, Path(logs) / f"{name}.log")
            for name, executable in binaries
        ]
        results = [future.result() for future in futures]
    failed = [name for name, code, _ in results if code != 0]
    print(f"\nrun_tests.py: {len(results)} test files in {time.monotonic() - started:.0f} s")
    for name, code, elapsed in sorted(results, key=lambda result: -result[2]):
        print(f"  tests/{name:<16} {elapsed:>6.0f} s  {'ok' if code == 0 else 'FAILED'}")
    if failed:
        print(f"run_tests.py: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
