//! The image a machine, or a scale set's instance, boots: the one its spec names, or CAPZ's
//! reference image for the Kubernetes version and operating system (Ubuntu, or Windows Server
//! with containerd).
//!
//! CAPZ's reference images live in its community gallery, one version per Kubernetes release.
//! Releases it first published in the (now frozen) Azure Marketplace offer keep their Marketplace
//! image, so that upgrading the provider does not roll machines of those releases.

use capz_api::common::compute::{
    AzureComputeGalleryImage, AzureMarketplaceImage, Image, ImagePlan, VmProfile,
};
use capz_azure::ResourceId;
use capz_azure::models::compute::{ImageReference, Plan};

/// CAPZ's public community gallery of reference images.
pub const REFERENCE_GALLERY: &str = "ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019";
/// The image definition of CAPZ's Linux reference images in that gallery.
pub const REFERENCE_LINUX_IMAGE: &str = "capi-ubun2-2404";

/// The Windows Server release of the Windows reference images unless a machine asks for another.
pub const DEFAULT_WINDOWS_SERVER: &str = "windows-2019";

/// A Marketplace offer of reference images: (minor, patch, build date) of Kubernetes 1.x
/// releases. The offers are frozen, so the lists are complete.
struct Marketplace {
    offer: &'static str,
    sku: &'static str,
    releases: &'static [(u32, u32, &'static str)],
}

const LINUX_MARKETPLACE: Marketplace = Marketplace {
    offer: "capi",
    sku: "ubuntu-2204-gen1",
    releases: LINUX_RELEASES,
};

const WINDOWS_MARKETPLACE: Marketplace = Marketplace {
    offer: "capi-windows",
    sku: "windows-2019-containerd-gen1",
    releases: WINDOWS_RELEASES,
};

const WINDOWS_RELEASES: &[(u32, u32, &str)] = &[
    (27, 14, "20240515"),
    (28, 1, "20230830"),
    (28, 2, "20230918"),
    (28, 3, "20231023"),
    (28, 4, "20231122"),
    (28, 5, "20240102"),
    (28, 6, "20240201"),
    (28, 7, "20240223"),
    (28, 8, "20240327"),
    (28, 9, "20240418"),
    (28, 10, "20240515"),
    (28, 11, "20240612"),
    (28, 12, "20240717"),
    (29, 1, "20240201"),
    (29, 2, "20240223"),
    (29, 3, "20240327"),
    (29, 4, "20240418"),
    (29, 5, "20240515"),
    (29, 6, "20240612"),
    (29, 7, "20240717"),
    (30, 0, "20240418"),
    (30, 1, "20240515"),
    (30, 2, "20240612"),
    (30, 3, "20240717"),
];

const LINUX_RELEASES: &[(u32, u32, &str)] = &[
    (27, 14, "20240517"),
    (27, 15, "20240612"),
    (27, 16, "20240717"),
    (28, 1, "20230829"),
    (28, 2, "20230918"),
    (28, 3, "20231023"),
    (28, 4, "20231130"),
    (28, 5, "20240102"),
    (28, 6, "20240201"),
    (28, 7, "20240223"),
    (28, 8, "20240327"),
    (28, 9, "20240418"),
    (28, 10, "20240517"),
    (28, 11, "20240612"),
    (28, 12, "20240717"),
    (29, 1, "20240206"),
    (29, 2, "20240223"),
    (29, 3, "20240327"),
    (29, 4, "20240418"),
    (29, 5, "20240517"),
    (29, 6, "20240612"),
    (29, 7, "20240717"),
    (30, 0, "20240506"),
    (30, 1, "20240517"),
    (30, 2, "20240612"),
    (30, 3, "20240717"),
];

/// Why no image reference can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// No image is named and the Machine has no Kubernetes version to pick one by.
    #[error(
        "spec.image: Required value: the Machine has no spec.version to pick a reference image by; set spec.image or the Machine's version"
    )]
    NoVersion,
    /// The Machine's version is not a Kubernetes release.
    #[error("Machine spec.version: Invalid value: {0:?}: not a Kubernetes release such as v1.33.1")]
    BadVersion(String),
    /// An image id is not an ARM id.
    #[error("spec.image.id: Invalid value: {0:?}: not an Azure resource id")]
    BadId(String),
    /// A Windows machine asks for a container runtime the reference images do not have.
    #[error(
        "metadata.annotations[runtime]: Unsupported value: {0:?}: Windows reference images run containerd; remove the annotation or set it to containerd"
    )]
    WindowsRuntime(String),
    /// A Windows machine names a Windows Server release in a form that is not `windows-<year>`.
    #[error(
        "metadata.annotations[windowsServerVersion]: Invalid value: {0:?}: name a Windows Server release such as windows-2019 or windows-2022"
    )]
    WindowsServer(String),
}

/// The operating system a machine without an image gets a reference image of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReferenceOs<'a> {
    /// Ubuntu.
    #[default]
    Linux,
    /// Windows Server, as the AzureMachine's `runtime` and `windowsServerVersion` annotations ask.
    Windows {
        /// The container runtime; only containerd has reference images.
        runtime: Option<&'a str>,
        /// The Windows Server release, `windows-<year>`.
        server: Option<&'a str>,
    },
}

/// The annotation naming a Windows machine's container runtime (CAPZ's).
pub const RUNTIME_ANNOTATION: &str = "runtime";
/// The annotation naming a Windows machine's Windows Server release (CAPZ's).
pub const WINDOWS_SERVER_ANNOTATION: &str = "windowsServerVersion";

impl<'a> ReferenceOs<'a> {
    /// The operating system of a machine (an AzureMachine or AzureMachinePool) with the VM profile
    /// `vm` and the `annotations` of its object.
    #[must_use]
    pub fn of(vm: &VmProfile, annotations: &'a std::collections::BTreeMap<String, String>) -> Self {
        if windows(vm) {
            Self::Windows {
                runtime: annotations.get(RUNTIME_ANNOTATION).map(String::as_str),
                server: annotations.get(WINDOWS_SERVER_ANNOTATION).map(String::as_str),
            }
        } else {
            Self::Linux
        }
    }
}

/// Whether the machine of `vm` runs Windows.
pub(crate) fn windows(vm: &VmProfile) -> bool {
    vm.os_disk.os_type.eq_ignore_ascii_case("Windows")
}

/// A machine's image: the reference, and the purchase plan the image needs, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedImage {
    /// The image reference of the machine's storage profile.
    pub reference: ImageReference,
    /// The plan sent beside it.
    pub plan: Option<Plan>,
}

/// The image of a machine whose spec names `image`, running Kubernetes `version` on `os`.
///
/// # Errors
/// See [`ImageError`].
pub fn resolve(
    image: Option<&Image>,
    version: Option<&str>,
    os: ReferenceOs<'_>,
) -> Result<ResolvedImage, ImageError> {
    let Some(image) = image.filter(|image| **image != Image::default()) else {
        return reference_image(version.ok_or(ImageError::NoVersion)?, os);
    };
    if let Some(id) = image.id.as_deref() {
        let id: ResourceId = id.parse().map_err(|_| ImageError::BadId(id.to_owned()))?;
        return Ok(ResolvedImage {
            reference: ImageReference {
                id: Some(id),
                ..ImageReference::default()
            },
            plan: None,
        });
    }
    if let Some(shared) = image.shared_gallery.as_ref() {
        let id = gallery_version_id(
            &shared.subscription_id,
            &shared.resource_group,
            &shared.gallery,
            &shared.name,
            &shared.version,
        )?;
        let plan = match (&shared.publisher, &shared.offer, &shared.sku) {
            (Some(publisher), Some(offer), Some(sku)) => Some(plan(&ImagePlan {
                publisher: publisher.clone(),
                offer: offer.clone(),
                sku: sku.clone(),
            })),
            _ => None,
        };
        return Ok(ResolvedImage {
            reference: ImageReference {
                id: Some(id),
                ..ImageReference::default()
            },
            plan,
        });
    }
    if let Some(gallery) = image.compute_gallery.as_ref() {
        return compute_gallery(gallery);
    }
    match image.marketplace.as_ref() {
        Some(marketplace) => Ok(marketplace_image(marketplace)),
        None => reference_image(version.ok_or(ImageError::NoVersion)?, os),
    }
}

fn plan(plan: &ImagePlan) -> Plan {
    Plan {
        name: Some(plan.sku.clone()),
        publisher: Some(plan.publisher.clone()),
        product: Some(plan.offer.clone()),
    }
}

fn gallery_version_id(
    subscription: &str,
    group: &str,
    gallery: &str,
    name: &str,
    version: &str,
) -> Result<ResourceId, ImageError> {
    let text = format!(
        "/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Compute/galleries/{gallery}/images/{name}/versions/{version}"
    );
    text.parse().map_err(|_| ImageError::BadId(text))
}

/// A private gallery (subscription and group given) is named by ARM id, a community gallery by
/// its public name.
fn compute_gallery(gallery: &AzureComputeGalleryImage) -> Result<ResolvedImage, ImageError> {
    let private = gallery
        .subscription_id
        .as_deref()
        .filter(|id| !id.is_empty())
        .zip(
            gallery
                .resource_group
                .as_deref()
                .filter(|group| !group.is_empty()),
        );
    let reference = match private {
        Some((subscription, group)) => ImageReference {
            id: Some(gallery_version_id(
                subscription,
                group,
                &gallery.gallery,
                &gallery.name,
                &gallery.version,
            )?),
            ..ImageReference::default()
        },
        None => community(&gallery.gallery, &gallery.name, &gallery.version),
    };
    Ok(ResolvedImage {
        reference,
        plan: gallery.plan.as_ref().map(plan),
    })
}

fn community(gallery: &str, name: &str, version: &str) -> ImageReference {
    ImageReference {
        community_gallery_image_id: Some(format!(
            "/CommunityGalleries/{gallery}/Images/{name}/Versions/{version}"
        )),
        ..ImageReference::default()
    }
}

fn marketplace_image(marketplace: &AzureMarketplaceImage) -> ResolvedImage {
    ResolvedImage {
        reference: ImageReference {
            publisher: Some(marketplace.plan.publisher.clone()),
            offer: Some(marketplace.plan.offer.clone()),
            sku: Some(marketplace.plan.sku.clone()),
            version: Some(marketplace.version.clone()),
            ..ImageReference::default()
        },
        plan: (marketplace.third_party_image == Some(true)).then(|| plan(&marketplace.plan)),
    }
}

/// `(major, minor, patch)` of a Kubernetes version such as `v1.33.1` or `1.33.1+build`.
fn release(version: &str) -> Result<(u32, u32, u32), ImageError> {
    let bad = || ImageError::BadVersion(version.to_owned());
    let core = version
        .trim()
        .trim_start_matches('v')
        .split(['-', '+'])
        .next()
        .unwrap_or_default();
    let mut parts = core.split('.').map(str::parse::<u32>);
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor)), Some(Ok(patch)), None) => Ok((major, minor, patch)),
        _ => Err(bad()),
    }
}

/// The community gallery image definition of `os`'s reference images.
fn reference_definition(os: ReferenceOs<'_>) -> Result<String, ImageError> {
    let ReferenceOs::Windows { runtime, server } = os else {
        return Ok(REFERENCE_LINUX_IMAGE.to_owned());
    };
    if let Some(runtime) = runtime.filter(|runtime| !runtime.is_empty() && *runtime != "containerd") {
        return Err(ImageError::WindowsRuntime(runtime.to_owned()));
    }
    let server = server
        .filter(|server| !server.is_empty())
        .unwrap_or(DEFAULT_WINDOWS_SERVER);
    let year = server
        .strip_prefix("windows-")
        .filter(|year| year.len() == 4 && year.bytes().all(|byte| byte.is_ascii_digit()))
        .ok_or_else(|| ImageError::WindowsServer(server.to_owned()))?;
    Ok(format!("capi-win-{year}-containerd"))
}

/// CAPZ's reference image of `os` for Kubernetes `version`.
fn reference_image(version: &str, os: ReferenceOs<'_>) -> Result<ResolvedImage, ImageError> {
    let (major, minor, patch) = release(version)?;
    let definition = reference_definition(os)?;
    let offer = match os {
        ReferenceOs::Linux => &LINUX_MARKETPLACE,
        ReferenceOs::Windows { .. } => &WINDOWS_MARKETPLACE,
    };
    let marketplace = (major == 1)
        .then(|| offer.releases.iter().find(|(m, p, _)| *m == minor && *p == patch))
        .flatten();
    if let Some((minor, patch, date)) = marketplace {
        return Ok(marketplace_image(&AzureMarketplaceImage {
            plan: ImagePlan {
                publisher: "cncf-upstream".to_owned(),
                offer: offer.offer.to_owned(),
                sku: offer.sku.to_owned(),
            },
            version: format!("1{minor}.{patch}.{date}"),
            third_party_image: None,
        }));
    }
    Ok(ResolvedImage {
        reference: community(
            REFERENCE_GALLERY,
            &definition,
            &format!("{major}.{minor}.{patch}"),
        ),
        plan: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_releases_boot_the_community_gallery_image() {
        let image = resolve(None, Some("v1.33.1"), ReferenceOs::Linux).unwrap();
        assert_eq!(
            image.reference.community_gallery_image_id.as_deref(),
            Some(
                "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images/capi-ubun2-2404/Versions/1.33.1"
            )
        );
        assert_eq!(image.plan, None);
        // 1.30.4 was never in the Marketplace.
        let next = resolve(None, Some("1.30.4"), ReferenceOs::Linux).unwrap();
        assert!(next.reference.community_gallery_image_id.is_some());
    }

    #[test]
    fn marketplace_releases_keep_their_marketplace_image() {
        let image = resolve(Some(&Image::default()), Some("v1.30.3"), ReferenceOs::Linux).unwrap();
        assert_eq!(image.reference.publisher.as_deref(), Some("cncf-upstream"));
        assert_eq!(image.reference.offer.as_deref(), Some("capi"));
        assert_eq!(image.reference.sku.as_deref(), Some("ubuntu-2204-gen1"));
        assert_eq!(image.reference.version.as_deref(), Some("130.3.20240717"));
        let old = resolve(None, Some("v1.28.1"), ReferenceOs::Linux).unwrap();
        assert_eq!(old.reference.version.as_deref(), Some("128.1.20230829"));
    }

    #[test]
    fn a_named_image_wins_and_bad_input_is_named() {
        let gallery: Image = serde_json::from_value(serde_json::json!({
            "computeGallery": {"gallery": "g", "name": "n", "version": "1.0.0",
                "subscriptionID": "00000000-0000-0000-0000-000000000001", "resourceGroup": "rg",
                "plan": {"publisher": "kinvolk", "offer": "flatcar", "sku": "stable"}},
        }))
        .unwrap();
        let image = resolve(Some(&gallery), None, ReferenceOs::Linux).unwrap();
        assert_eq!(
            image.reference.id.unwrap().resource_type(),
            "Microsoft.Compute/galleries/images/versions"
        );
        assert_eq!(image.plan.unwrap().product.as_deref(), Some("flatcar"));
        let third_party: Image = serde_json::from_value(serde_json::json!({
            "marketplace": {"publisher": "p", "offer": "o", "sku": "s", "version": "1", "thirdPartyImage": true},
        }))
        .unwrap();
        assert_eq!(
            resolve(Some(&third_party), None, ReferenceOs::Linux)
                .unwrap()
                .plan
                .unwrap()
                .name
                .as_deref(),
            Some("s")
        );
        assert_eq!(
            resolve(None, None, ReferenceOs::Linux),
            Err(ImageError::NoVersion)
        );
        assert_eq!(
            resolve(None, Some("latest"), ReferenceOs::Linux),
            Err(ImageError::BadVersion("latest".into()))
        );
    }

    #[test]
    fn windows_machines_boot_the_windows_reference_image_of_their_server_release() {
        let windows = |runtime, server| ReferenceOs::Windows { runtime, server };
        let gallery = |os| {
            resolve(None, Some("v1.33.1"), os)
                .map(|image| image.reference.community_gallery_image_id.unwrap_or_default())
        };
        let prefix = "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images";
        assert_eq!(
            gallery(windows(None, None)).unwrap(),
            format!("{prefix}/capi-win-2019-containerd/Versions/1.33.1")
        );
        assert_eq!(
            gallery(windows(Some("containerd"), Some("windows-2022"))).unwrap(),
            format!("{prefix}/capi-win-2022-containerd/Versions/1.33.1")
        );
        assert_eq!(
            gallery(windows(Some("dockershim"), None)),
            Err(ImageError::WindowsRuntime("dockershim".into()))
        );
        assert_eq!(
            gallery(windows(None, Some("2022"))),
            Err(ImageError::WindowsServer("2022".into()))
        );
        let old = resolve(None, Some("v1.29.5"), windows(None, Some("windows-2022"))).unwrap();
        assert_eq!(old.reference.offer.as_deref(), Some("capi-windows"));
        assert_eq!(old.reference.sku.as_deref(), Some("windows-2019-containerd-gen1"));
        assert_eq!(old.reference.version.as_deref(), Some("129.5.20240515"));
    }
}
