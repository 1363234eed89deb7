//! A release as a user installs and upgrades it. `just release` (its script) writes v0.2.0 into a
//! clusterctl repository: the components with every image pinned by tag and digest, metadata.yaml,
//! the flavors, the image archives and their checksums. `clusterctl init` installs capz-rs from that
//! repository, not from `deploy/`; the release's archives are loaded into the plane as into a kind
//! node, so the Deployments run the release's images by their digests; and a cluster of the
//! release's default flavor converges on the ARM emulator.
//!
//! Then two upgrades, on the converged cluster. One controller alone, through a user's overlay of
//! its directory in `deploy/` with a new image tag: only its Deployment changes and nothing is
//! written to Azure. And the whole bundle with `clusterctl upgrade apply` to v0.2.1, which replaces
//! every component: admission is back within a bound, no Machine is replaced, and once the
//! controllers have read back what they own nothing was written to Azure. The newer versions are
//! this build under new tags: what is tested is how an upgrade is carried out, not a change of code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::Config;
use capz_e2e::{Environment, TestResult, images_dir, is_write, load_release_images, run, scratch};
use capz_harness::KubeBinaries;
use capz_harness::capz::NAMESPACE;
use capz_harness::container::ImageReference;
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject, ListParams};

const VERSION: &str = "v0.2.0";
/// The patch release the bundle is upgraded to.
const NEXT_BUNDLE: &str = "v0.2.1";
/// The tag capz-compute alone is upgraded to.
const NEXT_COMPUTE: &str = "v0.1.1";
const CONVERGE: Duration = Duration::from_mins(3);
/// How long after `clusterctl upgrade apply` begins the webhooks may take to admit again.
const ADMISSION_BACK: Duration = Duration::from_secs(90);
/// How long restarted controllers may take to read back what they own.
const READ_BACK: Duration = Duration::from_mins(1);
const CLUSTER: &str = "released";

/// `images/release.py` as `just release VERSION REPOSITORY` runs it, on the images built.
fn release(repository: &Path, version: &str) -> TestResult<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../images/release.py");
    let kubectl = KubeBinaries::locate()?.binary("kubectl");
    run(
        "python3",
        &[
            &script.display().to_string(),
            "--version",
            version,
            "--kubectl",
            &kubectl.display().to_string(),
            "--images",
            &images_dir()?.display().to_string(),
            "--out",
            &repository.display().to_string(),
        ],
    )
}

fn release_dir(repository: &Path, version: &str) -> PathBuf {
    repository.join("infrastructure-azure").join(version)
}

#[tokio::test]
async fn a_release_installs_with_clusterctl_and_a_cluster_converges() -> TestResult {
    let repository = scratch("release")?;
    for (version, says) in [
        ("0.2.0", "semantic version with a leading v"),
        ("v0.9.0", "metadata.yaml"),
    ] {
        let refused = release(&repository, version).err().map(|err| err.to_string());
        assert!(
            refused.as_deref().is_some_and(|message| message.contains(says)),
            "release {version} is refused, saying {says:?}: {refused:?}"
        );
    }
    release(&repository, VERSION)?;
    the_release_holds_what_clusterctl_and_users_need(&release_dir(&repository, VERSION))?;

    let mut environment = Environment::start_from_release(
        Config {
            retry_after_seconds: 1,
            request_log_size: 100_000,
            ..Config::default()
        },
        &repository,
        VERSION,
    )
    .await?;
    let client = environment.client.clone();
    let inventory =
        capz_harness::resource(&client, "clusterctl.cluster.x-k8s.io", "v1alpha3", "Provider").await?;
    let provider = Api::<DynamicObject>::namespaced_with(client.clone(), NAMESPACE, &inventory)
        .get("infrastructure-azure")
        .await?;
    assert_eq!(
        provider.data["version"], VERSION,
        "clusterctl's inventory records the release installed"
    );
    let installed = deployments(&environment).await?;
    assert_eq!(installed.len(), 9, "eight controllers and the webhooks");
    for (_, image) in installed.values() {
        assert!(image.contains("@sha256:"), "the release pins {image} by digest");
    }

    let environment = &mut environment;
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        environment.create_identity_secret(&namespace).await?;
        let manifest = environment.generate(CLUSTER, &namespace, 1).await?;
        let applied_at = Instant::now();
        capz_harness::apply_yaml(&client, &namespace, &manifest).await?;
        environment.converged(&namespace, 1, CONVERGE, applied_at).await?;
        one_controller_is_upgraded_alone_through_its_overlay(environment, &repository).await?;
        clusterctl_upgrades_the_bundle_without_touching_azure(environment, &repository, &namespace).await
    })
    .await??;
    std::fs::remove_dir_all(&repository)?;
    Ok(())
}

/// Each Deployment of capz-rs: its resourceVersion and image.
async fn deployments(environment: &Environment) -> TestResult<BTreeMap<String, (String, String)>> {
    let list = Api::<Deployment>::namespaced(environment.client.clone(), NAMESPACE)
        .list(&ListParams::default())
        .await?;
    Ok(list
        .items
        .into_iter()
        .map(|deployment| {
            let image = deployment
                .spec
                .as_ref()
                .and_then(|spec| spec.template.spec.as_ref())
                .and_then(|pod| pod.containers.first())
                .and_then(|container| container.image.clone())
                .unwrap_or_default();
            let name = deployment.metadata.name.unwrap_or_default();
            (
                name,
                (deployment.metadata.resource_version.unwrap_or_default(), image),
            )
        })
        .collect())
}

/// A user's overlay of `deploy/compute` (from a copy of the tree, as a repository of theirs would
/// vendor it) naming a new tag, rendered by kustomize, its variables filled by `clusterctl generate
/// yaml` and applied with kubectl: only capz-compute's Deployment changes, only its container is
/// restarted, and once it has read back its virtual machines nothing was written to Azure.
async fn one_controller_is_upgraded_alone_through_its_overlay(
    environment: &mut Environment,
    repository: &Path,
) -> TestResult {
    let before = deployments(environment).await?;
    let (_, compute) = before.get("capz-compute").ok_or("no capz-compute Deployment")?;
    // The next version's image, as a user loads it; here the same build under a new tag.
    environment
        .plane
        .tag_image(&ImageReference::parse(compute)?, NEXT_COMPUTE)?;
    let tree = repository.join("user");
    std::fs::create_dir_all(tree.join("upgrade"))?;
    run(
        "cp",
        &[
            "-r",
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../deploy")
                .display()
                .to_string(),
            &tree.display().to_string(),
        ],
    )?;
    std::fs::write(
        tree.join("upgrade/kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../deploy/compute\n\
             images:\n- name: ghcr.io/capz-rs/capz-compute\n  newTag: {NEXT_COMPUTE}\n"
        ),
    )?;
    let kubectl = KubeBinaries::locate()?.binary("kubectl").display().to_string();
    let rendered = tree.join("rendered.yaml");
    std::fs::write(
        &rendered,
        run(
            &kubectl,
            &["kustomize", &tree.join("upgrade").display().to_string()],
        )?,
    )?;
    let filled = environment
        .clusterctl
        .run(&["generate", "yaml", "--from", &rendered.display().to_string()])
        .await?
        .stdout;
    let filled_file = tree.join("filled.yaml");
    std::fs::write(&filled_file, &filled)?;
    let since = SystemTime::now();
    let kubeconfig = environment.plane.kubeconfig().display().to_string();
    run(
        &kubectl,
        &[
            "--kubeconfig",
            &kubeconfig,
            "apply",
            "-f",
            &filled_file.display().to_string(),
        ],
    )?;
    let restarted = environment.plane.sync_capz(&mut environment.capz).await?;
    assert_eq!(restarted, ["capz-compute"], "only capz-compute is restarted");
    let after = deployments(environment).await?;
    for (name, (version, image)) in &before {
        let (version_after, image_after) = after.get(name).ok_or_else(|| format!("{name} is gone"))?;
        if name == "capz-compute" {
            assert_eq!(
                image_after,
                &format!("ghcr.io/capz-rs/capz-compute:{NEXT_COMPUTE}"),
                "capz-compute runs the overlay's tag"
            );
        } else {
            assert_eq!(
                (version, image),
                (version_after, image_after),
                "{name} is left as it was"
            );
        }
    }
    read_back(environment, since, &["microsoft.compute/virtualmachines"]).await?;
    no_azure_writes_since(environment, since, "upgrading capz-compute alone");
    Ok(())
}

/// `clusterctl upgrade apply` to the next release of the bundle replaces every component of
/// capz-rs: the webhooks admit again within [`ADMISSION_BACK`], no Machine is replaced, and once
/// the controllers have read back what they own nothing was written to Azure.
async fn clusterctl_upgrades_the_bundle_without_touching_azure(
    environment: &mut Environment,
    repository: &Path,
    namespace: &str,
) -> TestResult {
    release(repository, NEXT_BUNDLE)?;
    load_release_images(&environment.plane, repository, NEXT_BUNDLE)?;
    let machines = environment.cluster_api("Machine", namespace).await?;
    let identities = |list: Vec<DynamicObject>| -> BTreeSet<(String, String)> {
        list.into_iter()
            .map(|machine| (machine.name_any(), machine.uid().unwrap_or_default()))
            .collect()
    };
    let machines_before = identities(machines.list(&ListParams::default()).await?.items);
    let since = SystemTime::now();
    let started = Instant::now();
    let provider = format!("{NAMESPACE}/azure:{NEXT_BUNDLE}");
    environment
        .clusterctl
        .run(&["upgrade", "apply", "--infrastructure", &provider])
        .await?;
    let restarted = environment.plane.sync_capz(&mut environment.capz).await?;
    let back = started.elapsed();
    eprintln!(
        "e2e: clusterctl upgrade apply to {NEXT_BUNDLE}: {} restarted, admission back {:.1} s after the upgrade began",
        restarted.join(", "),
        back.as_secs_f64()
    );
    assert_eq!(restarted.len(), 9, "every component is replaced: {restarted:?}");
    assert!(back < ADMISSION_BACK, "admission is back after {back:?}");
    let inventory = capz_harness::resource(
        &environment.client,
        "clusterctl.cluster.x-k8s.io",
        "v1alpha3",
        "Provider",
    )
    .await?;
    let provider = Api::<DynamicObject>::namespaced_with(environment.client.clone(), NAMESPACE, &inventory)
        .get("infrastructure-azure")
        .await?;
    assert_eq!(provider.data["version"], NEXT_BUNDLE);
    read_back(
        environment,
        since,
        &[
            "microsoft.compute/virtualmachines",
            "microsoft.network/virtualnetworks",
            "microsoft.network/loadbalancers",
        ],
    )
    .await?;
    no_azure_writes_since(environment, since, "clusterctl upgrade apply");
    assert_eq!(
        identities(machines.list(&ListParams::default()).await?.items),
        machines_before,
        "no Machine is replaced"
    );
    Ok(())
}

/// Waits until every resource of the `types` capz-rs created has been read since `since`: the
/// controllers that own them have reconciled them.
async fn read_back(environment: &Environment, since: SystemTime, types: &[&str]) -> TestResult {
    let owned: Vec<String> = types
        .iter()
        .flat_map(|type_| environment.created_of_type(type_))
        .collect();
    assert!(!owned.is_empty(), "capz-rs created resources of {types:?}");
    let started = Instant::now();
    loop {
        let read: BTreeSet<String> = environment
            .requests_since(since)
            .into_iter()
            .filter(|request| request.method == "GET")
            .map(|request| request.path.to_ascii_lowercase())
            .collect();
        let unread: Vec<&String> = owned.iter().filter(|id| !read.contains(*id)).collect();
        if unread.is_empty() {
            return Ok(());
        }
        if started.elapsed() > READ_BACK {
            return Err(format!("not read back within {READ_BACK:?}: {unread:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn no_azure_writes_since(environment: &Environment, since: SystemTime, what: &str) {
    let writes: Vec<String> = environment
        .requests_since(since)
        .iter()
        // Signing in (a POST to the token endpoint) writes nothing.
        .filter(|request| is_write(request) && request.path.starts_with("/subscriptions/"))
        .map(|request| format!("{} {}", request.method, request.path))
        .collect();
    assert!(writes.is_empty(), "{what} wrote to Azure: {writes:?}");
}

/// The files of a release: checksums that verify, the components naming each image by the digest
/// `just images` built, the metadata with the release's series, the flavors and the archives.
fn the_release_holds_what_clusterctl_and_users_need(release: &Path) -> TestResult {
    let check = Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(release)
        .output()?;
    let checked = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "sha256sum --check: {checked}");
    for file in [
        "infrastructure-components.yaml",
        "metadata.yaml",
        "cluster-template.yaml",
        "cluster-template-machinepool.yaml",
        "cluster-template-machinepool-windows.yaml",
        "cluster-template-azure-bastion.yaml",
        "cluster-template-private.yaml",
        "cluster-template-apiserver-ilb.yaml",
        "cluster-template-aks.yaml",
        "cluster-template-aks-clusterclass.yaml",
        "cluster-template-aks-topology.yaml",
        "images/capz-compute.tar",
        "images/capz-vmss.tar",
        "images/capz-webhooks.tar",
        "images/arm-emulator.tar",
    ] {
        assert!(
            checked.contains(&format!("{file}: OK")),
            "{file} is summed: {checked}"
        );
    }
    let metadata = std::fs::read_to_string(release.join("metadata.yaml"))?;
    assert!(metadata.contains("major: 0\n  minor: 2\n"), "{metadata}");
    let components = std::fs::read_to_string(release.join("infrastructure-components.yaml"))?;
    let images: Vec<&str> = components
        .lines()
        .filter_map(|line| line.trim().strip_prefix("image: "))
        .collect();
    assert_eq!(images.len(), 9, "{images:?}");
    for image in images {
        let (named, digest) = image
            .split_once('@')
            .ok_or_else(|| format!("{image} has no digest"))?;
        let (repository, tag) = named
            .rsplit_once(':')
            .ok_or_else(|| format!("{image} has no tag"))?;
        let name = repository.rsplit('/').next().unwrap_or_default();
        let index = std::fs::read_to_string(images_dir()?.join(name).join("index.json"))?;
        assert!(
            index.contains(digest)
                && index.contains(&format!("\"org.opencontainers.image.ref.name\":\"{tag}\"")),
            "{image} is the image built: {index}"
        );
    }
    Ok(())
}
