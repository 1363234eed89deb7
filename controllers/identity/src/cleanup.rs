//! The finalizer of an AzureClusterIdentity: held while a cluster uses the identity (it signs in
//! to delete the cluster's resources), released once none does, so that a deletion goes on.

use capz_kit::api::azureclusteridentity::AzureClusterIdentity;
use capz_kit::error::Error;
use capz_kit::kube::ResourceExt as _;
use capz_kit::kube::api::{Api, Patch, PatchParams};

use crate::context::ID;
use crate::plan::InvalidSpec;

const FINALIZER: &str = ID.finalizer();

/// Adds the finalizer when `used` and it is missing, removes it when unused and present. The JSON
/// patches test the list first, so peers' finalizers are never touched.
pub(crate) async fn hold(
    api: &Api<AzureClusterIdentity>,
    identity: &AzureClusterIdentity,
    used: bool,
) -> Result<(), Error> {
    let finalizers = identity.finalizers();
    let position = finalizers.iter().position(|finalizer| finalizer == FINALIZER);
    let patch = match (used, position) {
        (true, None) if identity.metadata.finalizers.is_none() => serde_json::json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
        ]),
        (true, None) => serde_json::json!([
            {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
            {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
        ]),
        (false, Some(index)) => serde_json::json!([
            {"op": "test", "path": format!("/metadata/finalizers/{index}"), "value": FINALIZER},
            {"op": "remove", "path": format!("/metadata/finalizers/{index}")},
        ]),
        _ => return Ok(()),
    };
    let patch: json_patch::Patch = serde_json::from_value(patch)
        .map_err(|error| Error::failed(InvalidSpec(format!("finalizer patch: {error}"))))?;
    api.patch(
        &identity.name_any(),
        &PatchParams::default(),
        &Patch::<()>::Json(patch),
    )
    .await?;
    Ok(())
}
