//! Virtual machine extensions: software Azure's guest agent installs and runs on a machine, such
//! as a script, or the check that the node finished bootstrapping.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::API_VERSION;
use crate::id::{Location, ResourceId};
use crate::models::{ProvisioningState, Secret, Tags};

/// An extension of a machine (`Microsoft.Compute/virtualMachines/extensions`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineExtension {
    /// The extension's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The extension's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Compute/virtualMachines/extensions` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The machine's region, which Azure requires on every write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The extension's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// What runs, and with which settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<VirtualMachineExtensionProperties>,
}

/// What an extension installs and how it is configured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineExtensionProperties {
    /// Who publishes the extension, such as `Microsoft.Azure.Extensions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// The extension's type within its publisher, such as `CustomScript`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub extension_type: Option<String>,
    /// The extension's version (major.minor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_handler_version: Option<String>,
    /// Whether Azure may move the extension to a newer minor version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_upgrade_minor_version: Option<bool>,
    /// Settings the extension reads, readable by anyone who can read the machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<BTreeMap<String, String>>,
    /// Settings Azure keeps encrypted and hands only to the guest (never answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protected_settings: Option<Secret<BTreeMap<String, String>>>,
    /// Where the extension's installation stands (read-only): `Failed` when its command failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

arm_model!(
    VirtualMachineExtension,
    "Microsoft.Compute/virtualMachines/extensions",
    API_VERSION,
    tagged
);

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::{VirtualMachineExtension, VirtualMachineExtensionProperties};
    use crate::models::{ProvisioningState, Secret};

    #[test]
    fn an_answer_is_read_and_protected_settings_are_sent_but_never_shown() {
        let answer = json!({
            "name": "CustomScript",
            "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-0/extensions/CustomScript",
            "type": "Microsoft.Compute/virtualMachines/extensions",
            "location": "westus",
            "properties": {
                "autoUpgradeMinorVersion": false,
                "provisioningState": "Failed",
                "publisher": "Microsoft.Azure.Extensions",
                "type": "CustomScript",
                "typeHandlerVersion": "2.1",
                "settings": {"fileUris": "https://example.com/hello.sh"},
                "suppressFailures": false
            }
        });
        let extension: VirtualMachineExtension = serde_json::from_value(answer).unwrap();
        let properties = extension.properties.clone().unwrap();
        assert_eq!(properties.provisioning_state, Some(ProvisioningState::Failed));
        assert_eq!(properties.extension_type.as_deref(), Some("CustomScript"));
        assert!(properties.protected_settings.is_none());

        let desired = VirtualMachineExtension {
            location: Some("westus".parse().unwrap()),
            properties: Some(VirtualMachineExtensionProperties {
                publisher: Some("Microsoft.Azure.Extensions".into()),
                extension_type: Some("CustomScript".into()),
                type_handler_version: Some("2.1".into()),
                protected_settings: Some(Secret::new(BTreeMap::from([(
                    "commandToExecute".to_owned(),
                    "./hello.sh".to_owned(),
                )]))),
                ..VirtualMachineExtensionProperties::default()
            }),
            ..VirtualMachineExtension::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({"location": "westus", "properties": {
                "publisher": "Microsoft.Azure.Extensions",
                "type": "CustomScript",
                "typeHandlerVersion": "2.1",
                "protectedSettings": {"commandToExecute": "./hello.sh"}
            }})
        );
        let shown = format!("{desired:?}");
        assert!(!shown.contains("hello.sh"), "{shown}");
    }
}
