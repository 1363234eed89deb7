//! The container images `just images` builds, read back with the standard tools a user has:
//! skopeo reads each archive both as an OCI archive and as a docker-archive, umoci unpacks the
//! layout, and runc runs the entrypoint as the end-to-end tests run it, as the image's user.
//! Building an image again from the same binaries gives the same digest.

use std::path::Path;

use capz_e2e::{TestResult, images_dir, run, scratch};
use capz_harness::container::Runtime;
use serde_json::Value;

/// Every image (named after the binary it runs) and the crate that binary is built from.
const IMAGES: [(&str, &str); 10] = [
    ("capz-network", "controllers/network"),
    ("capz-loadbalancer", "controllers/loadbalancer"),
    ("capz-privatedns", "controllers/privatedns"),
    ("capz-bastion", "controllers/bastion"),
    ("capz-compute", "controllers/compute"),
    ("capz-vmss", "controllers/vmss"),
    ("capz-aks", "controllers/aks"),
    ("capz-identity", "controllers/identity"),
    ("capz-webhooks", "webhooks"),
    ("arm-emulator", "e2e/arm-emulator"),
];
const USER: &str = "65532:65532";
/// What a shell would be found as; none may be in an image.
const SHELLS: [&str; 6] = [
    "bin/sh",
    "bin/bash",
    "bin/dash",
    "usr/bin/sh",
    "usr/bin/bash",
    "bin/busybox",
];

fn clone() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The version of the crate in `dir` (its own, never the workspace's), as `0.1.0`.
fn crate_version(dir: &str) -> TestResult<String> {
    let manifest = std::fs::read_to_string(clone().join(dir).join("Cargo.toml"))?;
    let version = manifest
        .lines()
        .find_map(|line| line.strip_prefix("version = "))
        .ok_or_else(|| format!("{dir}/Cargo.toml sets no version of its own"))?;
    Ok(version.trim_matches('"').to_owned())
}

/// The tag of the image `name`: `v` and its crate's version.
fn version(name: &str) -> TestResult<String> {
    let (_, dir) = IMAGES
        .iter()
        .find(|(image, _)| *image == name)
        .ok_or_else(|| format!("no image {name}"))?;
    Ok(format!("v{}", crate_version(dir)?))
}

#[test]
fn each_image_is_tagged_with_its_crates_version_and_deploy_names_that_tag() -> TestResult {
    for (name, _) in IMAGES {
        let tag = version(name)?;
        let index = std::fs::read_to_string(images_dir()?.join(name).join("index.json"))?;
        assert!(
            index.contains(&format!("\"org.opencontainers.image.ref.name\":\"{tag}\"")),
            "{name} is built tagged {tag}: {index}"
        );
        let Some(component) = name.strip_prefix("capz-") else {
            continue;
        };
        let kustomization = clone()
            .join("deploy/components")
            .join(component)
            .join("kustomization.yaml");
        let kustomization = std::fs::read_to_string(kustomization)?;
        assert!(
            kustomization.contains(&format!("newName: ghcr.io/capz-rs/{name}\n  newTag: {tag}\n")),
            "deploy/components/{component} runs {name} at its crate's version {tag}: {kustomization}"
        );
    }
    Ok(())
}

#[test]
fn skopeo_reads_each_archive_as_oci_and_as_docker_archive() -> TestResult {
    let dir = images_dir()?;
    for (name, _) in IMAGES {
        let archive = dir.join(format!("{name}.tar"));
        let archive = archive.to_str().ok_or("a path that is not UTF-8")?;
        let config: Value = serde_json::from_str(&run(
            "skopeo",
            &["inspect", "--config", &format!("oci-archive:{archive}")],
        )?)?;
        assert_eq!(config["architecture"], "amd64", "{name}");
        assert_eq!(config["os"], "linux", "{name}");
        let container = &config["config"];
        assert_eq!(container["User"], USER, "{name} runs as the non-root user");
        assert_eq!(
            container["Entrypoint"],
            serde_json::json!([format!("/usr/local/bin/{name}")]),
            "{name}"
        );
        let labels = &container["Labels"];
        assert_eq!(
            labels["org.opencontainers.image.version"],
            version(name)?.as_str(),
            "{name}"
        );
        assert_eq!(labels["org.opencontainers.image.title"], name);
        assert!(
            labels["org.opencontainers.image.source"]
                .as_str()
                .is_some_and(|source| source.starts_with("https://")),
            "{name}: {labels}"
        );
        let revision = labels["org.opencontainers.image.revision"]
            .as_str()
            .unwrap_or_default();
        assert!(
            revision.len() == 40 && revision.chars().all(|c| c.is_ascii_hexdigit()),
            "{name}: the revision is a commit: {revision}"
        );
        // What `docker load` and `kind load image-archive` read: manifest.json and its blobs.
        let docker: Value = serde_json::from_str(&run(
            "skopeo",
            &["inspect", &format!("docker-archive:{archive}")],
        )?)?;
        assert_eq!(docker["Labels"], *labels, "{name}");
        assert_eq!(
            docker["Layers"].as_array().map(Vec::len),
            Some(2),
            "{name}: base and binary"
        );
        let listed = run("tar", &["-xOf", archive, "manifest.json"])?;
        assert!(
            listed.contains(&format!("\"ghcr.io/capz-rs/{name}:{}\"", version(name)?)),
            "{name}: docker load tags it: {listed}"
        );
    }
    Ok(())
}

#[test]
fn each_image_unpacks_to_its_binary_and_the_base_without_a_shell() -> TestResult {
    let dir = images_dir()?;
    let scratch = scratch("images-unpack")?;
    // Run as the end-to-end tests run them; said and left out where runc cannot run.
    let runtime = Runtime::detect();
    if let Runtime::Processes { why } = &runtime {
        eprintln!("images: the images are not run: {why}");
    }
    for (name, _) in IMAGES {
        let rootfs = scratch.join(name);
        let layout = format!("{}:{}", dir.join(name).display(), version(name)?);
        run(
            "umoci",
            &["raw", "unpack", "--image", &layout, &rootfs.display().to_string()],
        )?;
        let entrypoint = rootfs.join("usr/local/bin").join(name);
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&entrypoint)?.permissions());
        assert_eq!(mode & 0o111, 0o111, "{name}: the entrypoint is executable");
        for shell in SHELLS {
            assert!(!rootfs.join(shell).exists(), "{name} holds a shell: {shell}");
        }
        assert!(!rootfs.join("bin").exists(), "{name} has no /bin");
        let passwd = std::fs::read_to_string(rootfs.join("etc/passwd"))?;
        assert!(passwd.contains(":65532:65532:"), "{name}: {passwd}");
        let bundle = std::fs::read_to_string(rootfs.join("etc/ssl/certs/ca-certificates.crt"))?;
        assert!(
            bundle.matches("BEGIN CERTIFICATE").count() > 100,
            "{name}: the CA bundle holds Mozilla's roots"
        );
        assert!(
            rootfs.join("lib64/ld-linux-x86-64.so.2").exists(),
            "{name}: the loader"
        );
        assert!(
            rootfs.join("usr/share/zoneinfo/Europe/Amsterdam").exists(),
            "{name}: time zones"
        );
        let tag = version(name)?;
        if let Some(output) = runtime.run_to_end(&scratch, name, &tag, &["--version"])? {
            assert_eq!(
                output.trim(),
                format!("{name} {}", &tag[1..]),
                "{name} --version, run by runc as {USER}"
            );
        }
    }
    std::fs::remove_dir_all(&scratch)?;
    Ok(())
}

#[test]
fn building_again_gives_the_same_digests() -> TestResult {
    let dir = images_dir()?;
    let again = scratch("images-again")?;
    // Where `just images` builds the binaries: for the host's target, named.
    let target = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let bin_dir = dir
        .parent()
        .ok_or("no target directory")?
        .join(target)
        .join("release");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../images/build.py");
    let printed = run(
        "python3",
        &[
            &script.display().to_string(),
            "--bin-dir",
            &bin_dir.display().to_string(),
            "--out",
            &again.display().to_string(),
            "capz-compute",
            "capz-webhooks",
        ],
    )?;
    assert_eq!(printed.lines().count(), 2, "{printed}");
    for name in ["capz-compute", "capz-webhooks"] {
        let first = std::fs::read(dir.join(name).join("index.json"))?;
        let second = std::fs::read(again.join(name).join("index.json"))?;
        assert_eq!(
            String::from_utf8(first)?,
            String::from_utf8(second)?,
            "{name}: the same manifest digest"
        );
        assert_eq!(
            std::fs::read(dir.join(format!("{name}.tar")))?,
            std::fs::read(again.join(format!("{name}.tar")))?,
            "{name}: the same archive, byte for byte"
        );
    }
    std::fs::remove_dir_all(&again)?;
    Ok(())
}
