#!/usr/bin/env python3
"""Builds capz-rs's container images offline, without a container engine.

Each image has two layers: a base assembled from Debian's packages the way distroless images are
(the C library, libgcc, CA certificates, time zones, service names, and a passwd naming the
non-root user 65532; no shell, no package manager), and the release binary as its entrypoint.

Every image is written twice under the output directory: `<name>/`, an OCI image layout, and
`<name>.tar`, one archive that is both an OCI layout and a docker-archive (`docker load`,
`podman load`, `kind load image-archive`, `ctr import` and `skopeo` all read it). Entries are sorted
and stamped with the commit's time, and gzip carries no time or name, so the same commit and the
same packages give the same digests.
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = "https://github.com/capz-rs/capz-rs"
USER = 65532
# What each image is for, in its description label; the binary and the image share a name.
IMAGES = {
    "capz-network": "capz-rs network controller: resource groups, virtual networks, subnets, security groups, route tables, NAT gateways",
    "capz-loadbalancer": "capz-rs load balancer controller: the API server and outbound load balancers and their public IPs",
    "capz-privatedns": "capz-rs private DNS controller: the private DNS zone, links and API server record of a private cluster",
    "capz-bastion": "capz-rs bastion controller: the Azure Bastion host of a cluster and its public IP",
    "capz-compute": "capz-rs compute controller: the virtual machine of each AzureMachine",
    "capz-vmss": "capz-rs vmss controller: the scale set of each AzureMachinePool and its instances",
    "capz-aks": "capz-rs aks controller: the AKS managed cluster of each AzureManagedControlPlane and its agent pools",
    "capz-identity": "capz-rs identity controller: AzureClusterIdentity credentials and their checks",
    "capz-webhooks": "capz-rs admission webhooks: defaulting and validation of the CAPZ kinds",
    "arm-emulator": "an offline emulator of Azure Resource Manager, for tests and demos",
}
# Paths of the packages the images do without: documentation beyond copyright notices, the
# maintainer scripts' helpers, and iconv's character sets, which nothing here loads.
DROPPED = (
    "usr/share/man/",
    "usr/share/lintian/",
    "usr/share/doc/",
    "usr/sbin/",
    "etc/ca-certificates/",
    "usr/lib/x86_64-linux-gnu/gconv/",
)
BUNDLE = "etc/ssl/certs/ca-certificates.crt"


class Layer:
    """The entries of one layer, written sorted with fixed owners and times."""

    def __init__(self, epoch):
        self.epoch = epoch
        self.entries = {}

    def directory(self, path, mode=0o755, uid=0):
        info = tarfile.TarInfo(path)
        info.type = tarfile.DIRTYPE
        info.mode = mode
        info.uid = info.gid = uid
        self.entries.setdefault(path, (info, None))

    def file(self, path, data, mode=0o644):
        self._parents(path)
        info = tarfile.TarInfo(path)
        info.size = len(data)
        info.mode = mode
        self.entries[path] = (info, data)

    def symlink(self, path, target):
        self._parents(path)
        info = tarfile.TarInfo(path)
        info.type = tarfile.SYMTYPE
        info.linkname = target
        info.mode = 0o777
        self.entries[path] = (info, None)

    def _parents(self, path):
        parts = path.split("/")[:-1]
        for end in range(1, len(parts) + 1):
            self.directory("/".join(parts[:end]))

    def tar(self):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for path in sorted(self.entries):
                info, data = self.entries[path]
                info.mtime = self.epoch
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(data) if data is not None else None)
        return buffer.getvalue()


def run(*args):
    return subprocess.run(args, check=True, capture_output=True).stdout


def base_layer(debs, epoch):
    """The base: each package's files but the dropped ones, dpkg's record of each package (so
    scanners see what is inside), the CA bundle, and the users."""
    layer = Layer(epoch)
    packages = []
    certificates = []
    for deb in sorted(debs):
        control = run("dpkg-deb", "--field", str(deb)).decode()
        fields = dict(
            line.split(": ", 1) for line in control.splitlines() if ": " in line and not line.startswith(" ")
        )
        name, version = fields["Package"], fields["Version"]
        packages.append(f"{name}={version}")
        layer.file(f"var/lib/dpkg/status.d/{name}", control.encode())
        with tarfile.open(fileobj=io.BytesIO(run("dpkg-deb", "--fsys-tarfile", str(deb)))) as tar:
            for member in tar:
                path = member.name.removeprefix("./").rstrip("/")
                keep = path.endswith("/copyright") and path.startswith("usr/share/doc/")
                if not path or (path.startswith(DROPPED) and not keep):
                    continue
                if member.isdir():
                    layer.directory(path, member.mode)
                elif member.issym():
                    layer.symlink(path, member.linkname)
                elif member.isfile():
                    data = tar.extractfile(member).read()
                    layer.file(path, data, member.mode)
                    if path.startswith("usr/share/ca-certificates/") and path.endswith(".crt"):
                        certificates.append((path, data))
                else:
                    sys.exit(f"images: {deb.name} holds {path}, which is neither file, directory nor link")
    if not certificates:
        sys.exit("images: no CA certificates among the packages")
    # What update-ca-certificates would write at install time.
    layer.file(BUNDLE, b"".join(data for _, data in sorted(certificates)))
    layer.file("etc/passwd", f"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:{USER}:{USER}:nonroot:/home/nonroot:/sbin/nologin\n".encode())
    layer.file("etc/group", f"root:x:0:\nnonroot:x:{USER}:\n".encode())
    layer.file("etc/nsswitch.conf", b"passwd: files\ngroup: files\nhosts: files dns\n")
    layer.directory("home")
    layer.directory("home/nonroot", 0o700, USER)
    layer.directory("root", 0o700)
    layer.directory("tmp", 0o1777)
    return layer, packages


def fetch_packages(listing, cache):
    """The base's packages at the versions apt offers now, downloaded once into `cache` and
    checked against the checksums of apt's index."""
    names = [line.split("#")[0].strip() for line in listing.read_text().splitlines()]
    names = [name for name in names if name]
    cache.mkdir(parents=True, exist_ok=True)
    try:
        uris = run("apt-get", "download", "--print-uris", *names).decode()
    except subprocess.CalledProcessError as err:
        sys.exit(f"images: apt cannot find the base's packages ({err.stderr.decode().strip()}); run `apt-get update`")
    debs = []
    for line in uris.splitlines():
        uri, filename, _size, checksum = line.split()
        algorithm, expected = checksum.split(":", 1)
        path = cache / filename
        if not path.is_file() or hashlib.new(algorithm.lower(), path.read_bytes()).hexdigest() != expected:
            print(f"images: downloading {filename}", file=sys.stderr)
            data = urllib.request.urlopen(uri.strip("'"), timeout=120).read()
            if hashlib.new(algorithm.lower(), data).hexdigest() != expected:
                sys.exit(f"images: {filename} does not match apt's checksum")
            path.write_bytes(data)
        debs.append(path)
    if len(debs) != len(names):
        sys.exit(f"images: apt offers {len(debs)} of the {len(names)} packages of {listing}")
    return debs


def blob(layout, data):
    digest = hashlib.sha256(data).hexdigest()
    path = layout / "blobs" / "sha256" / digest
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def gzipped(data):
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
        out.write(data)
    return buffer.getvalue()


def image(out, name, binary, version, reference, base, packages, epoch, revision):
    """Writes one image's OCI layout and archive; returns its manifest digest."""
    layout = out / name
    shutil.rmtree(layout, ignore_errors=True)
    layout.mkdir(parents=True)
    entrypoint = f"usr/local/bin/{name}"
    top = Layer(epoch)
    top.file(entrypoint, binary.read_bytes(), 0o755)
    layers = [base, top.tar()]
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    labels = {
        "org.opencontainers.image.title": name,
        "org.opencontainers.image.description": IMAGES[name],
        "org.opencontainers.image.source": SOURCE,
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.created": created,
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.ref.name": reference.rsplit(":", 1)[1],
    }
    # Not an OCI annotation (base.name is an image reference): the packages, as scanners want them.
    labels["io.capz-rs.base.packages"] = " ".join(packages)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "User": f"{USER}:{USER}",
            "Entrypoint": [f"/{entrypoint}"],
            "Env": [
                "PATH=/usr/local/bin:/usr/bin:/bin",
                f"SSL_CERT_FILE=/{BUNDLE}",
                # glibc's allocator keeps an arena per thread that allocated, each holding freed
                # memory; the few threads of these processes share one.
                "MALLOC_ARENA_MAX=1",
                # Fixed thresholds: blocks of 128 KiB and more (large API answers) are mapped on
                # their own and returned when freed, and free memory above 128 KiB at the top of
                # an arena is released. glibc otherwise raises both after each large block it
                # frees, and the process keeps the most it ever held.
                "MALLOC_MMAP_THRESHOLD_=131072",
                "MALLOC_TRIM_THRESHOLD_=131072",
            ],
            "WorkingDir": "/home/nonroot",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest() for layer in layers]},
        "history": [
            {"created": created, "created_by": "base: " + " ".join(packages)},
            {"created": created, "created_by": f"{name} {version} ({revision})"},
        ],
    }
    layer_blobs = [blob(layout, gzipped(layer)) for layer in layers]
    config_blob = blob(layout, canonical(config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_blob},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **entry} for entry in layer_blobs],
        "annotations": {key: value for key, value in labels.items() if key.startswith("org.opencontainers.")},
    }
    manifest_blob = blob(layout, canonical(manifest))
    tag = reference.rsplit(":", 1)[1]
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **manifest_blob,
                "platform": {"architecture": "amd64", "os": "linux"},
                # The tag for OCI tools, the full name for containerd's `ctr import`.
                "annotations": {
                    "org.opencontainers.image.ref.name": tag,
                    "io.containerd.image.name": reference,
                },
            }
        ],
    }
    (layout / "index.json").write_bytes(canonical(index))
    (layout / "oci-layout").write_bytes(canonical({"imageLayoutVersion": "1.0.0"}))
    # Docker's and podman's loaders read manifest.json; it names the same blobs.
    docker = [
        {
            "Config": "blobs/sha256/" + config_blob["digest"].split(":")[1],
            "RepoTags": [reference],
            "Layers": ["blobs/sha256/" + entry["digest"].split(":")[1] for entry in layer_blobs],
        }
    ]
    archive(layout, out / f"{name}.tar", canonical(docker), epoch)
    return manifest_blob["digest"]


def archive(layout, path, docker_manifest, epoch):
    entries = Layer(epoch)
    for file in sorted(layout.rglob("*")):
        if file.is_file():
            entries.file(str(file.relative_to(layout)), file.read_bytes())
    entries.file("manifest.json", docker_manifest)
    path.write_bytes(entries.tar())


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def versions():
    """Each binary's version: the version of the package it belongs to."""
    metadata = json.loads(run("cargo", "metadata", "--no-deps", "--locked", "--format-version", "1"))
    found = {}
    for package in metadata["packages"]:
        for target in package["targets"]:
            if "bin" in target["kind"]:
                found[target["name"]] = "v" + package["version"]
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", type=Path, required=True, help="where the release binaries are")
    parser.add_argument("--packages", type=Path, default=HERE / "base-packages.txt", help="the base's Debian packages")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "capz-rs" / "debs"
    parser.add_argument("--cache", type=Path, default=cache, help="where downloaded packages are kept")
    parser.add_argument("--out", type=Path, required=True, help="where to write the images")
    parser.add_argument("--registry", default="ghcr.io/capz-rs", help="the repository prefix of the image names")
    parser.add_argument("names", nargs="*", help="the images to build (all when none is named)")
    args = parser.parse_args()
    names = args.names or list(IMAGES)
    unknown = [name for name in names if name not in IMAGES]
    if unknown:
        sys.exit(f"images: no image named {', '.join(unknown)}; the images are {', '.join(IMAGES)}")
    debs = fetch_packages(args.packages, args.cache)
    epoch = int(run("git", "-C", str(HERE), "log", "-1", "--format=%ct").decode())
    revision = run("git", "-C", str(HERE), "rev-parse", "HEAD").decode().strip()
    base, packages = base_layer(debs, epoch)
    base = base.tar()
    known = versions()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        binary = args.bin_dir / name
        if not binary.is_file():
            sys.exit(f"images: {binary} is not built; run `just images` first")
        reference = f"{args.registry}/{name}:{known[name]}"
        digest = image(args.out, name, binary, known[name], reference, base, packages, epoch, revision)
        print(f"{reference}@{digest}\t{args.out / name}.tar")


if __name__ == "__main__":
    main()
