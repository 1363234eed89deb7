//! Virtual machine extensions: documents of their own under their machine, written as
//! long-running operations. Protected settings are kept but never answered.

use serde_json::{Value, json};

use super::{API_VERSIONS, COMPUTE, EXTENSION_NAMES, document};
use crate::error::ArmError;
use crate::resources::{Hooks, Locality, Lro, NO_HOOKS, Prepare, ResourceType, fields};

pub(crate) static EXTENSION: ResourceType = ResourceType {
    location: Locality::Inherited,
    naming: &EXTENSION_NAMES,
    hooks: Hooks {
        secrets: &["protectedSettings", "protectedSettingsFromKeyVault"],
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/virtualMachines/extensions",
        API_VERSIONS,
        &COMPUTE,
        Lro::Async,
        prepare_extension,
    )
};

fn prepare_extension(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    // An extension shows its machine's location, whatever the request said.
    let location = prepare.location.to_owned();
    prepare.doc.insert("location".into(), Value::String(location));
    prepare_properties(prepare)
}

/// What a machine's and a scale set's extensions share: the handler named, the defaults.
pub(super) fn prepare_properties(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?;
    for required in ["publisher", "type", "typeHandlerVersion"] {
        fields::required_string(properties, required, "properties")?;
    }
    prepare.default("autoUpgradeMinorVersion", json!(false))?;
    prepare.default("settings", json!({}))
}
