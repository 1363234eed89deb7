//! Images virtual machines boot from: marketplace image versions
//! (`.../locations/{loc}/publishers/{p}/artifacttypes/vmimage/offers/{o}/skus/{s}/versions`) and
//! community gallery image versions (`.../locations/{loc}/communityGalleries/{g}/images/{i}/versions`),
//! seeded with CAPZ's reference images and the images of the recorded sessions. Every image is
//! offered in every configured location.

use std::cmp::Ordering;

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use super::{API_VERSIONS, GALLERY_API_VERSIONS, galleries, managed_images};
use crate::error::ArmError;
use crate::path::ResourceId;
use crate::resources::{Catalogue, Lookup, fields};
use crate::state::State;

pub(crate) static MARKETPLACE_VERSIONS: Catalogue = Catalogue {
    name: "Microsoft.Compute/locations/publishers/artifacttypes/offers/skus/versions",
    api_versions: API_VERSIONS,
    entry: Some(marketplace_version),
    collection: Some(marketplace_versions),
};

pub(crate) static COMMUNITY_VERSIONS: Catalogue = Catalogue {
    name: "Microsoft.Compute/locations/communityGalleries/images/versions",
    api_versions: GALLERY_API_VERSIONS,
    entry: Some(community_version),
    collection: Some(community_versions),
};

/// The operating system of an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Os {
    Linux,
    Windows,
}

impl Os {
    /// The OS an `osType` names; anything but Windows is Linux.
    pub(super) fn of(os_type: &Value) -> Self {
        if os_type
            .as_str()
            .is_some_and(|os| os.eq_ignore_ascii_case("Windows"))
        {
            Self::Windows
        } else {
            Self::Linux
        }
    }

    pub(super) const fn name(self) -> &'static str {
        match self {
            Self::Linux => "Linux",
            Self::Windows => "Windows",
        }
    }

    /// The size of the image's OS disk.
    pub(super) const fn disk_size_gb(self) -> i64 {
        match self {
            Self::Linux => 30,
            Self::Windows => 127,
        }
    }
}

/// One SKU of a marketplace offer and its versions.
struct MarketplaceSku {
    publisher: &'static str,
    offer: &'static str,
    sku: &'static str,
    os: Os,
    hyper_v: &'static str,
    versions: &'static [&'static str],
}

/// CAPZ's reference images for Kubernetes releases up to 1.30.3 (later releases come from the
/// community gallery), and the images the recorded sessions boot.
const MARKETPLACE: &[MarketplaceSku] = &[
    MarketplaceSku {
        publisher: "cncf-upstream",
        offer: "capi",
        sku: "ubuntu-2204-gen1",
        os: Os::Linux,
        hyper_v: "V1",
        versions: &[
            "128.10.20240517",
            "128.11.20240612",
            "128.12.20240717",
            "129.5.20240517",
            "129.6.20240612",
            "129.7.20240717",
            "130.0.20240506",
            "130.1.20240517",
            "130.2.20240612",
            "130.3.20240717",
        ],
    },
    MarketplaceSku {
        publisher: "cncf-upstream",
        offer: "capi-windows",
        sku: "windows-2019-containerd-gen1",
        os: Os::Windows,
        hyper_v: "V1",
        versions: &["129.7.20240717", "130.2.20240612", "130.3.20240717"],
    },
    MarketplaceSku {
        publisher: "Canonical",
        offer: "UbuntuServer",
        sku: "18.04-LTS",
        os: Os::Linux,
        hyper_v: "V1",
        versions: &["18.04.202401161"],
    },
    MarketplaceSku {
        publisher: "Canonical",
        offer: "0001-com-ubuntu-server-jammy",
        sku: "22_04-lts-gen2",
        os: Os::Linux,
        hyper_v: "V2",
        versions: &["22.04.202501080"],
    },
    MarketplaceSku {
        publisher: "Canonical",
        offer: "ubuntu-24_04-lts",
        sku: "server",
        os: Os::Linux,
        hyper_v: "V2",
        versions: &["24.04.202501140"],
    },
];

/// CAPZ's public community gallery.
const CAPZ_GALLERY: &str = "ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019";

/// An image definition of a community gallery; its versions are Kubernetes releases.
struct GalleryImage {
    gallery: &'static str,
    image: &'static str,
    os: Os,
    /// (minor, last patch) of the Kubernetes 1.x releases it has a version for: every patch
    /// from 0 up.
    releases: &'static [(u32, u32)],
}

const RELEASES: &[(u32, u32)] = &[(30, 14), (31, 13), (32, 9), (33, 5), (34, 1)];

const COMMUNITY: &[GalleryImage] = &[
    GalleryImage {
        gallery: CAPZ_GALLERY,
        image: "capi-ubun2-2404",
        os: Os::Linux,
        releases: RELEASES,
    },
    GalleryImage {
        gallery: CAPZ_GALLERY,
        image: "capi-win-2022-containerd",
        os: Os::Windows,
        releases: RELEASES,
    },
    GalleryImage {
        gallery: CAPZ_GALLERY,
        image: "capi-win-2019-containerd",
        os: Os::Windows,
        releases: RELEASES,
    },
];

impl GalleryImage {
    fn versions(&self) -> impl Iterator<Item = String> + '_ {
        self.releases
            .iter()
            .flat_map(|&(minor, last)| (0..=last).map(move |patch| format!("1.{minor}.{patch}")))
    }
}

/// Compares dotted version numbers by their numeric parts.
fn by_number(a: &str, b: &str) -> Ordering {
    let parts =
        |version: &str| -> Vec<u64> { version.split('.').map(|part| part.parse().unwrap_or(0)).collect() };
    parts(a).cmp(&parts(b))
}

/// A version of `versions`, `latest` naming the newest.
fn pick<'a>(versions: impl Iterator<Item = &'a str>, wanted: &str) -> Option<&'a str> {
    let mut versions = versions;
    if wanted.eq_ignore_ascii_case("latest") {
        versions.max_by(|a, b| by_number(a, b))
    } else {
        versions.find(|version| *version == wanted)
    }
}

fn known_location(lookup: &Lookup<'_>, location: &str) -> bool {
    lookup
        .config
        .locations
        .iter()
        .any(|known| known.name.eq_ignore_ascii_case(location))
}

fn image_not_found() -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "NotFound",
        "Artifact: VMImage was not found.",
    )
}

/// The marketplace SKU a path names: names are `[location, publisher, "vmimage", offer, sku, ...]`.
fn marketplace_sku(lookup: &Lookup<'_>) -> Result<(&'static MarketplaceSku, String), ArmError> {
    let names = &lookup.id.names;
    let (Some(location), Some(publisher), Some(kind), Some(offer), Some(sku)) = (
        names.first(),
        names.get(1),
        names.get(2),
        names.get(3),
        names.get(4),
    ) else {
        return Err(image_not_found());
    };
    let found = MARKETPLACE.iter().find(|candidate| {
        candidate.publisher.eq_ignore_ascii_case(publisher)
            && candidate.offer.eq_ignore_ascii_case(offer)
            && candidate.sku.eq_ignore_ascii_case(sku)
    });
    match found {
        Some(found) if kind.eq_ignore_ascii_case("vmimage") && known_location(lookup, location) => {
            Ok((found, location.to_ascii_lowercase()))
        }
        _ => Err(image_not_found()),
    }
}

fn marketplace_id(id: &ResourceId, image: &MarketplaceSku, location: &str, version: &str) -> String {
    format!(
        "/Subscriptions/{}/Providers/Microsoft.Compute/Locations/{location}/Publishers/{}/ArtifactTypes/VMImage/Offers/{}/Skus/{}/Versions/{version}",
        id.subscription.as_deref().unwrap_or_default(),
        image.publisher,
        image.offer,
        image.sku
    )
}

fn marketplace_version(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let (image, location) = marketplace_sku(lookup)?;
    let version = pick(image.versions.iter().copied(), lookup.id.name()).ok_or_else(image_not_found)?;
    let size_gb = image.os.disk_size_gb();
    Ok(json!({
        "id": marketplace_id(lookup.id, image, &location, version),
        "name": version,
        "location": location,
        "properties": {
            "hyperVGeneration": image.hyper_v,
            "architecture": "x64",
            // The image carries a 1 MiB footer beyond its nominal size.
            "osDiskImage": { "operatingSystem": image.os.name(), "sizeInGb": size_gb + 1, "sizeInBytes": (size_gb << 30) + (1 << 20) },
            "dataDiskImages": [],
            "automaticOSUpgradeProperties": { "automaticOSUpgradeSupported": false },
            "imageDeprecationStatus": { "imageState": "Active" },
            "disallowed": { "vmDiskType": "Unmanaged" },
        },
    }))
}

/// The version list answers a bare array, as Azure does.
fn marketplace_versions(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let (image, location) = marketplace_sku(lookup)?;
    let mut versions = image.versions.to_vec();
    versions.sort_by(|a, b| by_number(a, b));
    Ok(Value::Array(
        versions
            .into_iter()
            .map(|version| {
                json!({
                    "id": marketplace_id(lookup.id, image, &location, version),
                    "name": version,
                    "location": location,
                })
            })
            .collect(),
    ))
}

fn gallery_image_not_found(unique_id: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "GalleryImageNotFound",
        format!("The gallery image {unique_id} is not available."),
    )
}

/// The community gallery image a path names: names are `[location, gallery, image, ...]`.
fn gallery_image(lookup: &Lookup<'_>) -> Result<(&'static GalleryImage, String), ArmError> {
    let names = &lookup.id.names;
    let (Some(location), Some(gallery), Some(image)) = (names.first(), names.get(1), names.get(2)) else {
        return Err(gallery_image_not_found(&lookup.id.to_id()));
    };
    COMMUNITY
        .iter()
        .find(|candidate| {
            candidate.gallery.eq_ignore_ascii_case(gallery) && candidate.image.eq_ignore_ascii_case(image)
        })
        .filter(|_| known_location(lookup, location))
        .map(|found| (found, location.to_ascii_lowercase()))
        .ok_or_else(|| gallery_image_not_found(&format!("/CommunityGalleries/{gallery}/Images/{image}")))
}

fn community_entry(image: &GalleryImage, location: &str, version: &str) -> Value {
    json!({
        "name": version,
        "location": location,
        "identifier": {
            "uniqueId": format!("/CommunityGalleries/{}/Images/{}/Versions/{version}", image.gallery, image.image),
        },
        "properties": {
            "excludeFromLatest": false,
            "storageProfile": {
                "osDiskImage": { "diskSizeGB": image.os.disk_size_gb(), "hostCaching": "ReadWrite" },
            },
        },
    })
}

fn community_version(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let (image, location) = gallery_image(lookup)?;
    let versions: Vec<String> = image.versions().collect();
    let version = pick(versions.iter().map(String::as_str), lookup.id.name()).ok_or_else(|| {
        gallery_image_not_found(&format!(
            "/CommunityGalleries/{}/Images/{}/Versions/{}",
            image.gallery,
            image.image,
            lookup.id.name()
        ))
    })?;
    Ok(community_entry(image, &location, version))
}

fn community_versions(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let (image, location) = gallery_image(lookup)?;
    let value: Vec<Value> = image
        .versions()
        .map(|version| community_entry(image, &location, &version))
        .collect();
    Ok(json!({ "value": value }))
}

/// The image a virtual machine boots, resolved.
pub(super) struct Resolved {
    pub(super) os: Os,
    /// The size of its OS disk, when the image says (managed images, gallery versions).
    pub(super) size_gb: Option<i64>,
    /// The Hyper-V generation of the machines it boots (`V1`, `V2`).
    pub(super) hyper_v: &'static str,
    /// The version `latest` stood for (marketplace images).
    pub(super) exact_version: Option<String>,
    /// What the OS disk records as its source (`creationData` without `createOption`).
    pub(super) source: Value,
}

/// Resolves a virtual machine's `storageProfile.imageReference`: a marketplace image, a
/// community gallery image, a managed image, a gallery image (`id`) or a shared gallery image must
/// exist as Azure would refuse otherwise.
pub(super) fn resolve(
    reference: &Map<String, Value>,
    state: &State,
    subscription: &str,
    location: &str,
) -> Result<Resolved, ArmError> {
    let path = "properties.storageProfile.imageReference";
    if let Some(unique_id) = fields::string(reference, "communityGalleryImageId", path)? {
        return resolve_community(unique_id, location);
    }
    if let Some(id) = fields::string(reference, "id", path)? {
        return resolve_stored(state, id, location);
    }
    if let Some(unique_id) = fields::string(reference, "sharedGalleryImageId", path)? {
        let not_available = || {
            ArmError::new(
                StatusCode::NOT_FOUND,
                "GalleryImageNotFound",
                format!("The gallery image {unique_id} is not available in {location} region."),
            )
        };
        let id = galleries::shared_image(state, unique_id).ok_or_else(not_available)?;
        let mut resolved = galleries::boot(state, &id, location)?.ok_or_else(not_available)?;
        resolved.source = json!({ "galleryImageReference": { "sharedGalleryImageId": unique_id } });
        return Ok(resolved);
    }
    let publisher = fields::required_string(reference, "publisher", path)?;
    let offer = fields::required_string(reference, "offer", path)?;
    let sku = fields::required_string(reference, "sku", path)?;
    let version = fields::string(reference, "version", path)?.unwrap_or("latest");
    let image = MARKETPLACE.iter().find(|candidate| {
        candidate.publisher.eq_ignore_ascii_case(publisher)
            && candidate.offer.eq_ignore_ascii_case(offer)
            && candidate.sku.eq_ignore_ascii_case(sku)
    });
    let exact = image.and_then(|image| pick(image.versions.iter().copied(), version));
    let (Some(image), Some(exact)) = (image, exact) else {
        return Err(ArmError::new(
            StatusCode::NOT_FOUND,
            "PlatformImageNotFound",
            format!(
                "The platform image '{publisher}:{offer}:{sku}:{version}' is not available. Verify that all fields in the storage profile are correct. For more details about storage profile information, please refer to https://aka.ms/storageprofile"
            ),
        ));
    };
    let id = format!(
        "/Subscriptions/{subscription}/Providers/Microsoft.Compute/Locations/{location}/Publishers/{}/ArtifactTypes/VMImage/Offers/{}/Skus/{}/Versions/{exact}",
        image.publisher, image.offer, image.sku
    );
    Ok(Resolved {
        os: image.os,
        size_gb: None,
        hyper_v: image.hyper_v,
        exact_version: Some(exact.to_owned()),
        source: json!({ "imageReference": { "id": id } }),
    })
}

/// A managed image, or a gallery image version or definition (its latest version), of the
/// subscription.
fn resolve_stored(state: &State, id: &str, location: &str) -> Result<Resolved, ArmError> {
    if let Some(resolved) = galleries::boot(state, id, location)? {
        return Ok(resolved);
    }
    let image =
        super::source(state, id, &[managed_images::IMAGE.name]).map_err(|_| ArmError::not_found(id))?;
    Ok(managed_images::boot(&image, id))
}

/// `/CommunityGalleries/{gallery}/Images/{image}/Versions/{version}`.
fn resolve_community(unique_id: &str, location: &str) -> Result<Resolved, ArmError> {
    let not_available = || {
        ArmError::new(
            StatusCode::NOT_FOUND,
            "GalleryImageNotFound",
            format!(
                "The gallery image {unique_id} is not available in {location} region. Please contact image owner to replicate to this region, or change your requested region."
            ),
        )
    };
    let parts: Vec<&str> = unique_id.trim_matches('/').split('/').collect();
    let [galleries, gallery, images, image, versions, version] = parts.as_slice() else {
        return Err(not_available());
    };
    let layout = [
        (galleries, "CommunityGalleries"),
        (images, "Images"),
        (versions, "Versions"),
    ];
    if !layout
        .iter()
        .all(|(segment, expected)| segment.eq_ignore_ascii_case(expected))
    {
        return Err(not_available());
    }
    let found = COMMUNITY.iter().find(|candidate| {
        candidate.gallery.eq_ignore_ascii_case(gallery) && candidate.image.eq_ignore_ascii_case(image)
    });
    let found = found.filter(|found| {
        let versions: Vec<String> = found.versions().collect();
        pick(versions.iter().map(String::as_str), version).is_some()
    });
    let found = found.ok_or_else(not_available)?;
    Ok(Resolved {
        os: found.os,
        size_gb: None,
        hyper_v: "V1",
        exact_version: None,
        source: json!({ "galleryImageReference": { "communityGalleryImageId": unique_id } }),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Os, State, by_number, resolve};

    #[test]
    fn versions_compare_by_number() {
        assert!(by_number("130.10.1", "130.9.1").is_gt());
        assert!(by_number("1.34.0", "1.33.5").is_gt());
    }

    #[test]
    fn latest_resolves_to_the_newest_marketplace_version() {
        let reference = json!({"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "latest"});
        let resolved = resolve(reference.as_object().unwrap(), &State::default(), "s", "westus2").unwrap();
        assert_eq!(resolved.exact_version.as_deref(), Some("130.3.20240717"));
        assert_eq!((resolved.os, resolved.hyper_v), (Os::Linux, "V1"));
        let gen2 = json!({"publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server"});
        assert_eq!(
            resolve(gen2.as_object().unwrap(), &State::default(), "s", "westus2")
                .unwrap()
                .hyper_v,
            "V2"
        );
    }

    #[test]
    fn unknown_images_are_refused() {
        let marketplace = json!({"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "1.0.0"});
        let err = resolve(
            marketplace.as_object().unwrap(),
            &State::default(),
            "s",
            "westus2",
        )
        .err()
        .unwrap();
        assert_eq!(err.code, "PlatformImageNotFound");
        let gallery = json!({"communityGalleryImageId": "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images/capi-ubun2-2404/Versions/1.99.0"});
        let err = resolve(gallery.as_object().unwrap(), &State::default(), "s", "westus2")
            .err()
            .unwrap();
        assert_eq!(err.code, "GalleryImageNotFound");
        let windows = json!({"communityGalleryImageId": "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images/capi-win-2022-containerd/Versions/1.33.1"});
        assert_eq!(
            resolve(windows.as_object().unwrap(), &State::default(), "s", "westus2")
                .unwrap()
                .os,
            Os::Windows
        );
    }
}
