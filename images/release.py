#!/usr/bin/env python3
"""Write a capz-rs release: what clusterctl and a user installing it need, in one directory.

    <out>/infrastructure-azure/<version>/infrastructure-components.yaml   deploy/all, images pinned
                                         metadata.yaml                    by tag and digest
                                         cluster-template*.yaml           the flavors
                                         images/<name>.tar                each image, loadable
                                         SHA256SUMS                       `sha256sum -c SHA256SUMS`
    <out>/clusterctl.yaml                a providers entry naming the newest release under <out>

The directory under `infrastructure-azure/` is laid out as clusterctl reads a local repository,
so several releases written to the same `<out>` form one repository `clusterctl upgrade` can move
along. Published, the files of `<version>/` are the release's assets.

The version is the bundle's, the one clusterctl knows; each image keeps its own tag (its crate's
version), and the components name it with its digest so a tag moved later changes nothing.
"""

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# clusterctl's name for the provider: capz-rs replaces CAPZ under the name CAPZ has.
PROVIDER = "azure"
VERSION = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$")
IMAGE_LINE = re.compile(r"^(\s*(?:- )?image: )(\S+)$")


def fail(message):
    sys.exit(f"release: {message}")


def series(metadata):
    """The (major, minor) pairs deploy/metadata.yaml lists."""
    pairs = re.findall(r"-\s*major:\s*(\d+)\s*\n\s*minor:\s*(\d+)", metadata)
    return {(int(major), int(minor)) for major, minor in pairs}


def digest_of(images, name, tag):
    """The manifest digest of image `name` tagged `tag` in the OCI layouts under `images`."""
    index = images / name / "index.json"
    if not index.is_file():
        fail(f"no image {name} is built in {images}; run `just images`")
    for manifest in json.loads(index.read_text())["manifests"]:
        if manifest.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
            return manifest["digest"]
    fail(f"the image {name} in {images} is not tagged {tag}; run `just images`")


def pin_images(components, images):
    """The components with every capz-rs image named by tag and digest; and the images named."""
    named = []
    lines = []
    for line in components.splitlines():
        match = IMAGE_LINE.match(line)
        if match:
            reference = match.group(2)
            if "@" in reference:
                fail(f"deploy/ already pins {reference} by digest; name images by tag there")
            repository, _, tag = reference.rpartition(":")
            if not repository or "/" in tag:
                fail(f"the image {reference} in deploy/ has no tag; give its kustomization a newTag")
            name = repository.rsplit("/", 1)[-1]
            line = f"{match.group(1)}{reference}@{digest_of(images, name, tag)}"
            named.append(name)
        lines.append(line)
    return "\n".join(lines) + "\n", named


def sha256(path):
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True, help="the release's version, such as v0.2.0")
    parser.add_argument("--kubectl", required=True, help="the kubectl that renders deploy/all")
    parser.add_argument("--deploy", type=Path, default=HERE.parent / "deploy", help="the kustomize tree")
    parser.add_argument("--images", type=Path, required=True, help="where `just images` wrote the images")
    parser.add_argument("--out", type=Path, required=True, help="the repository to write the release into")
    args = parser.parse_args()

    match = VERSION.match(args.version)
    if not match:
        fail(f"the version {args.version!r} is not a semantic version with a leading v, such as v0.2.0")
    major, minor = int(match.group(1)), int(match.group(2))
    metadata = (args.deploy / "metadata.yaml").read_text()
    if (major, minor) not in series(metadata):
        fail(
            f"deploy/metadata.yaml has no release series {major}.{minor}, and clusterctl refuses a "
            f"version outside them: add `- major: {major}` / `  minor: {minor}` / `  contract: v1beta1`"
        )

    rendered = subprocess.run(
        [args.kubectl, "kustomize", str(args.deploy / "all")], check=True, capture_output=True, text=True
    ).stdout
    components, named = pin_images(rendered, args.images)

    release = args.out / f"infrastructure-{PROVIDER}" / args.version
    if release.exists():
        shutil.rmtree(release)
    (release / "images").mkdir(parents=True)
    (release / "infrastructure-components.yaml").write_text(components)
    (release / "metadata.yaml").write_text(metadata)
    for template in sorted((args.deploy / "templates").glob("cluster-template*.yaml")):
        shutil.copyfile(template, release / template.name)
    # The emulator's image too: the sandbox and offline tests of a release run it.
    for name in sorted(set(named) | {"arm-emulator"}):
        archive = args.images / f"{name}.tar"
        if not archive.is_file():
            fail(f"{archive} is not built; run `just images`")
        shutil.copyfile(archive, release / "images" / archive.name)

    files = sorted(path for path in release.rglob("*") if path.is_file())
    sums = "".join(f"{sha256(path)}  {path.relative_to(release)}\n" for path in files)
    (release / "SHA256SUMS").write_text(sums)

    latest = args.out.resolve() / f"infrastructure-{PROVIDER}" / "latest" / "infrastructure-components.yaml"
    (args.out / "clusterctl.yaml").write_text(
        "# Give to clusterctl as --config (or merge into ~/.config/cluster-api/clusterctl.yaml): the\n"
        f"# provider {PROVIDER!r} then comes from this repository instead of CAPZ's releases.\n"
        f"providers:\n- name: {PROVIDER}\n  type: InfrastructureProvider\n  url: {latest}\n"
    )
    print(f"release: {args.version} in {release} ({len(files)} files, images {', '.join(sorted(set(named)))})")


if __name__ == "__main__":
    main()
